import Arbor
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench objects`: the object stack (contexts, managed objects, faulting) against SQLite
/// through GRDB prepared statements — the strongest SQLite peer, without an ORM's overhead — on
/// the transit model: stops, and stop times with a to-one `stop` whose inverse is ordered.
struct ObjectsBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "objects",
        abstract: "Arbor's object stack vs SQLite (GRDB): import through a context, fault by ID, to-many traversal.",
        discussion: "Example: swift run -c release arbor-bench objects --stop-times 300000")

    @Option(help: "Stops to insert.") var stops = 12_800
    @Option(name: .customLong("stop-times"), help: "Stop times to insert.") var stopTimes = 300_000
    @Option(help: "Objects per save (transaction).") var batch = 10_000
    @Option(help: "Random faults by object ID.") var faults = 50_000
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-objects"
    @Option(help: "Write the results as JSON to this path.") var json: String?
    @Option(help: "Repeat everything this many times and report per-row medians.") var runs = 1

    func run() throws {
        try BenchReport.run(times: runs, json: json, measureOnce)
    }

    func measureOnce() throws -> BenchReport {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        print("objects benchmark: \(stops) stops, \(stopTimes) stop times, saves of \(batch), \(faults) faults, in \(directory)")
        let data = TransitData(stops: stops, stopTimes: stopTimes, faults: faults)
        let arbor = try ArborObjectsSide(path: directory + "/transit.arbor")
        let sqlite = try SQLiteObjectsSide(path: directory + "/transit.sqlite")
        var report = BenchReport()

        let arborImport = try Clock.seconds { try arbor.importAll(data, batch: batch) }
        let sqliteImport = try Clock.seconds { try sqlite.importAll(data, batch: batch) }
        report.results.append(.init(name: "import \(stopTimes + stops) objects", arbor: arborImport * 1000, sqlite: sqliteImport * 1000, unit: "ms"))

        var arborSum = 0.0, sqliteSum = 0.0
        let faultIDs = arbor.ids(entity: "StopTime", keys: data.faultOrder.map { $0 + 1 })
        let arborFaults = try Clock.seconds { arborSum = try arbor.fault(faultIDs) }
        let sqliteFaults = try Clock.seconds { sqliteSum = try sqlite.fault(data.faultOrder) }
        guard arborSum == sqliteSum else { throw BenchError.wrongAnswer("fault sums differ: \(arborSum) vs \(sqliteSum)") }
        report.results.append(.init(name: "fault \(faults) stop times by ID", arbor: arborFaults * 1000, sqlite: sqliteFaults * 1000, unit: "ms"))

        var arborMembers = 0, sqliteMembers = 0
        let stopIDs = arbor.ids(entity: "Stop", keys: Array(1...max(stops, 1)))
        let arborToMany = try Clock.seconds { arborMembers = try arbor.toMany(stopIDs) }
        let sqliteToMany = try Clock.seconds { sqliteMembers = try sqlite.toMany(stops: stops) }
        guard arborMembers == sqliteMembers, arborMembers == stopTimes else {
            throw BenchError.wrongAnswer("to-many members \(arborMembers) vs \(sqliteMembers)")
        }
        report.results.append(.init(name: "stop.stopTimes for every stop (ordered IDs)", arbor: arborToMany * 1000, sqlite: sqliteToMany * 1000, unit: "ms"))
        report.results.append(.init(name: "file size", arbor: arbor.fileMiB, sqlite: sqlite.fileMiB, unit: "MiB"))
        return report
    }
}

/// Deterministic transit-like data: stop times spread over stops, departures in the day.
struct TransitData {
    let stops: Int
    let stopTimes: Int
    /// Stop index of each stop time.
    let stopOfTime: [Int]
    let departure: [Double]
    /// Stop-time indices to fault, in random order.
    let faultOrder: [Int]

    init(stops: Int, stopTimes: Int, faults: Int) {
        var generator = SplitMix(state: 7)
        self.stops = stops
        self.stopTimes = stopTimes
        stopOfTime = (0..<stopTimes).map { _ in Int(generator.next() % UInt64(max(stops, 1))) }
        departure = (0..<stopTimes).map { _ in Double(generator.next() % 90_000) }
        faultOrder = (0..<faults).map { _ in Int(generator.next() % UInt64(max(stopTimes, 1))) }
    }
}

/// The stop and stop-time classes of the `transit` and `frc` benchmarks, declared as an app
/// declares them (`@Entity`: each accessor reads its slot by position).
@Entity("Stop")
final class BenchStop: ManagedObject {
    var identifier: Int64 = 0
    var normalizedName: String = ""
    var name: String = ""
    var latitude: Double = 0
    var longitude: Double = 0
}

@Entity("StopTime")
final class BenchStopTime: ManagedObject {
    var arrivalTime: Date = Date(timeIntervalSince1970: 0)
    var departureTime: Date = Date(timeIntervalSince1970: 0)
    var pickupType: Int16 = 0
    var dropOffType: Int16 = 0
    var stop: BenchStop?
}

/// The `objects` benchmark's classes, written by hand (`@Attribute("key")`, the slot found by
/// the property's key path): that benchmark's import and faults have measured this form since
/// issue 4.
final class KeyedBenchStop: ManagedObject {
    @Attribute("stopID") var stopID: String
    @Attribute("name") var name: String
    @Attribute("latitude") var latitude: Double
    @Attribute("longitude") var longitude: Double
}

final class KeyedBenchStopTime: ManagedObject {
    @Attribute("arrivalTime") var arrivalTime: Date
    @Attribute("departureTime") var departureTime: Date
    @Attribute("pickupType") var pickupType: Int16
    @Attribute("dropOffType") var dropOffType: Int16
    @Relationship("stop") var stop: KeyedBenchStop?
}

struct ArborObjectsSide {
    let path: String
    let container: PersistentContainer

    init(path: String) throws {
        self.path = path
        let model = try ManagedObjectModel(entities: [
            EntityDescription("Stop", class: KeyedBenchStop.self,
                              attributes: [AttributeDescription("stopID", .string), AttributeDescription("name", .string, indexed: true),
                                           AttributeDescription("latitude", .double), AttributeDescription("longitude", .double)],
                              relationships: [.toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .cascade)],
                              indexes: [IndexDescription(["longitude", "latitude"])], uniquenessConstraints: [["stopID"]]),
            EntityDescription("StopTime", class: KeyedBenchStopTime.self,
                              attributes: [AttributeDescription("arrivalTime", .date), AttributeDescription("departureTime", .date),
                                           AttributeDescription("pickupType", .int16, defaultValue: .int(0)),
                                           AttributeDescription("dropOffType", .int16, defaultValue: .int(0))],
                              relationships: [.toOne("stop", "Stop", inverse: "stopTimes", optional: false)]),
        ])
        var options = PersistentStore.Options()
        options.durability = .normal  // as SQLite's synchronous=NORMAL in WAL mode
        container = try PersistentContainer(name: "bench", model: model, url: URL(fileURLWithPath: path), options: options)
    }

    var fileMiB: Double { ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0) / 1_048_576 }

    func importAll(_ data: TransitData, batch: Int) throws {
        let context = container.newBackgroundContext()
        try context.performAndWait {
            var stopIDs: [ObjectID] = []
            var stops: [KeyedBenchStop] = []
            for index in 0..<data.stops {
                let stop = KeyedBenchStop(context: context)
                stop.stopID = "S\(index)"
                stop.name = "Stop \(index)"
                stop.latitude = 52 + Double(index % 1000) / 1000
                stop.longitude = 13 + Double(index / 1000) / 100
                stops.append(stop)
            }
            try context.save()
            stopIDs = stops.map(\.objectID)
            stops = []
            context.reset()
            for index in 0..<data.stopTimes {
                let time = KeyedBenchStopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: data.departure[index])
                time.arrivalTime = time.departureTime
                time.stop = context.object(with: stopIDs[data.stopOfTime[index]]) as? KeyedBenchStop
                if (index + 1) % batch == 0 {
                    try context.save()
                    context.reset()
                }
            }
            try context.save()
        }
    }

    /// The IDs of stop times (inserted after the stops, in order: stop time i has key i + 1)
    /// and of stops, made before timing.
    func ids(entity: String, keys: [Int]) -> [ObjectID] {
        guard let store = container.persistentStoreCoordinator.persistentStores.first else { return [] }
        return keys.compactMap { key in
            URL(string: "arbor://\(store.identifier.uuidString)/\(entity)/p\(key)")
                .flatMap { container.persistentStoreCoordinator.managedObjectID(forURIRepresentation: $0) }
        }
    }

    /// Faults each stop time by ID in a fresh context (each object is dropped at once, so every
    /// fault reads its row); returns the sum of departures.
    func fault(_ ids: [ObjectID]) throws -> Double {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var sum = 0.0
            for id in ids {
                guard let time = context.object(with: id) as? KeyedBenchStopTime else { throw BenchError.wrongAnswer("\(id)") }
                sum += time.departureTime.timeIntervalSince1970
            }
            return sum
        }
    }

    /// Reads the ordered stop-time IDs of every stop.
    func toMany(_ ids: [ObjectID]) throws -> Int {
        let context = container.newBackgroundContext()
        return context.performAndWait {
            ids.reduce(0) { $0 + context.object(with: $1).objectIDs(forRelationshipNamed: "stopTimes").count }
        }
    }
}

struct SQLiteObjectsSide {
    let path: String
    let pool: DatabasePool

    init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE stop (id INTEGER PRIMARY KEY, stopID TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                                   latitude REAL NOT NULL, longitude REAL NOT NULL);
                CREATE INDEX stop_name ON stop(name);
                CREATE INDEX stop_geo ON stop(longitude, latitude);
                CREATE TABLE stopTime (id INTEGER PRIMARY KEY, arrivalTime REAL NOT NULL, departureTime REAL NOT NULL,
                                       pickupType INTEGER NOT NULL, dropOffType INTEGER NOT NULL,
                                       stop INTEGER NOT NULL REFERENCES stop(id), stopOrder INTEGER NOT NULL);
                CREATE INDEX stopTime_stop ON stopTime(stop, stopOrder);
                """)
        }
    }

    var fileMiB: Double {
        try? pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        return ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0) / 1_048_576
    }

    func importAll(_ data: TransitData, batch: Int) throws {
        try pool.write { db in
            let statement = try db.makeStatement(sql: "INSERT INTO stop (id, stopID, name, latitude, longitude) VALUES (?, ?, ?, ?, ?)")
            for index in 0..<data.stops {
                statement.setUncheckedArguments([index + 1, "S\(index)", "Stop \(index)", 52 + Double(index % 1000) / 1000,
                                                 13 + Double(index / 1000) / 100])
                try statement.execute()
            }
        }
        // The ordered inverse needs an order per stop, as Core Data's Z_FOK column.
        var nextOrder = [Int](repeating: 0, count: data.stops)
        var start = 0
        while start < data.stopTimes {
            let end = min(start + batch, data.stopTimes)
            try pool.write { db in
                let statement = try db.makeStatement(sql: """
                    INSERT INTO stopTime (id, arrivalTime, departureTime, pickupType, dropOffType, stop, stopOrder)
                    VALUES (?, ?, ?, 0, 0, ?, ?)
                    """)
                for index in start..<end {
                    let stop = data.stopOfTime[index]
                    nextOrder[stop] += 65_536
                    statement.setUncheckedArguments([index + 1, data.departure[index], data.departure[index], stop + 1, nextOrder[stop]])
                    try statement.execute()
                }
            }
            start = end
        }
    }

    func fault(_ order: [Int]) throws -> Double {
        try pool.read { db in
            let statement = try db.makeStatement(sql: "SELECT departureTime FROM stopTime WHERE id = ?")
            var sum = 0.0
            for index in order {
                guard let value = try Double.fetchOne(statement, arguments: [index + 1]) else { throw BenchError.wrongAnswer("row \(index)") }
                sum += value
            }
            return sum
        }
    }

    func toMany(stops: Int) throws -> Int {
        try pool.read { db in
            let statement = try db.makeStatement(sql: "SELECT id FROM stopTime WHERE stop = ? ORDER BY stopOrder")
            var total = 0
            for index in 0..<stops { total += try Int64.fetchAll(statement, arguments: [index + 1]).count }
            return total
        }
    }
}
