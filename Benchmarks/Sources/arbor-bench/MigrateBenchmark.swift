import Arbor
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench migrate`: model changes on an imported transit store — Arbor's lightweight
/// migration on open against the SQL a Core Data store would run in SQLite (GRDB).
struct MigrateBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Lightweight migrations on the transit store: add an index, add an attribute, rename an entity.")

    @Option(help: "The GTFS directory (stops.txt, stop_times.txt).") var data = "/tmp/transit"
    @Option(name: .customLong("max-stop-times"), help: "Read at most this many stop times.") var maxStopTimes = Int.max
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-migrate"
    @Option(help: "Write the results as JSON to this path.") var json: String?
    @Option(help: "Run only this change: index, attribute or rename.") var only: String?
    @Flag(help: "Reuse the base stores of an earlier run in --directory.") var reuse = false

    /// The transit model with one change to StopTime.
    static func model(_ change: String) throws -> ManagedObjectModel {
        let base = try ArborTransitSide.model(compoundStopDeparture: change == "index")
        var entities = base.entities
        switch change {
        case "attribute":
            entities[1].attributes.append(AttributeDescription("platform", .string, optional: true))
        case "rename":
            entities[1].name = "Departure"
            entities[1].renamingIdentifier = "StopTime"
            entities[0].relationships[0].destination = "Departure"
        default:
            break
        }
        return try ManagedObjectModel(entities: entities)
    }

    func run() throws {
        let stores = try TransitStorePair(directory: directory, data: data, maxStopTimes: maxStopTimes, reuse: reuse, compound: false)
        let arborBase = stores.arborPath, sqliteBase = stores.sqlitePath
        var report = BenchReport()
        let cases: [(name: String, change: String, sql: String)] = [
            ("add a (stop, departureTime) index", "index", "CREATE INDEX ZSTOPTIME_STOP_DEPARTURE ON ZSTOPTIME (ZSTOP, ZDEPARTURETIME)"),
            ("add an optional attribute to StopTime", "attribute", "ALTER TABLE ZSTOPTIME ADD COLUMN ZPLATFORM VARCHAR"),
            ("rename StopTime to Departure", "rename", "ALTER TABLE ZSTOPTIME RENAME TO ZDEPARTURE"),
        ]
        for entry in cases where only == nil || only == entry.change {
            let arborPath = directory + "/\(entry.change).arbor", sqlitePath = directory + "/\(entry.change).sqlite"
            for file in [arborPath, arborPath + "-lock", sqlitePath, sqlitePath + "-wal", sqlitePath + "-shm"] {
                try? FileManager.default.removeItem(atPath: file)
            }
            try FileManager.default.copyItem(atPath: arborBase, toPath: arborPath)
            try FileManager.default.copyItem(atPath: sqliteBase, toPath: sqlitePath)
            let model = try Self.model(entry.change)
            var options = PersistentStore.Options()
            options.durability = .deferredMetaSync
            let arbor = try Clock.seconds { _ = try PersistentStore(url: URL(fileURLWithPath: arborPath), model: model, options: options) }
            let sqlite = try Clock.seconds {
                let pool = try SQLiteTransitSide(path: sqlitePath).pool
                try pool.write { db in try db.execute(sql: entry.sql) }
            }
            report.results.append(.init(name: entry.name, arbor: arbor * 1000, sqlite: sqlite * 1000, unit: "ms"))
            print(String(format: "  %@: arbor %.1f ms, sqlite %.1f ms", entry.name, arbor * 1000, sqlite * 1000))
        }
        if let json { try report.write(json: json) }
    }
}
