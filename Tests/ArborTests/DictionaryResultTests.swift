import Arbor
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Dictionary results: properties, grouping, aggregates, having, distinct")
struct DictionaryResultTests {
    static func seed(_ stack: TestStack) throws -> [ObjectID] {
        let context = stack.context()
        return try context.performAndWait {
            let stops = (1...4).map { makeStop(context, Int64($0)) }
            stops[3].name = stops[2].name
            for (index, stop) in stops.enumerated() {
                for minute in 0..<(index + 1) {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: Double(100 * index + minute))
                    time.arrivalTime = time.departureTime
                    time.pickupType = Int16(minute % 2)
                    time.stop = stop
                }
            }
            try context.save()
            return stops.map(\.objectID)
        }
    }

    /// Stop times per stop: the count ("n") grouped by stop.
    static var countPerStop: FetchRequest {
        var request = FetchRequest(entityName: "StopTime")
        request.propertiesToGroupBy = ["stop"]
        request.propertiesToFetch = [.key("stop"), .expression("n", .count, of: "SELF")]
        return request
    }

    /// The dictionaries of `request`, checked to come from index entries alone (no row read).
    static func fromForeignKey(_ request: FetchRequest, _ stack: TestStack, _ context: ManagedObjectContext) throws -> [[String: Any]] {
        stack.store.resetStatistics()
        let rows = try context.fetchDictionaries(request)
        #expect(stack.store.statistics.rowsRead == 0)
        return rows
    }

    @Test("count of stop times per stop, with having and a sort")
    func countPerStop() throws {
        let stack = try TestStack()
        let stops = try Self.seed(stack)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime", sortDescriptors: [ObjectSortDescriptor("stop.identifier", ascending: false)])
            request.resultType = .dictionaries
            request.propertiesToGroupBy = ["stop"]
            request.propertiesToFetch = [.key("stop"), .expression("times", .count, of: "SELF"),
                                         .expression("latest", .max, of: "departureTime"), .expression("pickups", .sum, of: "pickupType")]
            let rows = try context.fetchDictionaries(request)
            #expect(rows.count == 4)
            #expect(rows.map { $0["stop"] as? ObjectID } == stops.reversed().map { Optional($0) })
            #expect(rows.map { $0["times"] as? Int64 } == [4, 3, 2, 1])
            #expect(rows.map { $0["pickups"] as? Int64 } == [2, 1, 1, 0])
            #expect((rows.first?["latest"] as? Date)?.timeIntervalSince1970 == 303)
            request.havingPredicate = try ObjectPredicate(format: "times >= 2 AND pickups < 2")
            #expect(try context.fetchDictionaries(request).map { $0["times"] as? Int64 } == [3, 2])
            request.fetchLimit = 1
            request.fetchOffset = 1
            #expect(try context.fetchDictionaries(request).map { $0["times"] as? Int64 } == [2])
            guard case .dictionaries(let viaExecute) = try context.executeFetch(request) else {
                Issue.record("expected dictionaries")
                return
            }
            #expect(viaExecute.count == 1)
        }
    }

    @Test("counts per stop from the foreign-key index equal the grouped scan")
    func countsFromForeignKey() throws {
        let stack = try TestStack()
        let stops = try Self.seed(stack)
        let context = stack.context()
        try context.performAndWait {
            var request = Self.countPerStop
            let fast = try Self.fromForeignKey(request, stack, context)
            request.sortDescriptors = [ObjectSortDescriptor("stop.identifier")]
            let scanned = try context.fetchDictionaries(request)
            #expect(fast.map { $0["stop"] as? ObjectID } == stops.map { Optional($0) })
            #expect(fast.map { $0["n"] as? Int64 } == scanned.map { $0["n"] as? Int64 })
            #expect(fast.map { $0["n"] as? Int64 } == [1, 2, 3, 4])
        }
    }

    @Test("counts per stop from the foreign-key index equal a count of each stop's times", arguments: [1, 2, 3] as [UInt64])
    func countsFromForeignKeyRandom(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let stack = try TestStack()
        let context = stack.context()
        // 400 stops, so that owner keys take one byte and then two; times inserted in random
        // order, some deleted, some stops left without any.
        let expected: [ObjectID: Int64] = try context.performAndWait {
            let stops = (1...400).map { makeStop(context, Int64($0)) }
            var times: [StopTime] = []
            for stop in stops.shuffled(using: &random) {
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: Double(times.count))
                    time.arrivalTime = time.departureTime
                    time.stop = stop
                    times.append(time)
                }
            }
            try context.save()
            var counts: [ObjectID: Int64] = [:]
            for time in times {
                if Int.random(in: 0..<5, using: &random) == 0 {
                    context.delete(time)
                } else if let stop = time.stop {
                    counts[stop.objectID, default: 0] += 1
                }
            }
            try context.save()
            return counts
        }
        try context.performAndWait {
            let rows = try Self.fromForeignKey(Self.countPerStop, stack, context)
            var counted: [ObjectID: Int64] = [:]
            for row in rows { if let stop = row["stop"] as? ObjectID { counted[stop] = row["n"] as? Int64 } }
            #expect(counted == expected)
            #expect(rows.count == expected.count)
        }
    }

    @Test("plain properties, distinct values, aggregates over everything")
    func propertiesAndDistinct() throws {
        let stack = try TestStack()
        _ = try Self.seed(stack)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("identifier")])
            request.resultType = .dictionaries
            request.propertiesToFetch = [.key("name")]
            #expect(try context.fetchDictionaries(request).count == 4)
            request.returnsDistinctResults = true
            #expect(try context.fetchDictionaries(request).compactMap { $0["name"] as? String } == ["Stop 1", "Stop 2", "Stop 3"])
            var totals = FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "pickupType == 0"))
            totals.resultType = .dictionaries
            totals.propertiesToFetch = [.expression("n", .count, of: "SELF"), .expression("avg", .avg, of: "departureTime")]
            let all = try context.fetchDictionaries(totals)
            #expect(all.count == 1)
            #expect(all.first?["n"] as? Int64 == 6)
            #expect(throws: ObjectPredicateError.self) {
                var bad = FetchRequest(entityName: "StopTime")
                bad.propertiesToGroupBy = ["stop"]
                bad.propertiesToFetch = [.key("departureTime")]
                _ = try context.fetchDictionaries(bad)
            }
            var count = FetchRequest(entityName: "StopTime")
            count.resultType = .count
            guard case .count(let n) = try context.executeFetch(count) else { return }
            #expect(n == 10)
        }
    }
}
