import Arbor
import ArborTransit
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench bulk`: the write side of an importer — find-or-create in batches, batch
/// update, batch delete, upsert, and importing a feed first and again — Arbor against SQLite
/// (GRDB) with the same indexes, in one run.
struct BulkBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bulk",
        abstract: "Imports, re-imports, find-or-create, batch update, batch delete and upserts against SQLite.",
        discussion: "Make the data with: python3 ../../shared/datasets/gen_transit.py --out /tmp/transit")

    @Option(help: "The GTFS directory (stops.txt, stop_times.txt).") var data = "/tmp/transit"
    @Option(name: .customLong("max-stop-times"), help: "Read at most this many stop times.") var maxStopTimes = Int.max
    @Option(help: "Stops of the find-or-create and upsert rows (half already stored).") var stops = 100_000
    @Option(help: "Objects per find-or-create batch.") var batch = 1_000
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-bulk"
    @Option(help: "Repeat everything and report per-row medians.") var runs = 1
    @Option(help: "Write the results as JSON to this path.") var json: String?
    @Option(help: "Only these rows, comma-separated: import, reimport, update, delete, find (find-objects, find-requests: one side of it), upsert (for profiling).") var only: String?

    func wants(_ row: String) -> Bool { only.map { $0.split(separator: ",").contains(Substring(row)) } ?? true }

    func run() throws {
        try BenchReport.run(times: runs, json: json) { try measure() }
    }

    func measure() throws -> BenchReport {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var report = BenchReport()
        func add(_ name: String, _ arbor: Double, _ sqlite: Double, _ unit: String = "s", peer: String? = nil) {
            report.results.append(BenchResult(name: name, arbor: arbor, sqlite: sqlite, unit: unit, peer: peer))
            print(String(format: "  %@: arbor %.3f, %@ %.3f %@", name, arbor, peer ?? "sqlite", sqlite, unit))
        }
        let feed = try TransitFeed(directory: data, limit: maxStopTimes)
        let needsStores = wants("import") || wants("reimport") || wants("update") || wants("delete")
        print("bulk benchmark: \(feed.stops.count) stops, \(feed.stopTimes.count) stop times, in \(directory)")

        // Imports: SQLite; Arbor's batch inserts of rows parsed in memory (the `transit` benchmark's
        // path); `arbor import gtfs`'s importer, from the text files. Every store with the
        // (stop, departureTime) index, as the importer's model has it.
        let base = (arbor: directory + "/base.arbor", sqlite: directory + "/base.sqlite", cli: directory + "/cli.arbor")
        let work = (arbor: directory + "/work.arbor", sqlite: directory + "/work.sqlite")
        var options = GTFSImportOptions()
        if needsStores {
        let sqliteImport = try Clock.seconds {
            let sqlite = try SQLiteTransitSide(path: base.sqlite)
            try sqlite.importFeed(feed, compound: true)
            _ = sqlite.fileMiB  // checkpoint: the file holds the whole database
        }
        let pathImport = try Clock.seconds { _ = try ArborTransitSide.build(path: base.arbor, feed: feed, compound: true) }
        if maxStopTimes != Int.max { throw ValidationError("the importer reads whole feeds: make a smaller one instead of --max-stop-times") }
        let importer = try Clock.seconds { _ = try GTFSImporter.importFeed(from: URL(fileURLWithPath: data), into: URL(fileURLWithPath: base.cli), options: options) }
        add("import: arbor import gtfs", importer, sqliteImport)
        add("import: batch inserts of parsed rows", pathImport, sqliteImport)
        add("import: arbor import gtfs against batch inserts", importer, pathImport, peer: "arbor batch inserts of parsed rows")
        }
        if wants("reimport") {

        // Re-import: the feed's next edition, 1% of its stops changed.
        let edition = directory + "/edition"
        let changed = try FeedEdition.write(from: data, to: edition)
        let fresh = try Clock.seconds {
            _ = try GTFSImporter.importFeed(from: URL(fileURLWithPath: edition), into: URL(fileURLWithPath: directory + "/fresh.arbor"))
        }
        try copy(base.cli, to: directory + "/updated.arbor")
        options.update = true
        var updateResult = GTFSImportResult()
        let update = try Clock.seconds {
            updateResult = try GTFSImporter.importFeed(from: URL(fileURLWithPath: edition), into: URL(fileURLWithPath: directory + "/updated.arbor"), options: options)
        }
        guard updateResult.updatedStops >= changed.renamed, updateResult.updatedStops <= changed.renamed + changed.shifted,
              updateResult.insertedStops == 0, updateResult.deletedStops == 0 else {
            throw BenchError.wrongAnswer("re-import updated \(updateResult.updatedStops) stops, \(changed) changed")
        }
        add("re-import 1% changed: --update against a fresh import", update, fresh, peer: "arbor import gtfs of the new edition into a new store")
        }
        if wants("update") {

        // Batch update: every departure a minute later.
        try copy(base.arbor, to: work.arbor)
        try copy(base.sqlite, to: work.sqlite)
        var updated = (arbor: 0, sqlite: 0)
        let arborUpdate = try Clock.seconds {
            let side = try ArborTransitSide(path: work.arbor, compound: true)
            let request = BatchUpdateRequest(entityName: "StopTime",
                                             propertiesToUpdate: ["departureTime": .expression(try ObjectExpression(format: "departureTime + 60"))])
            updated.arbor = try side.container.persistentStoreCoordinator.execute(request).count
        }
        let sqliteUpdate = try Clock.seconds {
            let side = try SQLiteTransitSide(path: work.sqlite)
            updated.sqlite = try side.pool.write { db in
                try db.execute(sql: "UPDATE ZSTOPTIME SET ZDEPARTURETIME = ZDEPARTURETIME + 60, Z_OPT = Z_OPT + 1")
                return db.changesCount
            }
        }
        guard updated.arbor == updated.sqlite else { throw BenchError.wrongAnswer("batch update: \(updated.arbor) against \(updated.sqlite) rows") }
        add("batch update: departureTime + 60 on every stop time", arborUpdate, sqliteUpdate)
        }
        if wants("delete") {

        // Batch delete: the stops of the westmost tenth of the map, with their stop times.
        try copy(base.arbor, to: work.arbor)
        try copy(base.sqlite, to: work.sqlite)
        let longitudes = feed.stops.map(\.longitude).sorted()
        let boundary = longitudes[longitudes.count / 10]
        var deleted = (arbor: 0, sqlite: 0)
        let arborDelete = try Clock.seconds {
            let side = try ArborTransitSide(path: work.arbor, compound: true)
            let request = BatchDeleteRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "longitude < %@", boundary))
            deleted.arbor = try side.container.persistentStoreCoordinator.execute(request).changes.deleted.count
        }
        let sqliteDelete = try Clock.seconds {
            let side = try SQLiteTransitSide(path: work.sqlite)
            deleted.sqlite = try side.pool.write { db in
                try db.execute(sql: "DELETE FROM ZSTOPTIME WHERE ZSTOP IN (SELECT Z_PK FROM ZSTOP WHERE ZLONGITUDE < ?)", arguments: [boundary])
                let times = db.changesCount
                try db.execute(sql: "DELETE FROM ZSTOP WHERE ZLONGITUDE < ?", arguments: [boundary])
                return times + db.changesCount
            }
        }
        guard deleted.arbor == deleted.sqlite else { throw BenchError.wrongAnswer("batch delete: \(deleted.arbor) against \(deleted.sqlite) rows") }
        add("batch delete: a district's stops and stop times (cascade)", arborDelete, sqliteDelete)
        }

        // Find-or-create and upsert: `stops` stops, the even half stored.
        let incoming = IncomingStop.batch(stops, edition: "Edition 2")
        let stored = IncomingStop.batch(stops, edition: "Edition 1")
        // `--only find-objects` or `find-requests` runs one side of the row alone (for profiling).
        let findParts = (objects: wants("find") || wants("find-objects"), requests: wants("find") || wants("find-requests"))
        if findParts.objects || findParts.requests {
        let sqliteSide = try SQLiteStopsSide(path: directory + "/stops.sqlite", stored: stored)
        var foundBySQLite = 0
        let sqliteFind = try Clock.seconds { foundBySQLite = try sqliteSide.findOrCreate(incoming, batch: batch) }
        guard foundBySQLite == stops / 2, sqliteSide.count == stops else {
            throw BenchError.wrongAnswer("SQLite's find-or-create found \(foundBySQLite), count \(sqliteSide.count)")
        }
        /// Runs `find` against a new Arbor store `name` holding the stored half, and checks it
        /// found that half and left every stop stored.
        func timedFind(_ name: String, _ find: (ArborStopsSide) throws -> Int) throws -> Double {
            let side = try ArborStopsSide(path: directory + "/" + name, stored: stored)
            var found = 0
            let seconds = try Clock.seconds { found = try find(side) }
            guard found == stops / 2, side.count == stops else {
                throw BenchError.wrongAnswer("find-or-create into \(name) found \(found), count \(side.count)")
            }
            return seconds
        }
        if findParts.objects {
            let arborFind = try timedFind("stops.arbor") { try $0.findOrCreate(incoming, batch: batch) }
            add("find-or-create: IN batches of \(batch), objects and saves", arborFind, sqliteFind)
            if wants("find") {
                let oneByOne = try timedFind("stops-one.arbor") { try $0.findOrCreateOneByOne(incoming, batch: batch) }
                add("find-or-create: IN batches against one fetch per record", arborFind, oneByOne, peer: "arbor, one fetch per record")
            }
        }
        if findParts.requests {
            let requestsFind = try timedFind("stops-requests.arbor") { try $0.findOrCreateWithBatchRequests(incoming, batch: batch) }
            add("find-or-create: IN batches of \(batch), batch requests", requestsFind, sqliteFind)
        }
        }
        if wants("upsert") {

        let upsertArbor = try ArborStopsSide(path: directory + "/upsert.arbor", stored: stored)
        let upsertSQLite = try SQLiteStopsSide(path: directory + "/upsert.sqlite", stored: stored)
        var upserted = (arbor: 0, sqlite: 0)
        let arborUpsert = try Clock.seconds { upserted.arbor = try upsertArbor.upsert(incoming) }
        let sqliteUpsert = try Clock.seconds { upserted.sqlite = try upsertSQLite.upsert(incoming) }
        guard upserted.arbor == stops / 2, upsertArbor.count == stops, upsertSQLite.count == stops, upserted.sqlite == stops else {
            throw BenchError.wrongAnswer("upsert: \(upserted), counts \(upsertArbor.count), \(upsertSQLite.count)")
        }
        add("upsert: half new, ON CONFLICT DO UPDATE", arborUpsert, sqliteUpsert)
        }
        return report
    }

    private func copy(_ source: String, to destination: String) throws {
        for file in [destination, destination + "-lock", destination + "-wal", destination + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        try FileManager.default.copyItem(atPath: source, toPath: destination)
    }
}
