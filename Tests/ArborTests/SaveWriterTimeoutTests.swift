@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

/// `PersistentStore.Options.writerTimeout`: a save that waits longer than it for another
/// writer (here another handle of the file, as another process or an import is) throws
/// `StoreError.engine(.writerBusy)`, writes nothing and keeps the context's changes, so that a
/// later save writes them.
@Suite("Saves with a writer timeout: busy, nothing written, the changes kept")
struct SaveWriterTimeoutTests {
    @Test("a save that times out keeps its changes; the next save writes them")
    func saveKeepsChanges() throws {
        let directory = TemporaryDirectory("arbor-tests")
        let url = directory.file("busy.arbor")
        let model = try Fixtures.fullModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        var options = PersistentStore.Options()
        options.writerTimeout = .milliseconds(200)
        try coordinator.addPersistentStore(at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let saved = try context.performAndWait {
            let stop = Stop(context: context)
            (stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude) = (1, "S1", "Alex", 52.5, 13.4)
            try context.save()
            return stop.objectID
        }

        // Another writer of the file (a process, an import) holds the writer lock.
        let other = try Database.open(path: url.path)
        let transaction = try other.beginWrite()
        try context.performAndWait {
            let inserted = Stop(context: context)
            (inserted.identifier, inserted.stopID, inserted.name, inserted.latitude, inserted.longitude) = (2, "S2", "Zoo", 52.6, 13.3)
            let existing = try #require(try context.existingObject(with: saved) as? Stop)
            existing.name = "Alexanderplatz"
            #expect(throws: StoreError.engine(.writerBusy(path: url.path, waited: .milliseconds(200)))) { try context.save() }
            #expect(context.hasChanges)
            #expect(inserted.isInserted && inserted.objectID.isTemporaryID)
            #expect(existing.isUpdated)
        }
        // Nothing reached the store.
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let names = try reader.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map(\.name)
            #expect(names == ["Alex"])
        }
        // A batch request gives up the same way, and changes nothing.
        context.performAndWait {
            let rename = BatchUpdateRequest(entityName: "Stop", predicate: nil, propertiesToUpdate: ["name": .value(.string("Renamed"))])
            #expect(throws: StoreError.engine(.writerBusy(path: url.path, waited: .milliseconds(200)))) { try context.execute(rename) }
            #expect(throws: StoreError.engine(.writerBusy(path: url.path, waited: .milliseconds(200)))) {
                try context.execute(BatchDeleteRequest(entityName: "Stop", predicate: nil))
            }
        }
        let unchanged = try reader.performAndWait {
            reader.reset()
            return try reader.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map(\.name)
        }
        #expect(unchanged == ["Alex"])
        transaction.abort()
        try context.performAndWait {
            try context.save()
            #expect(!context.hasChanges)
        }
        try reader.performAndWait {
            reader.reset()
            let names = try reader.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map(\.name).sorted()
            #expect(names == ["Alexanderplatz", "Zoo"])
        }
    }

    @Test("replacing a store waits for its writer lock at most the store's writer timeout, then replaces nothing")
    func replaceGivesUp() throws {
        let directory = TemporaryDirectory("arbor-tests")
        let url = directory.file("destination.arbor"), sourceURL = directory.file("source.arbor")
        let model = try Fixtures.fullModel()
        func store(_ url: URL, _ name: String, timeout: Duration?) throws -> PersistentStoreCoordinator {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            var options = PersistentStore.Options()
            options.writerTimeout = timeout
            try coordinator.addPersistentStore(at: url, options: options)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let stop = Stop(context: context)
                (stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude) = (1, "S1", name, 52.5, 13.4)
                try context.save()
            }
            return coordinator
        }
        func names(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            return try context.performAndWait { try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map(\.name) }
        }
        let coordinator = try store(url, "Old", timeout: .milliseconds(150))
        _ = try store(sourceURL, "New", timeout: nil)

        let other = try Database.open(path: url.path)
        let transaction = try other.beginWrite()
        #expect(throws: StoreError.engine(.writerBusy(path: url.path, waited: .milliseconds(150)))) {
            try coordinator.replacePersistentStore(at: url, withStoreAt: sourceURL)
        }
        #expect(try names(coordinator) == ["Old"])
        transaction.abort()
        try coordinator.replacePersistentStore(at: url, withStoreAt: sourceURL)
        #expect(try names(coordinator) == ["New"])
    }
}
