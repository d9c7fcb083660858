import Arbor
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a feed is imported.
public struct GTFSImportOptions: Sendable {
    /// Prepended to every `stop_id` of the feed, to keep the IDs of several feeds in one store apart.
    public var prefix = ""
    /// Skip rows that break the GTFS rules (counting them) instead of failing on the first.
    public var skipBadRows = false
    /// The feed is a new edition of one already in the store: stops are found by `stop_id`
    /// and updated, new ones inserted, the stop times of stops whose timetable changed
    /// replaced, and the feed's stops that are no longer in it deleted with their stop times.
    /// The feed's stops are those whose ID starts with `prefix` (every stop without one).
    /// Off: a stop already in the store is an error.
    public var update = false
    /// Stop times stored per transaction. They are stored stop by stop, so each batch appends
    /// to the indexes keyed by stop: batches may be small without making the import slower,
    /// and a batch's index changes are held in memory until it is written (about 60 bytes a
    /// stop time).
    public var batchSize = 250_000
    /// Bytes of modified pages a batch keeps in memory (`PersistentStore.Options.maxDirtyBytes`).
    public var maxDirtyBytes = 256 << 20
    /// Write the store compacted (no free pages, as shipped). On by default for a new store;
    /// an update rewrites only what changed unless asked.
    public var compacts: Bool?
    /// How long to wait for the output's writer lock while another writer (an app's save,
    /// another import) holds it; past it the import throws `StoreError.engine(.writerBusy)`
    /// and the output is untouched. nil waits as long as it takes.
    public var writerTimeout: Duration?
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
    /// Stops and stop times in the feed as imported.
    public var stops = 0
    public var stopTimes = 0
    /// Stops added to the store, changed (values or timetable), left as they were, and removed
    /// with their stop times (an update's; a first import inserts every stop).
    public var insertedStops = 0
    public var updatedStops = 0
    public var unchangedStops = 0
    public var deletedStops = 0
    /// Stop times written to the store (all of a first import's; an update's for the stops
    /// whose timetable changed) and removed from it.
    public var stopTimesWritten = 0
    public var stopTimesDeleted = 0
    /// The number of rows skipped with `skipBadRows`, and the first few of them.
    public var skippedRows = 0
    public var firstSkipped: [GTFSError] = []
    public init() {}
}

/// Builds a transit store (`TransitModel`) from a GTFS feed's `stops.txt` and `stop_times.txt`,
/// through Arbor's public API: batch inserts, upserts and batch deletes.
///
/// The feed is read whole (16 bytes a stop time), then stored stop by stop. The output is
/// written beside its final place and renamed over it only when the import succeeded, so it is
/// either complete or untouched — never half-written; readers of the old file go on reading it.
/// The output's writer lock is held throughout: another process's saves to it wait for the end
/// of the import, and one that has the old file open must open the store again to save
/// (`ArborError.fileReplaced`); two imports into one store run one after the other.
/// Importing into an existing store adds the feed to it (with `prefix` keeping its stop IDs
/// apart), or with `update` brings the feed's stops there up to this edition.
public enum GTFSImporter {
    /// Imports the feed in `directory` into the store at `output`.
    /// - Complexity: O(n) in the feed's rows, plus what changes in the store.
    /// - Throws: `GTFSError` (file and line) for a row that breaks the rules, `StoreError` when the
    ///   output cannot be written or is not a transit store.
    public static func importFeed(from directory: URL, into output: URL, options: GTFSImportOptions = GTFSImportOptions(),
                                  progress: (GTFSImportProgress) -> Void = { _ in }) throws -> GTFSImportResult {
        let stopsURL = directory.appendingPathComponent("stops.txt"), timesURL = directory.appendingPathComponent("stop_times.txt")
        for url in [stopsURL, timesURL] where !FileManager.default.fileExists(atPath: url.path) {
            throw GTFSError(file: url.lastPathComponent, line: 0, .missingFile)
        }
        // The output's writer lock is held from the copy to the rename: a save another process
        // makes meanwhile waits (none is lost with the old file), and a second import runs after.
        return try PersistentStore.withWriterLock(at: output, timeout: options.writerTimeout) {
            let temporary = output.deletingLastPathComponent()
                .appendingPathComponent(".\(output.lastPathComponent).importing-\(UUID().uuidString.prefix(8))")
            defer {
                try? FileManager.default.removeItem(at: temporary)
                try? FileManager.default.removeItem(atPath: temporary.path + "-lock")
            }
            let existed = FileManager.default.fileExists(atPath: output.path)
            if existed { try FileManager.default.copyItem(at: output, to: temporary) }
            let compacts = options.compacts ?? !(options.update && existed)
            var storeOptions = PersistentStore.Options()
            // A working file that is compacted needs no durability of its own: only its compacted
            // copy, synced before it is renamed into place, is ever published. One renamed as it
            // is must be durable first.
            storeOptions.durability = compacts ? .deferredMetaSync : .full
            storeOptions.maxDirtyBytes = options.maxDirtyBytes
            let result: GTFSImportResult
            do {
                let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: temporary, options: storeOptions)
                let context = container.newBackgroundContext()
                result = try context.performAndWait {
                    let writer = TransitWriter(context: context, options: options)
                    return try writer.run(stopsURL: stopsURL, timesURL: timesURL, progress: progress)
                }
                if compacts {
                    for store in container.persistentStoreCoordinator.persistentStores { try store.compact(to: output) }
                    return result
                }
            }
            // The container is released: the working file is complete and synced.
            guard rename(temporary.path, output.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            return result
        }
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
    /// whose handler then receives every other record (in place: valid only during the call).
    static func readTable(_ url: URL, progress: (GTFSImportProgress) -> Void,
                          _ makeRowHandler: (GTFSTable) throws -> (CSVParser.RawRecord) throws -> Void) throws {
        let file = url.lastPathComponent
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw GTFSError(file: file, line: 0, .unreadable("cannot open")) }
        defer { try? handle.close() }
        let total = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
        var parser = CSVParser(file: file)
        var handler: ((CSVParser.RawRecord) throws -> Void)?
        var rows = 0, bytesRead = 0
        var lastReport = ContinuousClock.now
        func emit(_ record: CSVParser.RawRecord) throws {
            if let handler {
                try handler(record)
                rows += 1
            } else {
                handler = try makeRowHandler(try GTFSTable(file: file, header: record.record))
            }
        }
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 4 << 20) } catch { throw GTFSError(file: file, line: 0, .unreadable("\(error)")) }
            guard let chunk, !chunk.isEmpty else { break }
            bytesRead += chunk.count
            try chunk.withUnsafeBytes { try parser.feed(raw: $0, emit: emit) }
            if ContinuousClock.now - lastReport > .milliseconds(200) {
                lastReport = ContinuousClock.now
                progress(GTFSImportProgress(file: file, rows: rows, bytesRead: bytesRead, totalBytes: max(total, bytesRead)))
            }
        }
        try parser.finish(raw: emit)
        guard handler != nil else { throw GTFSError(file: file, line: 1, .missingColumn("stop_id")) }
        progress(GTFSImportProgress(file: file, rows: rows, bytesRead: bytesRead, totalBytes: max(total, bytesRead)))
    }
}
