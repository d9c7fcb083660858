import Arbor
import ArborTestSupport
import Foundation
import Observation
import Testing

@Suite("Contexts on their queues: perform, IDs across contexts, conflicts")
struct ContextConcurrencyTests {
    @Test("a background import saves in batches while another context reads; IDs cross contexts")
    func backgroundImportWhileReading() async throws {
        let stack = try TestStack()
        let importer = stack.context()
        let reader = stack.context()
        let stopID: ObjectID = try await importer.perform {
            let stop = makeStop(importer, 1)
            try importer.save()
            return stop.objectID
        }
        async let imported: Int = importer.perform {
            guard let stop = try importer.existingObject(with: stopID) as? Stop else { return 0 }
            var total = 0
            for batch in 0..<20 {
                for minute in 0..<50 {
                    let time = StopTime(context: importer)
                    time.departureTime = Date(timeIntervalSince1970: Double(batch * 50 + minute))
                    time.arrivalTime = time.departureTime
                    time.stop = stop
                    total += 1
                }
                try importer.save()
            }
            return total
        }
        async let observed: [Int] = reader.perform {
            var counts: [Int] = []
            for _ in 0..<40 {
                reader.refreshAllObjects()
                guard let stop = try reader.existingObject(with: stopID) as? Stop else { return counts }
                let times = stop.stopTimes
                // Each save is atomic: a reader sees whole batches, in order.
                counts.append(times.count)
                reader.refresh(stop, mergeChanges: false)
            }
            return counts
        }
        let (total, counts) = try await (imported, observed)
        #expect(total == 1000)
        #expect(counts.allSatisfy { $0 % 50 == 0 })
        #expect(counts == counts.sorted())
        let final: [Double] = try await reader.perform {
            guard let stop = try reader.existingObject(with: stopID) as? Stop else { return [] }
            reader.refresh(stop, mergeChanges: false)
            return stop.stopTimes.map(\.departureTime.timeIntervalSince1970)
        }
        #expect(final == (0..<1000).map(Double.init))
        #expect(stack.store.checkIntegrity().isSound)
    }

    @Test("using an object of another context is reported, not silently accepted")
    func crossContextObjects() throws {
        let stack = try TestStack()
        let first = stack.context()
        let second = stack.context()
        let stop = first.performAndWait { makeStop(first, 1) }
        try second.performAndWait {
            let time = StopTime(context: second)
            time.departureTime = Date()
            time.arrivalTime = Date()
            time.stop = stop
            second.delete(stop)
            let error = try #require(throws: ValidationError.self) { try second.save() }
            #expect(error.failures.contains { $0.kind == .objectFromAnotherContext(stop.objectID) })
        }
    }

    @Test("optimistic locking: a save over a row changed underneath reports both versions")
    func optimisticLockingConflict() throws {
        let stack = try TestStack()
        let setup = stack.context()
        let id: ObjectID = try setup.performAndWait {
            let stop = makeStop(setup, 1)
            try setup.save()
            return stop.objectID
        }
        let a = stack.context(), b = stack.context()
        let stopA = try a.performAndWait { try #require(try a.existingObject(with: id) as? Stop) }
        let stopB = try b.performAndWait { try #require(try b.existingObject(with: id) as? Stop) }
        try a.performAndWait {
            stopA.name = "from a"
            try a.save()
        }
        try b.performAndWait {
            stopB.name = "from b"
            let error = try #require(throws: StoreError.self) { try b.save() }
            #expect(error == .conflicts([SaveConflict(objectID: id, expectedVersion: 1, storedVersion: 2)]))
            // After a refresh that keeps the change, the save goes through.
            b.refresh(stopB, mergeChanges: true)
            #expect(stopB.name == "from b")
            try b.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let stop = try #require(try check.existingObject(with: id) as? Stop)
            #expect(stop.name == "from b")
        }
    }

    @Test("contexts on two queues observe objects of one entity at once; each change fires its own observer")
    func observingOnTwoQueues() async throws {
        // A fresh model: its entities' observation key paths are made by the first observed
        // reads, here on two queues at once (ThreadSanitizer runs this suite).
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let contexts = [stack.context(), stack.context()]
        for context in contexts { context.observesObjects = true }
        async let first = Self.observedChanges(in: contexts[0], objects: 50)
        async let second = Self.observedChanges(in: contexts[1], objects: 50)
        let fired = try await [first, second]
        #expect(fired == [50, 50])
    }

    /// Makes `objects` libraries in `context`, watches each one's rating and changes it: how
    /// many changes the watchers saw.
    private static func observedChanges(in context: ManagedObjectContext, objects: Int) async throws -> Int {
        try await context.perform {
            final class Count: @unchecked Sendable { var value = 0 }  // touched on this queue only
            let count = Count()
            for index in 0..<objects {
                let library = DeclaredLibrary(context: context)
                library.name = "Library \(index)"
                withObservationTracking { _ = library.rating } onChange: { count.value += 1 }
                library.rating = 4
            }
            return count.value
        }
    }
}
