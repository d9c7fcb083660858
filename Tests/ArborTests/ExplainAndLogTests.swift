import Arbor
import ArborTestSupport
import Foundation
import Logging
import Testing

/// Collects log messages in memory.
final class CollectingLogHandler: LogHandler, @unchecked Sendable {
    let lock = NSLock()
    private var collected: [String] = []
    var messages: [String] { lock.withLock { collected } }
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lock.withLock { collected.append(event.message.description) }
    }
}

@Suite("Explain hints and the fetch debug log", .serialized)
struct ExplainAndLogTests {
    @Test("a scan that reads many rows for few says which index would help; the debug log shows plans")
    func hintsAndLog() throws {
        let stack = try TestStack()
        let context = stack.context()
        let handler = CollectingLogHandler()
        let previous = ArborLog.fetches
        ArborLog.fetches = Logger(label: "test") { _ in handler }
        defer { ArborLog.fetches = previous }
        try context.performAndWait {
            for index in 0..<2000 {
                let stop = makeStop(context, Int64(index))
                stop.latitude = Double(index)
            }
            try context.save()
            let scan = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude == 5"))
            let statistics = try #require(try context.explain(scan).first)
            #expect(statistics.plan == "SCAN rows.Stop")
            #expect(statistics.suggestion == "scanned 2000 rows for 1; an index on Stop(latitude) would help")
            let narrow = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "longitude >= 0 AND latitude == 5"))
            // The compound index bounds longitude (a range) before latitude (an equality).
            #expect(try context.explain(narrow).first?.suggestion
                    == "index.Stop.by_longitude_latitude narrowed to 2000 rows for 1; an index on Stop(latitude, longitude) would help")
            let good = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier == 5"))
            #expect(try context.explain(good).first?.suggestion == nil)
        }
        #expect(handler.messages.contains { $0.hasPrefix("fetch Stop where latitude == 5: SCAN rows.Stop: examined 2000, matched 1; scanned") })
        #expect(handler.messages.contains { $0.contains("SEARCH index.Stop.unique_identifier") && $0.contains("returned 1 in") })
    }

    @Test("fetches log at the level of the logger last set: silent at .info, logged at .debug")
    func levelOfTheLoggerSet() throws {
        let stack = try TestStack()
        let context = stack.context()
        let handler = CollectingLogHandler()
        let previous = ArborLog.fetches
        defer { ArborLog.fetches = previous }
        // Badges: no other test fetches them, so messages from suites running alongside are told apart.
        func fetchBadges() throws { try context.performAndWait { _ = try context.fetch(FetchRequest(entityName: "Badge")) } }
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .info
        ArborLog.fetches = logger
        try fetchBadges()
        #expect(!handler.messages.contains { $0.hasPrefix("fetch Badge") })
        logger.logLevel = .debug
        ArborLog.fetches = logger
        try fetchBadges()
        #expect(handler.messages.contains { $0.hasPrefix("fetch Badge") && $0.contains("returned 0 in") })
        logger.logLevel = .info
        ArborLog.fetches = logger
        let logged = handler.messages.count
        try fetchBadges()
        #expect(handler.messages.filter { $0.hasPrefix("fetch Badge") }.count == 1 && handler.messages.count >= logged)
    }
}

@Suite("Explain shows every step: the semi-join and its probes, lists summarized")
struct ExplainStepsTests {
    @Test("a SUBQUERY existence condition shows its join, the index it probes and how many candidates it checked")
    func semiJoin() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<20 {
                let stop = Stop(context: context)
                stop.identifier = Int64(index)
                stop.stopID = "S\(index)"
                stop.name = "Stop \(index)"
                stop.latitude = 52.5
                stop.longitude = 13.4
                if index % 2 == 0 {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: 3_600)
                    time.arrivalTime = time.departureTime
                    time.stop = stop
                }
            }
            try context.save()
            let window = "SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count"
            let semi = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude > 52 AND \(window) != 0",
                                                                                      Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 7_200)))
            let statistics = try #require(try context.explain(semi).first)
            #expect(statistics.plan.contains("THEN SEMI-JOIN stopTimes PROBE index.StopTime.by_stop_departureTime"), "\(statistics.plan)")
            #expect(statistics.memberChecks == 20)
            #expect(statistics.rowsMatched == 10)
            #expect(statistics.counts == "examined 20, matched 10, 20 candidates checked by the join")
            let anti = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "\(window) == 0",
                                                                                      Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 7_200)))
            #expect(try context.explain(anti).first?.plan.contains("ANTI-JOIN stopTimes") == true)
            let long = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopID IN %@", (0..<300).map { "S\($0)" }))
            let plan = try #require(try context.explain(long).first?.plan)
            #expect(plan.contains("… 300 values"), "\(plan)")
            #expect(plan.count < 300)
        }
    }
}
