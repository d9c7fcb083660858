import Arbor
import Foundation
import GRDB

/// The transit store through Arbor's public API: the model of DEVELOPERS.md.
struct ArborTransitSide {
    let path: String
    let container: PersistentContainer
    /// The query kinds, prepared once — predicate parsed and checked, variables typed — and
    /// bound per query (`PreparedFetchRequest`), as an app does; SQLite's side likewise prepares
    /// its statement once. Each store keeps the index it chose for each.
    let geoRequest, subqueryRequest, prefixRequest, normalizedRequest: PreparedFetchRequest

    static func model(compoundStopDeparture: Bool) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("Stop", class: BenchStop.self,
                              attributes: [AttributeDescription("identifier", .int64, indexed: true), AttributeDescription("name", .string),
                                           AttributeDescription("normalizedName", .string, indexed: true),
                                           AttributeDescription("latitude", .double), AttributeDescription("longitude", .double)],
                              relationships: [.toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .cascade)],
                              indexes: [IndexDescription(["longitude", "latitude"]), IndexDescription(["name"], normalized: true)]),
            EntityDescription("StopTime", class: BenchStopTime.self,
                              attributes: [AttributeDescription("arrivalTime", .date), AttributeDescription("departureTime", .date),
                                           AttributeDescription("pickupType", .int16, defaultValue: .int(0)),
                                           AttributeDescription("dropOffType", .int16, defaultValue: .int(0))],
                              relationships: [.toOne("stop", "Stop", inverse: "stopTimes", optional: false)],
                              indexes: compoundStopDeparture ? [IndexDescription(["stop", "departureTime"])] : []),
        ])
    }

    /// `cacheMiB`: the page cache (64 MiB, as SQLite's side is given, unless a profile asks).
    init(path: String, compound: Bool, cacheMiB: Int = 64) throws {
        self.path = path
        var options = PersistentStore.Options()
        options.durability = .normal  // as SQLite's synchronous=NORMAL in WAL mode
        options.cacheBytes = cacheMiB << 20
        container = try PersistentContainer(name: "transit", model: try Self.model(compoundStopDeparture: compound),
                                            url: URL(fileURLWithPath: path), options: options)
        let model = container.managedObjectModel
        func prepared(_ format: String, limit: Int = 0) throws -> PreparedFetchRequest {
            var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: format))
            request.fetchLimit = limit
            request.returnsObjectsAsFaults = false
            return try PreparedFetchRequest(request, model: model)
        }
        geoRequest = try prepared(Self.boxFormat, limit: 200)
        subqueryRequest = try prepared(Self.boxFormat + " AND " + Self.windowFormat, limit: 200)
        prefixRequest = try prepared("name BEGINSWITH[cd] $prefix")
        normalizedRequest = try prepared("normalizedName BEGINSWITH $prefix")
    }

    var fileMiB: Double { ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0) / 1_048_576 }

    /// Imports `feed` into a new store at `path`, as `arbor import gtfs` does: batches of saves
    /// into a working file, then its compacted copy (no free pages left by copy-on-write) as the
    /// store; returns the side opened on it.
    static func build(path: String, feed: TransitFeed, compound: Bool) throws -> ArborTransitSide {
        let working = path + ".importing"
        for file in [path, working, working + "-lock"] { try? FileManager.default.removeItem(atPath: file) }
        do {
            let side = try ArborTransitSide(path: working, compound: compound)
            try side.importFeed(feed)
            for store in side.container.persistentStoreCoordinator.persistentStores { try store.compact(to: URL(fileURLWithPath: path)) }
        }
        for file in [working, working + "-lock"] { try? FileManager.default.removeItem(atPath: file) }
        return try ArborTransitSide(path: path, compound: compound)
    }

    /// Imports through two batch inserts (Core Data's `NSBatchInsertRequest`): the stops, then
    /// the stop times referring to them by ID, each request one transaction.
    func importFeed(_ feed: TransitFeed) throws {
        let coordinator = container.persistentStoreCoordinator
        var next = 0
        var stops = BatchInsertRequest(entityName: "Stop") { object in
            guard next < feed.stops.count else { return true }
            let stop = feed.stops[next]
            next += 1
            object.setValue(.int(stop.identifier), forKey: "identifier")
            object.setValue(.string(stop.name), forKey: "name")
            object.setValue(.string(QueryPoints.fold(stop.name)), forKey: "normalizedName")
            object.setValue(.double(stop.latitude), forKey: "latitude")
            object.setValue(.double(stop.longitude), forKey: "longitude")
            return false
        }
        stops.resultType = .objectIDs
        let ids = try coordinator.execute(stops).objectIDs ?? []
        guard ids.count == feed.stops.count else { throw BenchError.wrongAnswer("\(ids.count) stop IDs for \(feed.stops.count) stops") }
        next = 0
        let times = BatchInsertRequest(entityName: "StopTime") { object in
            guard next < feed.stopTimes.count else { return true }
            let time = feed.stopTimes[next]
            next += 1
            object.setValue(.date(Date(timeIntervalSince1970: Double(time.arrival))), forKey: "arrivalTime")
            object.setValue(.date(Date(timeIntervalSince1970: Double(time.departure))), forKey: "departureTime")
            object.setValue(.int(Int64(time.pickup)), forKey: "pickupType")
            object.setValue(.int(Int64(time.dropOff)), forKey: "dropOffType")
            object.setObjectID(ids[Int(time.stop)], forKey: "stop")
            return false
        }
        _ = try coordinator.execute(times)
    }

    /// Runs `body` for each query on one context; returns per-query latencies (ms) and a checksum.
    /// What a list of stops reads from each: its identifier and its name (both sides read the
    /// same two values, so a side that decodes columns lazily pays for the name too).
    static func checksum(_ stop: BenchStop) -> Int { Int(stop.identifier % 1000) + stop.name.utf8.count }

    func measure(_ count: Int, _ body: (ManagedObjectContext, Int) throws -> Int) throws -> (latencies: [Double], checksum: Int) {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var latencies: [Double] = []
            var checksum = 0
            for index in 0..<count {
                var found = 0
                latencies.append(try Clock.seconds { found = try body(context, index) } * 1000)
                checksum += found
                context.reset()
            }
            return (latencies, checksum)
        }
    }

    static let boxFormat = "longitude BETWEEN {$minLon, $maxLon} AND latitude BETWEEN {$minLat, $maxLat}"
    static let windowFormat = "SUBQUERY(stopTimes, $x, $x.departureTime >= $start AND $x.departureTime <= $end).@count != 0"

    /// The box's values by position, in the order `boxFormat` writes its variables (as the
    /// SQLite side binds its `?`s).
    static func box(_ box: (minLat: Double, maxLat: Double, minLon: Double, maxLon: Double)) -> [any FetchTemplateValue] {
        [box.minLon, box.maxLon, box.minLat, box.maxLat]
    }

    func geo(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count) { context, index in
            try context.fetch(geoRequest, Self.box(QueryPoints.box(points.points[index], meters: meters)), as: BenchStop.self)
                .reduce(0) { $0 + Self.checksum($1) }
        }
    }

    func subquery(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count) { context, index in
            let start = Date(timeIntervalSince1970: Double(points.windows[index]))
            let values = Self.box(QueryPoints.box(points.points[index], meters: 800)) + [start, start.addingTimeInterval(1200)]
            return try context.fetch(subqueryRequest, values, as: BenchStop.self).reduce(0) { $0 + Self.checksum($1) }
        }
    }

    func prefix(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.prefixes.count) { context, index in
            try context.fetch(normalizedAttribute ? normalizedRequest : prefixRequest, [points.prefixes[index]], as: BenchStop.self)
                .reduce(0) { $0 + Self.checksum($1) }
        }
    }

    // The values path: the same queries, each stop decoded into `StopRow` (no managed objects).

    func geoValues(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count) { context, index in
            try context.fetchValues(geoRequest, Self.box(QueryPoints.box(points.points[index], meters: meters)), as: StopRow.self)
                .reduce(0) { $0 + $1.checksum }
        }
    }

    func subqueryValues(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count) { context, index in
            let start = Date(timeIntervalSince1970: Double(points.windows[index]))
            let values = Self.box(QueryPoints.box(points.points[index], meters: 800)) + [start, start.addingTimeInterval(1200)]
            return try context.fetchValues(subqueryRequest, values, as: StopRow.self).reduce(0) { $0 + $1.checksum }
        }
    }

    func prefixValues(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.prefixes.count) { context, index in
            try context.fetchValues(normalizedAttribute ? normalizedRequest : prefixRequest, [points.prefixes[index]], as: StopRow.self)
                .reduce(0) { $0 + $1.checksum }
        }
    }

    /// The normalizedName prefix query as dictionary results (Core Data's dictionary result type).
    func prefixDictionaries(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.prefixes.count) { context, index in
            var request = try normalizedRequest.request([points.prefixes[index]])
            request.resultType = .dictionaries
            request.propertiesToFetch = StopRow.fetchedProperties.map(FetchProperty.key)
            return try context.fetchDictionaries(request).reduce(0) { sum, row in
                sum + Int(((row["identifier"] as? Int64) ?? 0) % 1000) + ((row["name"] as? String)?.utf8.count ?? 0)
            }
        }
    }

    /// Every stop time through batched results of 50; returns the sum of departures (s).
    func iterate() throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime")
            request.fetchBatchSize = 50
            var sum = 0
            for time in try context.fetchResults(request, as: BenchStopTime.self) { sum += Int(time.departureTime.timeIntervalSince1970) }
            return sum
        }
    }

    /// Stop times per stop, as a Core Data user writes it: dictionary results grouped by stop.
    func countPerStop() throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime")
            request.propertiesToGroupBy = ["stop"]
            request.propertiesToFetch = [.key("stop"), .expression("count", .count, of: "SELF")]
            return try context.fetchDictionaries(request).reduce(0) { $0 + (($1["count"] as? Int64).map(Int.init) ?? 0) }
        }
    }
}

/// The same data in SQLite through GRDB, with the schema Core Data would create.
struct SQLiteTransitSide {
    let path: String
    let pool: DatabasePool
    static let referenceDate = 978_307_200.0

    init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
            // Core Data evaluates [cd] string operators with a function it registers in SQLite.
            db.add(function: DatabaseFunction("ARBOR_BEGINSWITH_CD", argumentCount: 2, pure: true) { values in
                guard let text = String.fromDatabaseValue(values[0]), let prefix = String.fromDatabaseValue(values[1]) else { return false }
                return QueryPoints.fold(text).hasPrefix(prefix)
            })
        }
        pool = try DatabasePool(path: path, configuration: configuration)
    }

    var fileMiB: Double {
        try? pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        return ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0) / 1_048_576
    }

    func importFeed(_ feed: TransitFeed, batch: Int = 10_000, compound: Bool) throws {
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE ZSTOP (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZIDENTIFIER INTEGER, ZNAME VARCHAR,
                                    ZNORMALIZEDNAME VARCHAR, ZLATITUDE FLOAT, ZLONGITUDE FLOAT);
                CREATE INDEX ZSTOP_ZIDENTIFIER_INDEX ON ZSTOP (ZIDENTIFIER);
                CREATE INDEX ZSTOP_ZNORMALIZEDNAME_INDEX ON ZSTOP (ZNORMALIZEDNAME);
                CREATE INDEX ZSTOP_GEO ON ZSTOP (ZLONGITUDE, ZLATITUDE);
                CREATE TABLE ZSTOPTIME (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPICKUPTYPE INTEGER, ZDROPOFFTYPE INTEGER,
                                        ZSTOP INTEGER, Z_FOK_STOP INTEGER, ZARRIVALTIME TIMESTAMP, ZDEPARTURETIME TIMESTAMP);
                CREATE INDEX ZSTOPTIME_ZSTOP_INDEX ON ZSTOPTIME (ZSTOP);
                """)
            if compound { try db.execute(sql: "CREATE INDEX ZSTOPTIME_STOP_DEPARTURE ON ZSTOPTIME (ZSTOP, ZDEPARTURETIME)") }
            let statement = try db.makeStatement(sql: """
                INSERT INTO ZSTOP (Z_PK, Z_ENT, Z_OPT, ZIDENTIFIER, ZNAME, ZNORMALIZEDNAME, ZLATITUDE, ZLONGITUDE) VALUES (?, 1, 1, ?, ?, ?, ?, ?)
                """)
            for (index, stop) in feed.stops.enumerated() {
                statement.setUncheckedArguments([index + 1, stop.identifier, stop.name, QueryPoints.fold(stop.name), stop.latitude, stop.longitude])
                try statement.execute()
            }
        }
        var order = [Int](repeating: 0, count: feed.stops.count)
        var start = 0
        while start < feed.stopTimes.count {
            let end = min(start + batch, feed.stopTimes.count)
            try pool.write { db in
                let statement = try db.makeStatement(sql: """
                    INSERT INTO ZSTOPTIME (Z_PK, Z_ENT, Z_OPT, ZPICKUPTYPE, ZDROPOFFTYPE, ZSTOP, Z_FOK_STOP, ZARRIVALTIME, ZDEPARTURETIME)
                    VALUES (?, 2, 1, ?, ?, ?, ?, ?, ?)
                    """)
                for index in start..<end {
                    let time = feed.stopTimes[index]
                    order[Int(time.stop)] += 1
                    statement.setUncheckedArguments([index + 1, Int(time.pickup), Int(time.dropOff), Int(time.stop) + 1, order[Int(time.stop)],
                                                     Double(time.arrival) - Self.referenceDate, Double(time.departure) - Self.referenceDate])
                    try statement.execute()
                }
            }
            start = end
        }
    }

    /// Times `count` queries of `sql`, its statement prepared once: `run` runs query `index`
    /// and returns the checksum of what it read.
    func timed(_ count: Int, sql: String, _ run: (Statement, Int) throws -> Int) throws -> (latencies: [Double], checksum: Int) {
        try pool.read { db in
            let statement = try db.cachedStatement(sql: sql)
            var latencies: [Double] = []
            var checksum = 0
            for index in 0..<count {
                var found = 0
                latencies.append(try Clock.seconds { found = try run(statement, index) } * 1000)
                checksum += found
            }
            return (latencies, checksum)
        }
    }

    /// Whole rows, as Core Data fetches objects that are not faults.
    func measure(_ count: Int, sql: String, _ arguments: (Int) -> StatementArguments) throws -> (latencies: [Double], checksum: Int) {
        try timed(count, sql: sql) { statement, index in
            try Row.fetchAll(statement, arguments: arguments(index))
                .reduce(0) { $0 + Int(($1["ZIDENTIFIER"] as Int64? ?? 0) % 1000) + (($1["ZNAME"] as String?)?.utf8.count ?? 0) }
        }
    }

    /// The values path's peer: the same columns decoded into the same struct, through GRDB's
    /// `FetchableRecord` (columns by position, no name lookups).
    func measureValues(_ count: Int, sql: String, _ arguments: (Int) -> StatementArguments) throws -> (latencies: [Double], checksum: Int) {
        try timed(count, sql: sql) { statement, index in
            try StopRow.fetchAll(statement, arguments: arguments(index)).reduce(0) { $0 + $1.checksum }
        }
    }

    static let rowColumns = "ZIDENTIFIER, ZNAME, ZLATITUDE, ZLONGITUDE"

    /// The normalizedName prefix query as dictionaries (column name to value), GRDB's `Row`s
    /// made into them.
    func prefixDictionaries(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try timed(points.prefixes.count, sql: "SELECT \(Self.rowColumns) FROM ZSTOP WHERE ZNORMALIZEDNAME >= ? AND ZNORMALIZEDNAME < ?") { statement, index in
            let prefix = points.prefixes[index]
            return try Row.fetchAll(statement, arguments: [prefix, prefix + "\u{10FFFF}"]).reduce(0) { sum, row in
                let dictionary = Dictionary(uniqueKeysWithValues: row.map { ($0.0, $0.1) })
                let identifier = dictionary["ZIDENTIFIER"].flatMap { Int64.fromDatabaseValue($0) } ?? 0
                let name = dictionary["ZNAME"].flatMap { String.fromDatabaseValue($0) } ?? ""
                return sum + Int(identifier % 1000) + name.utf8.count
            }
        }
    }

    /// The SQL Core Data generates for `box AND SUBQUERY(…).@count != 0`, selecting `columns`.
    static func subquerySQL(_ columns: String) -> String {
        """
        SELECT \(columns) FROM ZSTOP t0 WHERE \(boxSQL) AND (SELECT COUNT(t1.Z_PK) FROM ZSTOPTIME t1
            WHERE (t0.Z_PK = t1.ZSTOP AND (t1.ZDEPARTURETIME >= ? AND t1.ZDEPARTURETIME <= ?))) <> 0 LIMIT 200
        """
    }

    /// The subquery's arguments for query `index`: the 800 m box, then the 20-minute window.
    static func subqueryArguments(_ points: QueryPoints) -> (Int) -> StatementArguments {
        { index in
            let box = QueryPoints.box(points.points[index], meters: 800)
            let start = Double(points.windows[index]) - referenceDate
            return [box.minLon, box.maxLon, box.minLat, box.maxLat, start, start + 1200]
        }
    }

    func geoValues(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int) {
        try measureValues(points.points.count, sql: "SELECT \(Self.rowColumns) FROM ZSTOP WHERE \(Self.boxSQL) LIMIT 200") { index in
            let box = QueryPoints.box(points.points[index], meters: meters)
            return [box.minLon, box.maxLon, box.minLat, box.maxLat]
        }
    }

    func subqueryValues(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try measureValues(points.points.count, sql: Self.subquerySQL(Self.rowColumns), Self.subqueryArguments(points))
    }

    func prefixValues(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int) {
        if normalizedAttribute {
            return try measureValues(points.prefixes.count, sql: "SELECT \(Self.rowColumns) FROM ZSTOP WHERE ZNORMALIZEDNAME >= ? AND ZNORMALIZEDNAME < ?") { index in
                [points.prefixes[index], points.prefixes[index] + "\u{10FFFF}"]
            }
        }
        return try measureValues(points.prefixes.count, sql: "SELECT \(Self.rowColumns) FROM ZSTOP WHERE ARBOR_BEGINSWITH_CD(ZNAME, ?)") { index in
            [points.prefixes[index]]
        }
    }

    static let boxSQL = "ZLONGITUDE BETWEEN ? AND ? AND ZLATITUDE BETWEEN ? AND ?"

    func geo(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count, sql: "SELECT * FROM ZSTOP WHERE \(Self.boxSQL) LIMIT 200") { index in
            let box = QueryPoints.box(points.points[index], meters: meters)
            return [box.minLon, box.maxLon, box.minLat, box.maxLat]
        }
    }

    func subquery(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int) {
        try measure(points.points.count, sql: Self.subquerySQL("*"), Self.subqueryArguments(points))
    }

    func prefix(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int) {
        if normalizedAttribute {
            return try measure(points.prefixes.count, sql: "SELECT * FROM ZSTOP WHERE ZNORMALIZEDNAME >= ? AND ZNORMALIZEDNAME < ?") { index in
                [points.prefixes[index], points.prefixes[index] + "\u{10FFFF}"]
            }
        }
        return try measure(points.prefixes.count, sql: "SELECT * FROM ZSTOP WHERE ARBOR_BEGINSWITH_CD(ZNAME, ?)") { index in
            [points.prefixes[index]]
        }
    }

    /// Every stop time in batches of 50, as Core Data's batch faulting does: all IDs first, then
    /// each batch's rows by `Z_PK IN (…)`.
    func iterate() throws -> Int {
        try pool.read { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT Z_PK FROM ZSTOPTIME")
            var sum = 0
            var start = 0
            while start < ids.count {
                let end = min(start + 50, ids.count)
                let list = ids[start..<end].map(String.init).joined(separator: ",")
                for row in try Row.fetchAll(db, sql: "SELECT * FROM ZSTOPTIME WHERE Z_PK IN (\(list))") {
                    sum += Int((row["ZDEPARTURETIME"] as Double? ?? 0) + Self.referenceDate)
                }
                start = end
            }
            return sum
        }
    }

    func countPerStop() throws -> Int {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT ZSTOP, COUNT(Z_PK) AS n FROM ZSTOPTIME GROUP BY ZSTOP").reduce(0) { $0 + ($1["n"] as Int? ?? 0) }
        }
    }
}

/// A pair of transit stores, Arbor's and SQLite's, in `directory`: built from the feed at
/// `data`, or those of an earlier run when `reuse` is set and both files exist.
struct TransitStorePair {
    let arborPath: String
    let sqlitePath: String

    init(directory: String, data: String, maxStopTimes: Int, reuse: Bool, compound: Bool) throws {
        arborPath = directory + "/transit.arbor"
        sqlitePath = directory + "/transit.sqlite"
        if reuse && FileManager.default.fileExists(atPath: arborPath) && FileManager.default.fileExists(atPath: sqlitePath) { return }
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let feed = try TransitFeed(directory: data, limit: maxStopTimes)
        print("building the stores: \(feed.stops.count) stops, \(feed.stopTimes.count) stop times, in \(directory)")
        _ = try ArborTransitSide.build(path: arborPath, feed: feed, compound: compound)
        let sqlite = try SQLiteTransitSide(path: sqlitePath)
        try sqlite.importFeed(feed, compound: compound)
        _ = sqlite.fileMiB  // checkpoint: the file then holds the whole database
    }
}

/// A stop as a list shows it: what both sides' values paths decode, the same columns into the
/// same struct by position (Arbor: `fetchValues` through `FetchableValue`; SQLite: GRDB's
/// `FetchableRecord` on a statement selecting these columns).
struct StopRow: FetchableValue, FetchableRecord {
    var identifier: Int64
    var name: String
    var latitude: Double
    var longitude: Double

    static let fetchedProperties = ["identifier", "name", "latitude", "longitude"]

    init(row: FetchedRowValues) throws {
        identifier = try row.value(0)
        name = try row.value(1)
        latitude = try row.value(2)
        longitude = try row.value(3)
    }

    init(row: Row) {
        identifier = row[0]
        name = row[1]
        latitude = row[2]
        longitude = row[3]
    }

    /// What the object path's checksum reads of a stop.
    var checksum: Int { Int(identifier % 1000) + name.utf8.count }
}
