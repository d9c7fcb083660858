/// The root of one B+tree and its statistics, as stored in the catalog and the meta page.
public struct TreeInfo: Equatable, Sendable {
    /// Root page, or 0 for an empty tree.
    public var root: PageID
    /// Levels from root to leaves (0 for an empty tree, 1 for a single leaf).
    public var depth: Int
    /// Number of entries.
    public var count: UInt64

    public static let empty = TreeInfo(root: 0, depth: 0, count: 0)

    static let encodedSize = 16

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.encodedSize)
        bytes.appendU32(root)
        bytes.appendU32(UInt32(depth))
        bytes.appendU64(count)
        return bytes
    }

    static func decode(_ bytes: [UInt8], context: String) throws -> TreeInfo {
        guard bytes.count == encodedSize else {
            throw ArborError.corruptPage(page: 0, detail: "\(context): tree record of \(bytes.count) bytes, expected \(encodedSize)")
        }
        return bytes.withUnsafeBytes { raw in
            TreeInfo(root: raw.u32(0), depth: Int(raw.u32(4)), count: raw.u64(8))
        }
    }
}

/// A decoded meta page: the state of the file as of one committed transaction.
struct Meta: Equatable, Sendable {
    static let magic: [UInt8] = Array("ARBORDB\u{0}".utf8)
    static let formatVersion: UInt32 = 2

    enum Offset {
        static let magic = 24, version = 32, pageSize = 36, flags = 40, pageCount = 44
        static let catalog = 48, freelist = 64, freePages = 80, end = 88
    }

    enum Flag {
        /// Leaves are LZ4-compressed; the file is read-only.
        static let compressed: UInt32 = 1
    }

    var txid: UInt64
    var pageSize: Int
    var flags: UInt32
    /// Pages in use: every page number below this belongs to a tree, the freelist or the metas.
    var pageCount: UInt32
    var catalog: TreeInfo
    var freelist: TreeInfo
    /// Total pages listed in the freelist.
    var freePages: UInt64

    var isCompressed: Bool { flags & Flag.compressed != 0 }

    static func initial(pageSize: Int) -> Meta {
        Meta(txid: 0, pageSize: pageSize, flags: 0, pageCount: 2, catalog: .empty, freelist: .empty, freePages: 0)
    }

    /// The full page image of this meta stored as page `number` (0 or 1).
    func image(number: PageID) -> [UInt8] {
        var page = [UInt8](repeating: 0, count: pageSize)
        page.withUnsafeMutableBytes { buffer in
            buffer[PageHeader.type] = PageType.meta.rawValue
            buffer.putU32(number, at: PageHeader.pageNumber)
            buffer.putU64(txid, at: PageHeader.txid)
            for (index, byte) in Meta.magic.enumerated() { buffer[Offset.magic + index] = byte }
            buffer.putU32(Meta.formatVersion, at: Offset.version)
            buffer.putU32(UInt32(pageSize), at: Offset.pageSize)
            buffer.putU32(flags, at: Offset.flags)
            buffer.putU32(pageCount, at: Offset.pageCount)
            for (offset, info) in [(Offset.catalog, catalog), (Offset.freelist, freelist)] {
                buffer.putU32(info.root, at: offset)
                buffer.putU32(UInt32(info.depth), at: offset + 4)
                buffer.putU64(info.count, at: offset + 8)
            }
            buffer.putU64(freePages, at: Offset.freePages)
            sealPage(buffer)
        }
        return page
    }

    /// Decodes and validates meta page `number` from `image`.
    /// - Throws: `notAnArborFile` (wrong magic), `unsupportedFormatVersion`, or `corruptPage`.
    static func decode(_ image: UnsafeRawBufferPointer, number: PageID) throws -> Meta {
        guard image.count >= Limits.minPageSize else {
            throw ArborError.corruptPage(page: number, detail: "meta page is truncated (\(image.count) bytes)")
        }
        guard Array(image[Offset.magic..<(Offset.magic + 8)]) == magic else {
            throw ArborError.notAnArborFile(path: "")
        }
        let version = image.u32(Offset.version)
        guard version <= formatVersion else {
            throw ArborError.unsupportedFormatVersion(found: version, supported: formatVersion)
        }
        let pageSize = Int(image.u32(Offset.pageSize))
        guard Limits.isValidPageSize(pageSize), pageSize == image.count else {
            throw ArborError.corruptPage(page: number, detail: "meta page records invalid page size \(pageSize)")
        }
        try verifyPageChecksum(id: number, image: image, what: "meta checksum")
        guard image[PageHeader.type] == PageType.meta.rawValue, image.u32(PageHeader.pageNumber) == number, version >= 1 else {
            throw ArborError.corruptPage(page: number, detail: "meta page header is inconsistent")
        }
        func tree(_ offset: Int) -> TreeInfo {
            TreeInfo(root: image.u32(offset), depth: Int(image.u32(offset + 4)), count: image.u64(offset + 8))
        }
        let meta = Meta(
            txid: image.u64(PageHeader.txid), pageSize: pageSize, flags: image.u32(Offset.flags),
            pageCount: image.u32(Offset.pageCount), catalog: tree(Offset.catalog), freelist: tree(Offset.freelist),
            freePages: image.u64(Offset.freePages))
        guard meta.pageCount >= 2 else {
            throw ArborError.corruptPage(page: number, detail: "meta page records \(meta.pageCount) pages")
        }
        for (name, info) in [("catalog", meta.catalog), ("freelist", meta.freelist)] {
            let rootValid = info.root == 0 ? info.depth == 0 : (info.root >= 2 && info.root < meta.pageCount)
            guard rootValid, info.depth <= Limits.maxTreeDepth else {
                throw ArborError.corruptPage(page: number, detail: "meta page \(name) root \(info.root) depth \(info.depth) is invalid")
            }
        }
        return meta
    }

    /// Reads both meta pages and returns the valid one with the highest transaction id.
    /// A torn or corrupt meta page falls back to the other one.
    static func readCurrent(from file: StorageFile, path: String) throws -> Meta {
        let fileSize = try file.size()
        guard fileSize >= UInt64(Limits.minPageSize) else {
            // Too short for a meta page: truncated if it starts like one, otherwise foreign.
            var start = [UInt8](repeating: 0, count: Offset.magic + 8)
            let read = try start.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
            guard read == start.count, Array(start[Offset.magic...]) == magic else { throw ArborError.notAnArborFile(path: path) }
            throw ArborError.truncatedFile(expectedBytes: UInt64(2 * Limits.minPageSize), actualBytes: fileSize)
        }
        var candidates: [Meta] = []
        var problems: [ArborError] = []
        func attempt(number: PageID, pageSize: Int) {
            let offset = UInt64(number) * UInt64(pageSize)
            guard offset + UInt64(pageSize) <= fileSize else { return }
            var image = [UInt8](repeating: 0, count: pageSize)
            do {
                let read = try image.withUnsafeMutableBytes { try file.read(into: $0, at: offset) }
                guard read == pageSize else { return }
                candidates.append(try image.withUnsafeBytes { try decode($0, number: number) })
            } catch let error as ArborError {
                problems.append(error)
            } catch {
                problems.append(.io(operation: "read meta page", errno: 0))
            }
        }
        // Page 0's header tells the page size; if page 0 is damaged, probe every legal size for page 1.
        var header = [UInt8](repeating: 0, count: 64)
        _ = try header.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        let recordedSize = header.withUnsafeBytes { Int($0.u32(Offset.pageSize)) }
        if Limits.isValidPageSize(recordedSize) { attempt(number: 0, pageSize: recordedSize) }
        if let first = candidates.first {
            attempt(number: 1, pageSize: first.pageSize)
        } else {
            var size = Limits.minPageSize
            while size <= Limits.maxPageSize {
                attempt(number: 1, pageSize: size)
                if !candidates.isEmpty { break }
                size <<= 1
            }
        }
        guard let best = candidates.max(by: { $0.txid < $1.txid }) else {
            if let version = problems.first(where: { if case .unsupportedFormatVersion = $0 { return true } else { return false } }) {
                throw version
            }
            if problems.allSatisfy({ $0 == .notAnArborFile(path: "") }) { throw ArborError.notAnArborFile(path: path) }
            throw ArborError.noValidMetaPage(detail: problems.map(\.description).joined(separator: "; "))
        }
        let needed = UInt64(best.pageCount) * UInt64(best.pageSize)
        // The size was read before the meta pages: a writer may have grown the file and
        // committed in between, so a short file is measured again before it counts as truncated.
        if fileSize < needed {
            let current = try file.size()
            guard current >= needed else { throw ArborError.truncatedFile(expectedBytes: needed, actualBytes: current) }
        }
        return best
    }
}
