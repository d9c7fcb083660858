import Arbor
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench transit`: the scenario of DEVELOPERS.md, Arbor against SQLite (GRDB, the schema
/// and SQL Core Data would use) on a GTFS feed from `../shared/datasets/gen_transit.py`.
struct TransitBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transit",
        abstract: "The transit scenario: import, geo box, SUBQUERY window, prefix search, batched iteration, counts, cold open.",
        discussion: "Make the data with: python3 ../../shared/datasets/gen_transit.py --out /tmp/transit")

    @Option(help: "The GTFS directory (stops.txt, stop_times.txt).") var data = "/tmp/transit"
    @Option(name: .customLong("max-stop-times"), help: "Read at most this many stop times.") var maxStopTimes = Int.max
    @Option(help: "Queries per measurement.") var queries = 200
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-transit"
    @Option(help: "Write the results as JSON to this path.") var json: String?

    func run() throws {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let feed = try TransitFeed(directory: data, limit: maxStopTimes)
        let points = QueryPoints(feed: feed, count: queries, seed: 42)
        print("transit benchmark: \(feed.stops.count) stops, \(feed.stopTimes.count) stop times, \(queries) queries each, in \(directory)")
        var report = BenchReport()
        func add(_ name: String, _ arbor: Double, _ sqlite: Double, _ unit: String) {
            report.results.append(.init(name: name, arbor: arbor, sqlite: sqlite, unit: unit))
            print(String(format: "  %@: arbor %.3f, sqlite %.3f %@", name, arbor, sqlite, unit))
        }
        var warmPaths: [String] = []
        // The two sides take turns, a block of queries each (the first side alternating), so a
        // change in the machine's speed during a measurement (this machine's varies by up to 2x
        // over minutes) falls on both sides alike instead of on whichever ran then.
        func latencies(_ name: String, _ arborQueries: (QueryPoints) throws -> (latencies: [Double], checksum: Int),
                       _ sqliteQueries: (QueryPoints) throws -> (latencies: [Double], checksum: Int)) throws {
            FileCache.warm(warmPaths)
            var arbor: (latencies: [Double], checksum: Int) = ([], 0), sqlite: (latencies: [Double], checksum: Int) = ([], 0)
            let block = 10
            for (turn, start) in stride(from: 0, to: points.points.count, by: block).enumerated() {
                let part = points.slice(start..<min(start + block, points.points.count))
                func runArbor() throws { let result = try arborQueries(part); arbor.latencies += result.latencies; arbor.checksum += result.checksum }
                func runSQLite() throws { let result = try sqliteQueries(part); sqlite.latencies += result.latencies; sqlite.checksum += result.checksum }
                if turn % 2 == 0 { try runArbor(); try runSQLite() } else { try runSQLite(); try runArbor() }
            }
            guard arbor.checksum == sqlite.checksum else { throw BenchError.wrongAnswer("\(name): checksums \(arbor.checksum) vs \(sqlite.checksum)") }
            add(name + " median", Clock.median(arbor.latencies), Clock.median(sqlite.latencies), "ms")
            add(name + " p95", Clock.percentile(arbor.latencies, 0.95), Clock.percentile(sqlite.latencies, 0.95), "ms")
        }

        var arborSide: ArborTransitSide?
        let sqlite = try SQLiteTransitSide(path: directory + "/transit.sqlite")
        let arborImport = try Clock.seconds { arborSide = try ArborTransitSide.build(path: directory + "/transit.arbor", feed: feed, compound: false) }
        guard let arbor = arborSide else { throw BenchError.wrongAnswer("the Arbor store was not built") }
        let sqliteImport = try Clock.seconds { try sqlite.importFeed(feed, compound: false) }
        add("import (all rows, all indexes)", arborImport, sqliteImport, "s")
        add("file size", arbor.fileMiB, sqlite.fileMiB, "MiB")
        warmPaths = [arbor.path, sqlite.path]

        // Each query twice: filled objects (Core Data's way), then values (a struct per row).
        try latencies("geo box 80 m, limit 200, filled", { try arbor.geo($0, meters: 80) }, { try sqlite.geo($0, meters: 80) })
        try latencies("geo box 80 m, values", { try arbor.geoValues($0, meters: 80) }, { try sqlite.geoValues($0, meters: 80) })
        try latencies("geo box 800 m, limit 200, filled", { try arbor.geo($0, meters: 800) }, { try sqlite.geo($0, meters: 800) })
        try latencies("geo box 800 m, values", { try arbor.geoValues($0, meters: 800) }, { try sqlite.geoValues($0, meters: 800) })
        try latencies("800 m box + SUBQUERY window (FK index)", { try arbor.subquery($0) }, { try sqlite.subquery($0) })
        try latencies("800 m box + SUBQUERY window (FK index), values", { try arbor.subqueryValues($0) }, { try sqlite.subqueryValues($0) })
        try latencies("name BEGINSWITH[cd] (normalized index vs function)", { try arbor.prefix($0, normalizedAttribute: false) },
                      { try sqlite.prefix($0, normalizedAttribute: false) })
        try latencies("normalizedName BEGINSWITH (both indexed)", { try arbor.prefix($0, normalizedAttribute: true) },
                      { try sqlite.prefix($0, normalizedAttribute: true) })
        try latencies("normalizedName BEGINSWITH (both indexed), values", { try arbor.prefixValues($0, normalizedAttribute: true) },
                      { try sqlite.prefixValues($0, normalizedAttribute: true) })

        var arborSum = 0, sqliteSum = 0
        let arborIterate = try Clock.seconds { arborSum = try arbor.iterate() }
        let sqliteIterate = try Clock.seconds { sqliteSum = try sqlite.iterate() }
        guard arborSum == sqliteSum else { throw BenchError.wrongAnswer("iteration sums \(arborSum) vs \(sqliteSum)") }
        add("iterate all stop times, batches of 50", arborIterate, sqliteIterate, "s")
        // Memory in a second pass: both page caches (64 MiB each) were filled by the first, so
        // what grows is what the iteration itself keeps (objects, rows, batches), not the cache.
        func growth(_ body: () throws -> Int) throws -> Double {
            Memory.resetPeak()
            let before = Memory.residentMiB
            _ = try body()
            return Memory.peakMiB - before
        }
        let arborGrowth = try growth(arbor.iterate), sqliteGrowth = try growth(sqlite.iterate)
        add("iterate: peak memory growth (second pass, caches warm)", max(arborGrowth, 0.01), max(sqliteGrowth, 0.01), "MiB")

        // The median of five runs a side, taking turns: one run of either side varied by a third
        // from one benchmark run to the next.
        var arborCount = 0, sqliteCount = 0
        var arborCounts: [Double] = [], sqliteCounts: [Double] = []
        for _ in 0..<5 {
            arborCounts.append(try Clock.seconds { arborCount = try arbor.countPerStop() })
            sqliteCounts.append(try Clock.seconds { sqliteCount = try sqlite.countPerStop() })
            guard arborCount == sqliteCount else { throw BenchError.wrongAnswer("counts \(arborCount) vs \(sqliteCount)") }
        }
        add("count of stop times per stop (group by)", Clock.median(arborCounts) * 1000, Clock.median(sqliteCounts) * 1000, "ms")

        // Median of seven fresh processes a side, taking turns: one spawn is at the mercy of
        // whatever else the machine does in those few milliseconds.
        let point = points.points[0]
        var arborOpens: [Double] = [], sqliteOpens: [Double] = []
        for _ in 0..<7 {
            arborOpens.append(try TransitOpen.spawn(engine: "arbor", path: arbor.path, point: point))
            sqliteOpens.append(try TransitOpen.spawn(engine: "sqlite", path: sqlite.path, point: point))
        }
        add("open + first geo fetch, fresh process (median of 7)", Clock.median(arborOpens), Clock.median(sqliteOpens), "ms")

        // The same SUBQUERY with a compound (stop, departureTime) index on both sides.
        let arborCompound = try ArborTransitSide.build(path: directory + "/transit-compound.arbor", feed: feed, compound: true)
        let sqliteCompound = try SQLiteTransitSide(path: directory + "/transit-compound.sqlite")
        try sqliteCompound.importFeed(feed, compound: true)
        warmPaths = [arborCompound.path, sqliteCompound.path]
        _ = sqliteCompound.fileMiB  // checkpoint the WAL into the file, as the first pair's
        try latencies("800 m box + SUBQUERY window (stop, departure index)", { try arborCompound.subquery($0) },
                      { try sqliteCompound.subquery($0) })
        try latencies("800 m box + SUBQUERY window (stop, departure index), values", { try arborCompound.subqueryValues($0) },
                      { try sqliteCompound.subqueryValues($0) })

        print()
        report.printTable()
        if let json { try report.write(json: json) }
    }
}

/// Hidden: opens a store and runs one geo fetch in this (fresh) process; prints milliseconds.
struct TransitOpen: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "transit-open", shouldDisplay: false)
    @Option var engine: String
    @Option var path: String
    @Option var latitude: Double
    @Option var longitude: Double

    func run() throws {
        let points = QueryPoints(points: [(latitude, longitude)])
        let elapsed = try Clock.seconds {
            if engine == "arbor" {
                _ = try ArborTransitSide(path: path, compound: false).geo(points, meters: 800)
            } else {
                _ = try SQLiteTransitSide(path: path).geo(points, meters: 800)
            }
        }
        print(elapsed * 1000)
    }

    static func spawn(engine: String, path: String, point: (latitude: Double, longitude: Double)) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["transit-open", "--engine", engine, "--path", path, "--latitude", "\(point.latitude)", "--longitude", "\(point.longitude)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0, let value = Double(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError.wrongAnswer("transit-open \(engine) failed: \(output)")
        }
        return value
    }
}

extension QueryPoints {
    init(points: [(latitude: Double, longitude: Double)]) {
        self.points = points
        windows = points.map { _ in 28800 }
        prefixes = points.map { _ in "" }
    }
}
