import Arbor
import ArgumentParser
import Foundation

/// Hidden: one transit query repeated on an existing (or newly imported) Arbor store, for
/// profiling with `perf` or `valgrind --tool=callgrind` without the import in the profile.
struct TransitProfile: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "transit-profile", shouldDisplay: false)
    @Option var data = "/tmp/transit"
    @Option var path = NSTemporaryDirectory() + "arbor-profile.arbor"
    @Option(help: "geo80, geo800, empty (a box off the map: the fixed cost of a fetch), subquery, prefix, normalized, iterate, count, import") var query = "geo80"
    @Option var repeats = 1000
    @Option(name: .customLong("max-stop-times")) var maxStopTimes = Int.max
    @Flag(help: "Declare the compound (stop, departureTime) index (use a separate --path).") var compound = false
    @Option(name: .customLong("cache-mib"), help: "Page cache of the store opened for the queries.") var cacheMiB = 64
    @Option(help: "Also run the query on this SQLite file (made by `transit`) and print both medians and their ratio.") var sqlite: String?
    @Option(name: .customLong("iterate-first-arbor"), help: "Before the queries, iterate every stop time of this Arbor store twice, as `transit` does before its compound rows (the process's heap as it leaves it).") var iterateFirstArbor: String?
    @Option(name: .customLong("iterate-first-sqlite"), help: "The same with this SQLite file (made by `transit`).") var iterateFirstSQLite: String?
    @Option(help: "With --sqlite: the two sides take turns, this many queries each, as `transit` runs them (each side's turn starts with the CPU caches holding the other's data).") var interleave: Int?

    func validate() throws {
        if interleave != nil, sqlite == nil { throw ValidationError("--interleave takes turns with SQLite: give --sqlite too") }
        if let interleave, interleave < 1 { throw ValidationError("--interleave is the number of queries in a turn: at least 1") }
    }

    func run() throws {
        if query == "import" { try? FileManager.default.removeItem(atPath: path) }
        let exists = FileManager.default.fileExists(atPath: path)
        // Queries need only the stops: the stop times are read for an import alone.
        let feed = try TransitFeed(directory: data, limit: exists ? 1 : maxStopTimes)
        var built: ArborTransitSide?
        if !exists {
            let seconds = try Clock.seconds { built = try ArborTransitSide.build(path: path, feed: feed, compound: compound) }
            print(String(format: "imported in %.2f s", seconds))
            if query == "import" { return }
        }
        let side = try (cacheMiB == 64 ? built : nil) ?? ArborTransitSide(path: path, compound: compound, cacheMiB: cacheMiB)
        let points = QueryPoints(feed: feed, count: repeats, seed: 42)
        if query.hasPrefix("geo") {
            let context = side.container.newBackgroundContext()
            try context.performAndWait {
                for index in 0..<3 {
                    let box = QueryPoints.box(points.points[index], meters: query == "geo80" ? 80 : 800)
                    for statistics in try context.explain(try side.geoRequest.request(ArborTransitSide.box(box))) {
                        print("\(statistics.plan): examined \(statistics.rowsExamined), matched \(statistics.rowsMatched)")
                    }
                }
            }
        }
        // Kept open until the end, as `transit` keeps its first stores (and their page caches).
        let earlierArbor = try iterateFirstArbor.map { try ArborTransitSide(path: $0, compound: false) }
        let earlierSQLite = try iterateFirstSQLite.map { try SQLiteTransitSide(path: $0) }
        defer { withExtendedLifetime((earlierArbor, earlierSQLite)) {} }
        for _ in 0..<2 {
            _ = try earlierArbor?.iterate()
            _ = try earlierSQLite?.iterate()
        }
        var latencies: [Double] = []
        switch query {
        case "iterate":
            latencies = [try Clock.seconds { _ = try side.iterate() } * 1000]
            Memory.resetPeak()
            let before = Memory.residentMiB
            _ = try side.iterate()
            print(String(format: "iterate: peak memory growth in a second pass %.1f MiB", Memory.peakMiB - before))
        case "count": latencies = [try Clock.seconds { _ = try side.countPerStop() } * 1000]
        default:
            if let sqlite, let interleave {
                // Turns as `transit` takes them: a block each, the first side alternating.
                let other = try SQLiteTransitSide(path: sqlite)
                var sqliteLatencies: [Double] = []
                for (turn, start) in stride(from: 0, to: points.points.count, by: interleave).enumerated() {
                    let part = points.slice(start..<min(start + interleave, points.points.count))
                    func runArbor() throws { latencies += try Self.latencies(query, on: side, points: part) }
                    func runSQLite() throws { sqliteLatencies += try Self.latencies(query, on: other, points: part) }
                    if turn % 2 == 0 { try runArbor(); try runSQLite() } else { try runSQLite(); try runArbor() }
                }
                Self.report(query, latencies, sqliteLatencies)
                return
            }
            latencies = try Self.latencies(query, on: side, points: points)
        }
        // The same queries on SQLite's side, for a quick ratio without the whole benchmark.
        let other = try sqlite.map { try Self.latencies(query, on: SQLiteTransitSide(path: $0), points: points) }
        Self.report(query, latencies, other)
    }

    /// Prints Arbor's median, p95 and total, and with `sqlite` SQLite's and the ratio of medians.
    static func report(_ query: String, _ latencies: [Double], _ sqlite: [Double]?) {
        print(String(format: "%@: median %.4f ms, p95 %.4f ms, total %.1f ms", query, Clock.median(latencies),
                     Clock.percentile(latencies, 0.95), latencies.reduce(0, +)))
        guard let sqlite else { return }
        print(String(format: "sqlite %@: median %.4f ms, p95 %.4f ms; ratio of medians %.2fx", query, Clock.median(sqlite),
                     Clock.percentile(sqlite, 0.95), Clock.median(sqlite) / Clock.median(latencies)))
    }

    /// The latencies of the queries of kind `query` (those both sides answer) on `side`.
    static func latencies(_ query: String, on side: some TransitQuerySide, points: QueryPoints) throws -> [Double] {
        switch query {
        case "geo80": return try side.geo(points, meters: 80).latencies
        case "geo800": return try side.geo(points, meters: 800).latencies
        case "empty":
            var offMap = points
            offMap.points = offMap.points.map { _ in (latitude: 0, longitude: 0) }
            return try side.geo(offMap, meters: 80).latencies
        case "subquery": return try side.subquery(points).latencies
        case "prefix": return try side.prefix(points, normalizedAttribute: false).latencies
        case "normalized": return try side.prefix(points, normalizedAttribute: true).latencies
        case "geo80-values": return try side.geoValues(points, meters: 80).latencies
        case "geo800-values": return try side.geoValues(points, meters: 800).latencies
        case "subquery-values": return try side.subqueryValues(points).latencies
        case "prefix-values": return try side.prefixValues(points, normalizedAttribute: false).latencies
        case "normalized-values": return try side.prefixValues(points, normalizedAttribute: true).latencies
        case "normalized-dictionaries": return try side.prefixDictionaries(points).latencies
        default: throw ValidationError("unknown query \(query)")
        }
    }
}

/// The queries both sides of the transit benchmark answer, each returning per-query
/// latencies (ms) and a checksum of what was read.
protocol TransitQuerySide {
    func geo(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int)
    func subquery(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int)
    func prefix(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int)
    func geoValues(_ points: QueryPoints, meters: Double) throws -> (latencies: [Double], checksum: Int)
    func subqueryValues(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int)
    func prefixValues(_ points: QueryPoints, normalizedAttribute: Bool) throws -> (latencies: [Double], checksum: Int)
    func prefixDictionaries(_ points: QueryPoints) throws -> (latencies: [Double], checksum: Int)
}

extension ArborTransitSide: TransitQuerySide {}
extension SQLiteTransitSide: TransitQuerySide {}
