@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Batched results: count at once, objects a batch at a time, LRU release")
struct BatchedFetchTests {
    static func seed(_ stack: TestStack, times: Int) throws {
        let context = stack.context()
        try context.performAndWait {
            let stops = (0..<10).map { makeStop(context, Int64($0)) }
            for index in 0..<times {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(index))
                time.arrivalTime = time.departureTime
                time.stop = stops[index % 10]
            }
            try context.save()
        }
    }

    @Test("the identity map's live entries stay those of the kept batches as a long iteration goes")
    func identityMapStaysSmall() throws {
        let stack = try TestStack()
        try Self.seed(stack, times: 6_000)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime")
            request.fetchBatchSize = 50
            var peak = 0, peakLive = 0
            for (index, time) in try context.fetchResults(request, as: StopTime.self).enumerated() {
                _ = time.departureTime
                if index % 100 == 0 {
                    peak = max(peak, context.registered.entryCount)
                    peakLive = max(peakLive, context.registered.liveObjects.count)
                }
            }
            // Released objects empty their entries at once: the batches kept (at most 4) and the
            // one being read, 50 objects each; emptied entries are swept as the map grows.
            #expect(peakLive <= 5 * 50)
            #expect(peak <= 2 * 2_048 + 1)
        }
    }

    @Test("iterating 2,000 stop times with batch size 50 keeps at most 4 batches alive")
    func boundedIteration() throws {
        let stack = try TestStack()
        try Self.seed(stack, times: 2000)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime")
            request.fetchBatchSize = 50
            stack.store.resetStatistics()
            let results = try context.fetchResults(request, as: StopTime.self)
            #expect(results.count == 2000)
            #expect(stack.store.statistics.rowsRead == 0)  // keys only
            #expect(context.registeredObjects.isEmpty)
            var sum = 0.0
            var peakRegistered = 0
            for (index, time) in results.enumerated() {
                sum += time.departureTime.timeIntervalSince1970
                if index % 50 == 0 { peakRegistered = max(peakRegistered, context.registeredObjects.count) }
            }
            #expect(sum == Double(1999 * 2000 / 2))
            #expect(results.batchesLoaded == 40)
            #expect(peakRegistered <= 4 * 50 + 10)
            #expect(stack.store.statistics.faultsFired == 0)  // batches arrive filled
            // Random access goes back to evicted batches.
            #expect(results[10].departureTime.timeIntervalSince1970 == 10)
            #expect(results.batchesLoaded == 41)
            #expect(results.objectID(at: 5) == results[5].objectID)
        }
    }

    @Test("with a predicate, sort and pending changes the batched result matches fetch")
    func matchesFetch() throws {
        let stack = try TestStack()
        try Self.seed(stack, times: 300)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "departureTime >= %@", Date(timeIntervalSince1970: 100)),
                                       sortDescriptors: [ObjectSortDescriptor("departureTime", ascending: false)])
            request.fetchBatchSize = 16
            let extra = StopTime(context: context)
            extra.departureTime = Date(timeIntervalSince1970: 5000)
            extra.arrivalTime = extra.departureTime
            var unbatched = request
            unbatched.fetchBatchSize = 0
            let expected = try context.fetch(unbatched, as: StopTime.self).map(\.objectID)
            let batched = try context.fetchResults(request, as: StopTime.self)
            #expect(batched.map(\.objectID) == expected)
            #expect(batched.first === extra)
            #expect(batched.count == 201)
        }
    }

    @Test("fetch honours fetchBatchSize: keys at once, objects a batch at a time, as Core Data's executeFetchRequest")
    func fetchIsBatched() throws {
        let stack = try TestStack()
        try Self.seed(stack, times: 500)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop.identifier IN {1, 2, 3}"))
            request.fetchBatchSize = 20
            request.relationshipKeyPathsForPrefetching = ["stop"]
            let results = try context.fetch(request, as: StopTime.self)
            #expect(results.count == 150)
            #expect(results.batchesLoaded == 0 && context.registeredObjects.isEmpty)
            stack.store.resetStatistics()
            #expect(results[25].stop?.identifier ?? -1 >= 1)
            #expect(results.batchesLoaded == 1)
            // The batch arrived filled, with its stops prefetched: no fault fired.
            #expect(stack.store.statistics.faultsFired == 0)
            #expect(Set(results.map { $0.stop?.identifier ?? -1 }) == [1, 2, 3])
            let untyped = try context.fetch(request)
            #expect(untyped.map(\.objectID) == results.map(\.objectID))
        }
    }

    @Test("includesPropertyValues = false: faults, and no row read when the search answers alone")
    func withoutPropertyValues() throws {
        let stack = try TestStack()
        try Self.seed(stack, times: 300)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier IN {1, 3, 5, 70}"))
            request.includesPropertyValues = false
            request.returnsObjectsAsFaults = false  // ignored without property values
            stack.store.resetStatistics()
            let stops = try context.fetch(request, as: Stop.self)
            #expect(stops.count == 3 && stops.allSatisfy(\.isFault))
            #expect(stack.store.statistics.rowsRead == 0)
            #expect(Set(stops.map(\.identifier)) == [1, 3, 5])  // faults fire on access
            // A condition the index cannot answer is still evaluated on the rows.
            request.predicate = try ObjectPredicate(format: "identifier IN {1, 3, 5} AND name ENDSWITH '3'")
            stack.store.resetStatistics()
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == [3])
            #expect(stack.store.statistics.rowsRead > 0)
            // Every stop time, without a predicate: keys only.
            var all = FetchRequest(entityName: "StopTime")
            all.includesPropertyValues = false
            stack.store.resetStatistics()
            #expect(try context.fetch(all).count == 300)
            #expect(stack.store.statistics.rowsRead == 0)
        }
    }
}
