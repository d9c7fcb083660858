@testable import Arbor
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// `BatchInsertRequest`: objects written straight to the store, checked against the same
/// objects inserted through a context.
@Suite struct BatchInsertTests {
    /// The stop times of every stop, in their ordered-relationship order, as plain values.
    static func timetable(_ stack: TestStack) throws -> [[String]] {
        let context = stack.context()
        return try context.performAndWait {
            var request = FetchRequest(entityName: "Stop")
            request.sortDescriptors = [ObjectSortDescriptor("identifier")]
            return try context.fetch(request, as: Stop.self).map { stop in
                stop.stopTimes.map { time in
                    "\(Int(time.arrivalTime.timeIntervalSince1970))/\(Int(time.departureTime.timeIntervalSince1970))/\(time.pickupType)/\(time.dropOffType)"
                }
            }
        }
    }

    static func insertStops(_ stack: TestStack, count: Int) throws -> [ObjectID] {
        let context = stack.context()
        return try context.performAndWait {
            let stops = (0..<count).map { index -> Stop in
                let stop = Stop(context: context)
                stop.identifier = Int64(index)
                stop.stopID = "S\(index)"
                stop.name = "Stop \(index)"
                stop.latitude = 52 + Double(index) / 100
                stop.longitude = 13 + Double(index) / 100
                return stop
            }
            try context.save()
            return stops.map(\.objectID)
        }
    }

    struct Time {
        var arrival: Int, departure: Int, pickup: Int16?, stop: Int
    }

    static func randomTimes(_ count: Int, stops: Int, using random: inout SplitMix64) -> [Time] {
        (0..<count).map { _ in
            let arrival = Int.random(in: 0..<86_400, using: &random)
            return Time(arrival: arrival, departure: arrival + Int.random(in: 0..<120, using: &random),
                        pickup: Bool.random(using: &random) ? Int16.random(in: 0...3, using: &random) : nil,
                        stop: Int.random(in: 0..<stops, using: &random))
        }
    }

    static func insertThroughContext(_ stack: TestStack, _ times: [Time], stops: [ObjectID]) throws {
        let context = stack.context()
        try context.performAndWait {
            for time in times {
                let object = StopTime(context: context)
                object.arrivalTime = Date(timeIntervalSince1970: Double(time.arrival))
                object.departureTime = Date(timeIntervalSince1970: Double(time.departure))
                if let pickup = time.pickup { object.pickupType = pickup }
                object.stop = context.object(with: stops[time.stop]) as? Stop
            }
            try context.save()
        }
    }

    static func request(_ times: [Time], stops: [ObjectID]) -> BatchInsertRequest {
        var iterator = times.makeIterator()
        return BatchInsertRequest(entityName: "StopTime") { object in
            guard let time = iterator.next() else { return true }
            object.setValue(.date(Date(timeIntervalSince1970: Double(time.arrival))), forKey: "arrivalTime")
            object.setValue(Date(timeIntervalSince1970: Double(time.departure)), forKey: "departureTime")
            if let pickup = time.pickup { object.setValue(pickup, forKey: "pickupType") }
            object.setObjectID(stops[time.stop], forKey: "stop")
            return false
        }
    }

    @Test(arguments: 0..<8)
    func batchInsertsStoreWhatContextInsertsStore(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let batched = try TestStack(), reference = try TestStack()
        let stopCount = Int.random(in: 1...12, using: &random)
        let batchedStops = try Self.insertStops(batched, count: stopCount)
        let referenceStops = try Self.insertStops(reference, count: stopCount)
        for round in 0..<6 {
            let times = Self.randomTimes(Int.random(in: 0...60, using: &random), stops: stopCount, using: &random)
            // Batches and context saves interleave on one side: appends continue each other's order.
            if Bool.random(using: &random) {
                let chunk = Int.random(in: 1...9, using: &random)
                let info = try #require(batched.store.model.info(named: "StopTime"))
                let result = try batched.store.btree().batchInsert(info, Self.request(times, stops: batchedStops), chunkSize: chunk)
                #expect(result.count == times.count)
            } else {
                try Self.insertThroughContext(batched, times, stops: batchedStops)
            }
            try Self.insertThroughContext(reference, times, stops: referenceStops)
            #expect(try Self.timetable(batched) == Self.timetable(reference), "seed \(seed), round \(round)")
            try MigrationFixture.expectConsistent(batched.store)
        }
        try batched.reopen()
        #expect(try Self.timetable(batched) == Self.timetable(reference))
    }

    @Test func dictionariesTakeDefaultsAndReturnIDsInOrder() throws {
        let stack = try TestStack()
        var request = BatchInsertRequest(entityName: "Stop", objects: (0..<5).map { index in
            ["identifier": index, "stopID": "S\(index)", "name": "Stop \(index)", "latitude": 52.5, "longitude": 13.4 + Double(index),
             "normalizedName": index == 0 ? NSNull() : "stop \(index)"] as [String: Any]
        })
        request.resultType = .objectIDs
        let result = try stack.coordinator.execute(request)
        #expect(result.count == 5)
        let ids = try #require(result.objectIDs)
        let context = stack.context()
        try context.performAndWait {
            let stops = try ids.map { try #require(try context.existingObject(with: $0) as? Stop) }
            #expect(stops.map(\.identifier) == [0, 1, 2, 3, 4])
            #expect(stops[0].normalizedName == nil && stops[3].normalizedName == "stop 3")
            // Indexes are maintained: the geo index and the normalized name index answer.
            var box = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "longitude BETWEEN {14.9, 15.5}"))
            box.sortDescriptors = [ObjectSortDescriptor("identifier")]
            #expect(try context.fetch(box, as: Stop.self).map(\.identifier) == [2])
            let prefix = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] 'STOP 4'"))
            #expect(try context.fetch(prefix, as: Stop.self).map(\.identifier) == [4])
        }
        let sample = BatchInsertRequest(entityName: "Sample", objects: [[
            "int16": 1, "int32": 2, "int64": 3, "double": 4.0, "float": Float(5), "bool": true, "string": "s",
            "date": Date(timeIntervalSince1970: 0), "data": Data([1]), "uuid": UUID(), "url": URL(fileURLWithPath: "/x"),
            "decimal": Decimal(1),
        ]])
        #expect(try stack.coordinator.execute(sample).count == 1)
        try context.performAndWait {
            let stored = try #require(try context.fetch(FetchRequest(entityName: "Sample"), as: Sample.self).first)
            #expect(stored.withDefault == 42 && stored.optionalInt == nil && stored.int32 == 2)
        }
        try MigrationFixture.expectConsistent(stack.store)
    }

    /// Every problem is reported with the object's position; nothing is stored.
    @Test func invalidObjectsAreReportedAndNothingIsStored() throws {
        let stack = try TestStack()
        let stops = try Self.insertStops(stack, count: 2)
        let context = stack.context()
        let (deleted, temporary) = try context.performAndWait { () -> (ObjectID, ObjectID) in
            let doomed = Stop(context: context)
            doomed.identifier = 99
            doomed.stopID = "gone"
            doomed.name = "Gone"
            doomed.latitude = 0
            doomed.longitude = 0
            try context.save()
            let id = doomed.objectID
            context.delete(doomed)
            try context.save()
            return (id, Stop(context: context).objectID)
        }
        let good: [String: Any] = ["arrivalTime": Date(), "departureTime": Date(), "stop": stops[0]]
        var objects = Array(repeating: good, count: 7)
        objects[1]["colour"] = "red"
        objects[2]["departureTime"] = "noon"
        objects[3]["stop"] = NSNull()
        objects[4]["stop"] = deleted
        objects[5]["stop"] = temporary
        objects[6]["arrivalTime"] = nil
        let problems = try #require(throws: ValidationError.self) {
            try stack.coordinator.execute(BatchInsertRequest(entityName: "StopTime", objects: objects))
        }.failures
        let described = problems.map { "\($0.batchIndex ?? -1) \($0.key) \($0.kind)" }
        #expect(problems.map(\.batchIndex) == [1, 2, 3, 4, 5, 6], "\(described)")
        #expect(problems[0].kind == .invalidValue("the entity has no property \"colour\""))
        #expect(problems[1].kind == .typeMismatch(expected: .date, found: "String"))
        #expect(problems[2].kind == .missingValue && problems[2].key == "stop")
        #expect(problems[3].kind == .danglingReference(deleted))
        #expect(problems[4].kind == .danglingReference(temporary))
        #expect(problems[5].kind == .missingValue && problems[5].key == "arrivalTime")
        #expect(problems[0].description.contains("of batch object 1"))
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "StopTime")) } == 0)

        let toMany = BatchInsertRequest(entityName: "Stop", objects: [["identifier": 5, "stopID": "x", "name": "x", "latitude": 0.0,
                                                                         "longitude": 0.0, "stopTimes": [ObjectID]()]])
        #expect(throws: ValidationError.self) { try stack.coordinator.execute(toMany) }
        #expect(throws: ContextError.self) { try stack.coordinator.execute(BatchInsertRequest(entityName: "Nope", objects: [])) }
        #expect(throws: ValidationError.self) { try stack.coordinator.execute(BatchInsertRequest(entityName: "Vehicle", objects: [[:]])) }
        try MigrationFixture.expectConsistent(stack.store)
    }

    @Test func uniquenessViolationsNameTheObjectAndStoreNothing() throws {
        let stack = try TestStack()
        _ = try Self.insertStops(stack, count: 3)
        func stop(_ identifier: Int, _ stopID: String) -> [String: Any] {
            ["identifier": identifier, "stopID": stopID, "name": "n", "latitude": 0.0, "longitude": 0.0]
        }
        // Against a stored stop, and between two objects of different chunks of one request.
        let info = try #require(stack.store.model.info(named: "Stop"))
        for (objects, position) in [([stop(10, "a"), stop(1, "b")], 1), ([stop(10, "a"), stop(11, "b"), stop(12, "a")], 2)] {
            let error = try #require(throws: ValidationError.self) {
                try stack.store.btree().batchInsert(info, BatchInsertRequest(entityName: "Stop", objects: objects), chunkSize: 2)
            }
            #expect(error.failures.contains { $0.batchIndex == position }, "\(error)")
        }
        let context = stack.context()
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "Stop")) } == 3)
        try MigrationFixture.expectConsistent(stack.store)
    }

    @Test func aThrowingHandlerAbortsTheWholeRequest() throws {
        struct Stopped: Error {}
        let stack = try TestStack()
        let stops = try Self.insertStops(stack, count: 1)
        var produced = 0
        let request = BatchInsertRequest(entityName: "StopTime") { object in
            produced += 1
            if produced == 40 { throw Stopped() }
            object.setValue(.date(Date()), forKey: "arrivalTime")
            object.setValue(.date(Date()), forKey: "departureTime")
            object.setObjectID(stops[0], forKey: "stop")
            return false
        }
        let info = try #require(stack.store.model.info(named: "StopTime"))
        #expect(throws: Stopped.self) { try stack.store.btree().batchInsert(info, request, chunkSize: 8) }
        let context = stack.context()
        #expect(try context.performAndWait { try context.count(for: FetchRequest(entityName: "StopTime")) } == 0)
        // The store still takes writes, with primary keys as if nothing happened.
        try Self.insertThroughContext(stack, [Time(arrival: 1, departure: 2, pickup: nil, stop: 0)], stops: stops)
        #expect(try Self.timetable(stack) == [["1/2/0/0"]])
        try MigrationFixture.expectConsistent(stack.store)
    }
}
