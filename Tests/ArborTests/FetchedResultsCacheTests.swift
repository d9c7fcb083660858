import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("FetchedResultsController section cache: reuse and invalidation")
struct FetchedResultsCacheTests {
    static let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")])

    static func controller(_ context: ManagedObjectContext, _ cacheName: String, request: FetchRequest = request) -> FetchedResultsController<Stop> {
        let controller = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "name",
                                                        cacheName: cacheName)
        controller.sectionName = FetchedResultsControllerTests.firstLetter
        return controller
    }

    @Test("the cache is reused while request and data are unchanged, and invalidated by a save, another request or deleteCache")
    func reuseAndInvalidation() throws {
        let stack = try TestStack()
        let context = stack.context()
        let name = "stops-\(UUID().uuidString)"
        defer { FetchedResultsControllerBase.deleteCache(withName: name) }
        try context.performAndWait {
            for (index, stop) in ["Alpha", "Beta", "Bravo", "Gamma"].enumerated() { _ = FetchedResultsControllerTests.stop(context, stop, Int64(index)) }
            try context.save()
            let first = Self.controller(context, name)
            try first.performFetch()
            #expect(!first.lastFetchUsedCache)
            let second = Self.controller(context, name)
            try second.performFetch()
            #expect(second.lastFetchUsedCache)
            #expect(second.sections?.map(\.name) == ["A", "B", "G"])
            #expect(second.fetchedObjectIDs == first.fetchedObjectIDs)
            #expect(second.fetchedObjects?.map(\.name) == ["Alpha", "Beta", "Bravo", "Gamma"])

            // Data changed: detected by the store's version, not assumed.
            _ = FetchedResultsControllerTests.stop(context, "Delta", 9)
            try context.save()
            let afterSave = Self.controller(context, name)
            try afterSave.performFetch()
            #expect(!afterSave.lastFetchUsedCache)
            #expect(afterSave.sections?.map(\.name) == ["A", "B", "D", "G"])

            // Another request under the same name.
            var descending = Self.request
            descending.sortDescriptors = [ObjectSortDescriptor("name", ascending: false)]
            let other = Self.controller(context, name, request: descending)
            try other.performFetch()
            #expect(!other.lastFetchUsedCache)
            #expect(other.sections?.map(\.name) == ["G", "D", "B", "A"])

            // Unsaved changes in the context: the cache is neither used nor written.
            _ = FetchedResultsControllerTests.stop(context, "Epsilon", 10)
            let pending = Self.controller(context, name, request: descending)
            try pending.performFetch()
            #expect(!pending.lastFetchUsedCache)
            #expect(pending.sections?.map(\.name) == ["G", "E", "D", "B", "A"])
            context.rollback()

            let reused = Self.controller(context, name, request: descending)
            try reused.performFetch()
            #expect(reused.lastFetchUsedCache)
            FetchedResultsControllerBase.deleteCache(withName: name)
            let deleted = Self.controller(context, name, request: descending)
            try deleted.performFetch()
            #expect(!deleted.lastFetchUsedCache)
        }
    }

    @Test("a damaged cache file is ignored and rewritten")
    func damagedCache() throws {
        let stack = try TestStack()
        let context = stack.context()
        let name = "damaged-\(UUID().uuidString)"
        defer { FetchedResultsControllerBase.deleteCache(withName: name) }
        try context.performAndWait {
            _ = FetchedResultsControllerTests.stop(context, "Alpha", 1)
            try context.save()
            try Self.controller(context, name).performFetch()
            let file = FetchedResultsControllerBase.cacheDirectory.appendingPathComponent(name + ".frccache")
            var bytes = try [UInt8](Data(contentsOf: file))
            #expect(bytes.count > 20)
            var random = SplitMix64(seed: 3)
            for trial in 0..<40 {
                var damaged = bytes
                if trial % 2 == 0 {
                    damaged[Int(random.next() % UInt64(damaged.count))] ^= UInt8(1 + random.next() % 255)
                } else {
                    damaged = Array(damaged.prefix(Int(random.next() % UInt64(damaged.count))))
                }
                try Data(damaged).write(to: file)
                let controller = Self.controller(context, name)
                try controller.performFetch()
                #expect(controller.fetchedObjects?.map(\.name) == ["Alpha"])
            }
            bytes = try [UInt8](Data(contentsOf: file))
            #expect(!bytes.isEmpty)
        }
    }

    @Test("differences arrive as an asynchronous sequence")
    func differencesStream() async throws {
        let stack = try TestStack()
        let context = stack.context()
        let controller = try await context.perform { () throws -> UncheckedBox<FetchedResultsController<Stop>> in
            _ = FetchedResultsControllerTests.stop(context, "Alpha", 1)
            try context.save()
            let controller = Self.controller(context, "unused-\(UUID().uuidString)")
            try controller.performFetch()
            return UncheckedBox(controller)
        }
        let stream = controller.value.differences
        let listener = Task { () -> FetchedResultsDifference? in
            for await difference in stream { return difference }
            return nil
        }
        try await context.perform {
            _ = FetchedResultsControllerTests.stop(context, "Beta", 2)
        }
        let difference = await listener.value
        #expect(difference?.sectionChanges == [FetchedSectionChange(name: "B", type: .insert, index: 1)])
        #expect(difference?.objectChanges.map(\.type) == [.insert])
        #expect(difference?.objectChanges.first?.newIndexPath == IndexPath(indexes: [1, 0]))
        #expect(difference?.sectionNames == ["A", "B"])
        _ = controller
    }
}

/// Carries a value confined to a context's queue out of `perform` (used only on that queue).
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
