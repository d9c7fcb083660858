import Arbor
import ArborEngine
import Foundation
import Testing

/// Collects a context's `ObjectsDidChange` deliveries (made on its queue).
private final class Deliveries: @unchecked Sendable {
    var all: [ObjectsDidChange] = []
    var last: ObjectsDidChange? { all.last }
}

@Suite("objectsDidChange: what changed in a context, by kind, as Core Data posts it")
struct ObjectsDidChangeTests {
    private func observed() throws -> (TestStack, ManagedObjectContext, Deliveries, ChangeObservation) {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        let deliveries = Deliveries()
        let observation = context.addObjectsDidChangeObserver { deliveries.all.append($0) }
        return (stack, context, deliveries, observation)
    }

    @Test("inserts, updates and deletes are delivered at the end of each perform, by kind")
    func kinds() throws {
        let (_, context, deliveries, observation) = try observed()
        let library = context.performAndWait { DeclaredLibrary(context: context) }
        let id = context.performAndWait { library.objectID }
        #expect(deliveries.all.count == 1)
        #expect(deliveries.last?.inserted == [id])
        #expect(deliveries.last?.updated == [])

        context.performAndWait { library.name = "AGB" }
        #expect(deliveries.last?.updated == [id])
        #expect(deliveries.last?.inserted == [])

        context.performAndWait { context.delete(library) }
        #expect(deliveries.last?.deleted == [id])
        #expect(deliveries.all.count == 3)

        context.performAndWait {}  // nothing changed: nothing delivered
        #expect(deliveries.all.count == 3)
        observation.cancel()
        context.performAndWait { _ = DeclaredLibrary(context: context) }
        #expect(deliveries.all.count == 3)
    }

    @Test("an object inserted and deleted between deliveries is in none; one inserted then changed is inserted")
    func netEffect() throws {
        let (_, context, deliveries, observation) = try observed()
        context.performAndWait {
            let gone = DeclaredLibrary(context: context)
            context.delete(gone)
            let kept = DeclaredLibrary(context: context)
            kept.name = "Stabi"
            context.processPendingChanges()
            #expect(deliveries.last?.inserted == [kept.objectID])
            #expect(deliveries.last?.deleted == [])
            #expect(deliveries.last?.updated == [])
        }
        withExtendedLifetime(observation) {}
    }

    @Test("a save delivers the permanent IDs of the objects it inserted")
    func permanentIDs() throws {
        let (_, context, deliveries, observation) = try observed()
        try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            let temporary = library.objectID
            try context.save()
            #expect(deliveries.last?.permanentIDs == [temporary: library.objectID])
        }
        withExtendedLifetime(observation) {}
    }

    @Test("refresh, rollback and reset: refreshed, rolled-back inserts deleted, invalidated all")
    func discards() throws {
        let (_, context, deliveries, observation) = try observed()
        try context.performAndWait {
            let saved = DeclaredLibrary(context: context)
            saved.name = "AGB"
            try context.save()
            context.refresh(saved, mergeChanges: false)
            context.processPendingChanges()
            #expect(deliveries.last?.refreshed == [saved.objectID])

            saved.name = "changed"
            context.processPendingChanges()
            let inserted = DeclaredLibrary(context: context)
            context.processPendingChanges()
            context.rollback()
            context.processPendingChanges()
            #expect(deliveries.last?.deleted == [inserted.objectID])
            #expect(deliveries.last?.refreshed == [saved.objectID])

            context.reset()
            context.processPendingChanges()
            #expect(deliveries.last?.invalidatedAll == true)
        }
        withExtendedLifetime(observation) {}
    }

    @Test("a merged save from another context delivers its inserts, updates and deletes")
    func mergedSave() throws {
        let (stack, context, deliveries, observation) = try observed()
        let (kept, doomed) = try context.performAndWait {
            let kept = DeclaredLibrary(context: context), doomed = DeclaredLibrary(context: context)
            kept.name = "kept"
            doomed.name = "doomed"
            try context.save()
            return (kept.objectID, doomed.objectID)
        }
        let saves = Locked<[ContextDidSave]>([])
        let saveObservation = stack.coordinator.addDidSaveObserver { note in saves.withLock { $0.append(note) } }
        let other = stack.context()
        let added = try other.performAndWait {
            try other.existingObject(with: kept).setValue("renamed", forKey: "name")
            other.delete(try other.existingObject(with: doomed))
            let added = DeclaredLibrary(context: other)
            added.name = "added"
            try other.save()
            return added.objectID
        }
        saveObservation.cancel()
        let note = try #require(saves.withLock { $0.first })
        context.performAndWait { context.mergeChanges(fromContextDidSave: note) }
        #expect(deliveries.last?.updated == [kept])
        #expect(deliveries.last?.deleted == [doomed])
        #expect(deliveries.last?.inserted == [added])
        withExtendedLifetime(observation) {}
    }

    @Test("the asynchronous sequence delivers the same changes")
    func asyncSequence() async throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        var changes = context.objectsDidChangeNotifications.makeAsyncIterator()
        let id = context.performAndWait { DeclaredLibrary(context: context).objectID }
        let first = await changes.next()
        #expect(first?.inserted == [id])
    }
}
