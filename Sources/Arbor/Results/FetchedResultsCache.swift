import ArborEngine
import Foundation

/// The section cache of fetched results controllers: one file per cache name, holding the
/// request's fingerprint, each store's identity and data version (the engine's transaction ID),
/// the computed results and a checksum. A cache is used only when all of them match — the request is the
/// same and no store was written since — and is replaced otherwise.
enum FetchedResultsCache {
    static let directory = Locked(FileManager.default.temporaryDirectory.appendingPathComponent("ArborFetchedResultsCache"))
    static let magic = Array("ARBORFRC1".utf8)

    static func file(_ name: String) -> URL {
        // Cache names are the app's: keep them to safe file-name characters.
        let safe = String(name.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" ? Character($0) : "_" })
        return directory.withLock { $0 }.appendingPathComponent(safe + ".frccache")
    }

    static func delete(name: String?) {
        let folder = directory.withLock { $0 }
        if let name {
            try? FileManager.default.removeItem(at: file(name))
        } else if let files = try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil) {
            for file in files where file.pathExtension == "frccache" { try? FileManager.default.removeItem(at: file) }
        }
    }

    /// What a cache must match: the request and the stores' data versions.
    struct Header: Codable, Equatable {
        var request: String
        var stores: [String]
        var sectionNames: [String]
        var sectionStarts: [Int]
        var unsaved: Int
        var count: Int
    }
}

extension FetchedResultsControllerBase {
    /// The request as text: everything that decides the results.
    var requestFingerprint: String {
        let request = fetchRequest
        let sorts = request.sortDescriptors.map { "\($0.keyPath):\($0.ascending):\($0.options.rawValue)" }.joined(separator: ",")
        return [request.entityName, request.predicate?.description ?? "", sorts, sectionNameKeyPath ?? "",
                "\(request.includesSubentities)", "\(request.fetchLimit)", "\(request.fetchOffset)",
                request.affectedStores?.map(\.identifier.uuidString).joined(separator: ",") ?? ""].joined(separator: "|")
    }

    /// Each store's UUID and data version; nil when the context has unsaved changes (the
    /// results then depend on more than the stores).
    func storeVersions() throws -> [String]? {
        let context = managedObjectContext
        guard !context.hasVisiblePendingChanges,
              let coordinator = context.persistentStoreCoordinator else { return nil }
        return try coordinator.persistentStores.map { store in
            let version = try store.storage.dataVersion()
            return "\(store.identifier.uuidString):\(version)"
        }
    }

    func loadCache() throws -> ComputedResults? {
        guard let cacheName, let versions = try storeVersions(),
              let coordinator = managedObjectContext.persistentStoreCoordinator, let model = managedObjectContext.model,
              let data = try? Data(contentsOf: FetchedResultsCache.file(cacheName)) else { return nil }
        // The last 8 bytes are a checksum of the rest: a damaged file is never trusted.
        let all = [UInt8](data)
        guard all.count >= 8 else { return nil }
        let bytes = Array(all[0..<(all.count - 8)])
        var trailer = CacheReader(bytes: Array(all[(all.count - 8)...]))
        guard trailer.u64() == XXH3.hash(bytes) else { return nil }
        var reader = CacheReader(bytes: bytes)
        guard reader.take(FetchedResultsCache.magic.count) == FetchedResultsCache.magic,
              let headerLength = reader.u32(), let headerBytes = reader.take(Int(headerLength)),
              let header = try? JSONDecoder().decode(FetchedResultsCache.Header.self, from: Data(headerBytes)),
              header.request == requestFingerprint, header.stores == versions, header.unsaved == 0,
              header.sectionNames.count == header.sectionStarts.count else { return nil }
        var entries = ContiguousArray<CompactObjectID>()
        entries.reserveCapacity(header.count)
        let storeCount = coordinator.persistentStores.count
        for _ in 0..<header.count {
            guard let key = reader.u64(), let code = reader.u16(), let store = reader.u32(), Int(store) < storeCount,
                  model.infosByCode[code] != nil else { return nil }
            entries.append(CompactObjectID(key: Int64(bitPattern: key), code: code, store: Int32(store)))
        }
        guard reader.isAtEnd, header.sectionStarts.allSatisfy({ $0 >= 0 && $0 <= header.count }) else { return nil }
        return ComputedResults(entries: entries, unsaved: [], stores: coordinator.persistentStores, sectionNames: header.sectionNames,
                               sectionStarts: header.sectionStarts, model: model)
    }

    func saveCache(_ computed: ComputedResults) throws {
        guard let cacheName, computed.unsaved.isEmpty, let versions = try storeVersions() else { return }
        let header = FetchedResultsCache.Header(request: requestFingerprint, stores: versions, sectionNames: computed.sectionNames,
                                                sectionStarts: computed.sectionStarts, unsaved: 0, count: computed.entries.count)
        guard let headerBytes = try? JSONEncoder().encode(header) else { return }
        var bytes = FetchedResultsCache.magic
        bytes.reserveCapacity(bytes.count + 4 + headerBytes.count + computed.entries.count * 14)
        withUnsafeBytes(of: UInt32(headerBytes.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: headerBytes)
        for entry in computed.entries {
            withUnsafeBytes(of: UInt64(bitPattern: entry.key).littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: entry.code.littleEndian) { bytes.append(contentsOf: $0) }
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: entry.store).littleEndian) { bytes.append(contentsOf: $0) }
        }
        withUnsafeBytes(of: XXH3.hash(bytes).littleEndian) { bytes.append(contentsOf: $0) }
        let file = FetchedResultsCache.file(cacheName)
        // A cache is an optimization: failing to write one is not an error of the fetch.
        try? FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? Data(bytes).write(to: file, options: .atomic)
    }
}

/// Bounds-checked reading of a cache file (a damaged file is ignored, never trusted).
private struct CacheReader {
    let bytes: [UInt8]
    var position = 0

    var isAtEnd: Bool { position == bytes.count }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= bytes.count - position else { return nil }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard let raw = take(MemoryLayout<T>.size) else { return nil }
        return raw.reversed().reduce(T(0)) { ($0 << 8) | T($1) }
    }

    mutating func u16() -> UInt16? { integer(UInt16.self) }
    mutating func u32() -> UInt32? { integer(UInt32.self) }
    mutating func u64() -> UInt64? { integer(UInt64.self) }
}
