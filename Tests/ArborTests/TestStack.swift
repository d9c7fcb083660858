@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

/// A coordinator over a fresh store file in a temporary directory, with helpers to reopen it.
final class TestStack {
    let directory = TemporaryDirectory("arbor-tests")
    let model: ManagedObjectModel
    var coordinator: PersistentStoreCoordinator
    var store: PersistentStore
    var url: URL { directory.file("store.arbor") }

    /// A stack over a new file; `keyFormat` 1 makes the file older versions wrote;
    /// `cacheBytes` sizes the store's page cache.
    /// `inMemory`: the store is an in-memory store instead of a file.
    init(model: ManagedObjectModel? = nil, keyFormat: UInt8? = nil, cacheBytes: Int? = nil, inMemory: Bool = false) throws {
        let model = try model ?? Fixtures.fullModel()
        self.model = model
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        var options = PersistentStore.Options()
        if let keyFormat { options.keyFormat = keyFormat }
        if let cacheBytes { options.cacheBytes = cacheBytes }
        store = inMemory ? try coordinator.addPersistentStore(with: .inMemory())
            : try coordinator.addPersistentStore(at: directory.file("store.arbor"), options: options)
    }

    deinit { directory.remove() }

    /// A new private-queue context on the current coordinator.
    func context() -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    /// Closes nothing (stores close when released) and opens the file again with a new coordinator.
    func reopen() throws {
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(at: url)
    }
}

/// Reads `value` on `context`'s queue until `done` holds, for at most about 2 s, and returns
/// the last value read: merges from other contexts are scheduled on the queue, not run at once.
func eventually<T>(_ context: ManagedObjectContext, _ value: () -> T, until done: (T) -> Bool) -> T {
    var last = context.performAndWait(value)
    for _ in 0..<200 where !done(last) {
        Thread.sleep(forTimeInterval: 0.01)
        last = context.performAndWait(value)
    }
    return last
}

extension ManagedObjectContext {
    /// Every object of `entityName` as `T`, fetched with `returnsObjectsAsFaults = false`
    /// (call inside `perform`); records an issue for any that arrived as a fault.
    func fetchFilled<T: ManagedObject>(_ entityName: String, as type: T.Type) throws -> [T] {
        var request = FetchRequest(entityName: entityName)
        request.returnsObjectsAsFaults = false
        let objects = try fetch(request, as: type)
        #expect(objects.allSatisfy { !$0.isFault }, "a fetched object arrived as a fault")
        return Array(objects)
    }
}
