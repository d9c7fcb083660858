import Arbor
import Foundation

/// How a feed is imported.
public struct GTFSImportOptions: Sendable {
    /// Prepended to every `stop_id` of the feed, to keep the IDs of several feeds in one store apart.
    public var prefix = ""
    /// Skip rows that break the GTFS rules (counting them) instead of failing on the first.
    public var skipBadRows = false
    /// Stop times inserted per transaction. Each commit rewrites every leaf its batch touched,
    /// and a batch of stop times touches most leaves of the by-stop indexes (a feed lists stop
    /// times by trip, not by stop): fewer, larger batches write those indexes fewer times.
    public var batchSize = 500_000
    /// Bytes of modified pages a batch keeps in memory (`PersistentStore.Options.maxDirtyBytes`):
    /// below the by-stop indexes' size, leaves written early are written again within the batch.
    /// The full 3,000,000-row feed: 46 s and 1.0 GiB resident with these defaults; 147 s with
    /// batches of 50,000 and 64 MiB (`arbor import gtfs --batch-size 50000 --memory-mib 64`).
    public var maxDirtyBytes = 256 << 20
    public init() {}
}

/// Where an import is, for a progress display.
public struct GTFSImportProgress: Sendable {
    public var file: String
    public var rows: Int
    public var bytesRead: Int
    public var totalBytes: Int
}

/// What an import did.
public struct GTFSImportResult: Sendable {
    public var stops = 0
    public var stopTimes = 0
    /// The number of rows skipped with `skipBadRows`, and the first few of them.
    public var skippedRows = 0
    public var firstSkipped: [GTFSError] = []
    public init() {}
}

/// Builds a transit store (`TransitModel`) from a GTFS feed's `stops.txt` and `stop_times.txt`,
/// through Arbor's public API: batch inserts, the stop times a batch at a time.
///
/// The output is written beside its final place and renamed over it only when the import
/// succeeded, so it is either complete or untouched — never half-written. Importing into an
/// existing store adds the feed to it (with `prefix` keeping its stop IDs apart).
public enum GTFSImporter {
    /// Imports the feed in `directory` into the store at `output`.
    /// - Throws: `GTFSError` (file and line) for a row that breaks the rules, `StoreError` when the
    ///   output cannot be written or is not a transit store.
    public static func importFeed(from directory: URL, into output: URL, options: GTFSImportOptions = GTFSImportOptions(),
                                  progress: (GTFSImportProgress) -> Void = { _ in }) throws -> GTFSImportResult {
        let stopsURL = directory.appendingPathComponent("stops.txt"), timesURL = directory.appendingPathComponent("stop_times.txt")
        for url in [stopsURL, timesURL] where !FileManager.default.fileExists(atPath: url.path) {
            throw GTFSError(file: url.lastPathComponent, line: 0, .missingFile)
        }
        let temporary = output.deletingLastPathComponent()
            .appendingPathComponent(".\(output.lastPathComponent).importing-\(UUID().uuidString.prefix(8))")
        defer {
            try? FileManager.default.removeItem(at: temporary)
            try? FileManager.default.removeItem(atPath: temporary.path + "-lock")
        }
        if FileManager.default.fileExists(atPath: output.path) {
            try FileManager.default.copyItem(at: output, to: temporary)
        }
        // The compacted copy is written beside `output` and renamed over it once synced.
        let result = try run(stopsURL: stopsURL, timesURL: timesURL, store: temporary, compactInto: output, options: options,
                             progress: progress)
        return result
    }

    /// Imports into `store`, then writes its compacted copy to `compactInto` (atomically, by
    /// rename): copy-on-write batches leave free pages behind, and a shipped store should have none.
    private static func run(stopsURL: URL, timesURL: URL, store: URL, compactInto: URL, options: GTFSImportOptions,
                            progress: (GTFSImportProgress) -> Void) throws -> GTFSImportResult {
        // The working file needs no durability of its own: only its compacted copy, synced before
        // it is renamed into place, is ever published.
        var storeOptions = PersistentStore.Options()
        storeOptions.durability = .deferredMetaSync
        storeOptions.maxDirtyBytes = options.maxDirtyBytes
        let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: store, options: storeOptions)
        let context = container.newBackgroundContext()
        let result = try context.performAndWait {
            var result = GTFSImportResult()
            func skipOrThrow(_ error: GTFSError) throws {
                guard options.skipBadRows else { throw error }
                result.skippedRows += 1
                if result.firstSkipped.count < 20 { result.firstSkipped.append(error) }
            }

            // Stops already in the store (an earlier feed): their IDs are taken.
            var existing = Set<String>()
            var usedIdentifiers = Set<Int64>()
            var request = FetchRequest(entityName: "Stop")
            request.propertiesToFetch = [.key("stopID"), .key("identifier")]
            for row in try context.fetchDictionaries(request) {
                if let id = row["stopID"] as? String { existing.insert(id) }
                if let identifier = row["identifier"] as? Int64 { usedIdentifiers.insert(identifier) }
            }

            // stops.txt: read whole (stops are few), then numbered and saved.
            var stops: [GTFSStop] = []
            var seen = Set<String>()
            try readTable(stopsURL, progress: progress) { table in
                let reader = try GTFSRows.Stops(table: table)
                return { record in
                    do {
                        var stop = try reader.parse(record)
                        stop.stopID = options.prefix + stop.stopID
                        guard seen.insert(stop.stopID).inserted else { throw GTFSError(file: table.file, line: record.line, .duplicateStop(stop.stopID)) }
                        guard !existing.contains(stop.stopID) else {
                            throw GTFSError(file: table.file, line: record.line, .stopAlreadyInStore(stop.stopID))
                        }
                        stops.append(stop)
                    } catch let error as GTFSError { try skipOrThrow(error) }
                }
            }
            let identifiers = assignIdentifiers(stops.map(\.stopID), used: usedIdentifiers)
            var next = 0
            var insertStops = BatchInsertRequest(entityName: "Stop") { object in
                guard next < stops.count else { return true }
                let stop = stops[next]
                object.setValue(.int(identifiers[next]), forKey: "identifier")
                object.setValue(.string(stop.stopID), forKey: "stopID")
                object.setValue(.string(stop.name), forKey: "name")
                object.setValue(.string(TransitModel.normalize(stop.name)), forKey: "normalizedName")
                object.setValue(stop.latitude.map(AttributeValue.double) ?? .null, forKey: "latitude")
                object.setValue(stop.longitude.map(AttributeValue.double) ?? .null, forKey: "longitude")
                object.setValue(.int(Int64(stop.locationType)), forKey: "locationType")
                next += 1
                return false
            }
            insertStops.resultType = .objectIDs
            let ids = try context.execute(insertStops).objectIDs ?? []
            let stopIDs = Dictionary(zip(stops.map(\.stopID), ids), uniquingKeysWith: { first, _ in first })
            result.stops = ids.count

            // stop_times.txt: streamed, inserted every batchSize rows (a batch insert each).
            var pending: [(row: GTFSStopTime, stop: ObjectID)] = []
            func flush() throws {
                var index = 0
                let insert = BatchInsertRequest(entityName: "StopTime") { object in
                    guard index < pending.count else { return true }
                    let (row, stop) = pending[index]
                    object.setValue(row.arrival.map { .date(Date(timeIntervalSince1970: Double($0))) } ?? .null, forKey: "arrivalTime")
                    object.setValue(row.departure.map { .date(Date(timeIntervalSince1970: Double($0))) } ?? .null, forKey: "departureTime")
                    object.setValue(.int(Int64(row.pickupType)), forKey: "pickupType")
                    object.setValue(.int(Int64(row.dropOffType)), forKey: "dropOffType")
                    object.setObjectID(stop, forKey: "stop")
                    index += 1
                    return false
                }
                result.stopTimes += try context.execute(insert).count
                pending.removeAll(keepingCapacity: true)
            }
            try readTable(timesURL, progress: progress) { table in
                let reader = try GTFSRows.StopTimes(table: table)
                return { record in
                    do {
                        let row = try reader.parse(record)
                        guard let stopID = stopIDs[options.prefix + row.stopID] else {
                            throw GTFSError(file: table.file, line: record.line, .unknownStop(row.stopID))
                        }
                        pending.append((row, stopID))
                        if pending.count >= options.batchSize { try flush() }
                    } catch let error as GTFSError { try skipOrThrow(error) }
                }
            }
            try flush()
            return result
        }
        for persistentStore in container.persistentStoreCoordinator.persistentStores { try persistentStore.compact(to: compactInto) }
        return result
    }

    /// Numeric `stop_id`s keep their number; the others (and numbers already taken) get the
    /// next free numbers above every number in use, in file order — the same feed always gets
    /// the same identifiers.
    static func assignIdentifiers(_ stopIDs: [String], used: Set<Int64>) -> [Int64] {
        var taken = used
        var numeric: [Int64?] = stopIDs.map { id in
            id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) ? Int64(id) : nil
        }
        for (index, value) in numeric.enumerated() {
            guard let value else { continue }
            if !taken.insert(value).inserted { numeric[index] = nil }
        }
        var next = (taken.max() ?? 0) + 1
        return numeric.map { value in
            if let value { return value }
            defer { next += 1 }
            return next
        }
    }

    /// Reads a GTFS file in chunks: the first record is the header, handed to `makeRowHandler`,
    /// whose handler then receives every other record.
    static func readTable(_ url: URL, progress: (GTFSImportProgress) -> Void,
                          _ makeRowHandler: (GTFSTable) throws -> (CSVParser.Record) throws -> Void) throws {
        let file = url.lastPathComponent
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw GTFSError(file: file, line: 0, .unreadable("cannot open")) }
        defer { try? handle.close() }
        let total = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
        var parser = CSVParser(file: file)
        var handler: ((CSVParser.Record) throws -> Void)?
        var rows = 0, bytesRead = 0
        var lastReport = ContinuousClock.now
        func emit(_ record: CSVParser.Record) throws {
            if let handler {
                try handler(record)
                rows += 1
            } else {
                handler = try makeRowHandler(try GTFSTable(file: file, header: record))
            }
        }
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch { throw GTFSError(file: file, line: 0, .unreadable("\(error)")) }
            guard let chunk, !chunk.isEmpty else { break }
            bytesRead += chunk.count
            try parser.feed(chunk, emit: emit)
            if ContinuousClock.now - lastReport > .milliseconds(200) {
                lastReport = ContinuousClock.now
                progress(GTFSImportProgress(file: file, rows: rows, bytesRead: bytesRead, totalBytes: max(total, bytesRead)))
            }
        }
        try parser.finish(emit: emit)
        guard handler != nil else { throw GTFSError(file: file, line: 1, .missingColumn("stop_id")) }
        progress(GTFSImportProgress(file: file, rows: rows, bytesRead: bytesRead, totalBytes: max(total, bytesRead)))
    }
}
