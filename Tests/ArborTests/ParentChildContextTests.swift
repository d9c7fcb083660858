import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Child contexts: reading through the parent, saving into it")
struct ParentChildContextTests {
    static let byName = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")])

    static func names(_ context: ManagedObjectContext, _ request: FetchRequest = byName) throws -> [String] {
        try context.performAndWait { try context.fetch(request, as: Stop.self).map(\.name) }
    }

    /// A store with stops Alpha (1), Beta (2) and Gamma (3); returns their IDs.
    static func seed(_ stack: TestStack) throws -> [ObjectID] {
        let context = stack.context()
        return try context.performAndWait {
            let stops = [("Alpha", 1), ("Beta", 2), ("Gamma", 3)].map { ContextMergeTests.makeStop(context, $0.0, Int64($0.1)) }
            try context.save()
            return stops.map(\.objectID)
        }
    }

    @Test("a child's faults and fetches see the parent's unsaved inserts, updates and deletes")
    func childSeesParentChanges() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let parent = stack.context()
        try parent.performAndWait {
            (try parent.existingObject(with: ids[0]) as? Stop)?.name = "Aardvark"
            parent.delete(try parent.existingObject(with: ids[2]))
            _ = ContextMergeTests.makeStop(parent, "Delta", 4)
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        #expect(child.parent === parent)
        #expect(try Self.names(child) == ["Aardvark", "Beta", "Delta"])
        var prefixed = Self.byName
        prefixed.predicate = try ObjectPredicate(format: "name BEGINSWITH %@", "A")
        #expect(try Self.names(child, prefixed) == ["Aardvark"])
        try child.performAndWait {
            #expect((try child.existingObject(with: ids[0]) as? Stop)?.name == "Aardvark")
            #expect(throws: ContextError.objectNotFound(ids[2])) { try child.existingObject(with: ids[2]) }
            #expect(try child.count(for: Self.byName) == 3)
            let batched = try child.fetchResults(Self.byName, as: Stop.self)
            #expect(batched.map(\.name) == ["Aardvark", "Beta", "Delta"])
        }
        // The store and other root contexts still have the saved state.
        #expect(try Self.names(stack.context()) == ["Alpha", "Beta", "Gamma"])
    }

    @Test("saving a child pushes into its parent only; the parent's save writes it to the store")
    func childSavePushesIntoParent() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let parent = stack.context()
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let storeSaves = Locked(0)
        let observation = stack.coordinator.addDidSaveObserver { _ in storeSaves.withLock { $0 += 1 } }
        defer { observation.cancel() }
        let deltaID = try child.performAndWait { () throws -> ObjectID in
            (try child.existingObject(with: ids[1]) as? Stop)?.name = "Bravo"
            child.delete(try child.existingObject(with: ids[2]))
            let delta = ContextMergeTests.makeStop(child, "Delta", 4)
            let time = StopTime(context: child)
            time.departureTime = Date(timeIntervalSince1970: 3_600)
            time.arrivalTime = time.departureTime
            time.stop = delta
            try child.save()
            #expect(!child.hasChanges)
            #expect(delta.objectID.isTemporaryID)
            return delta.objectID
        }
        #expect(storeSaves.withLock { $0 } == 0)
        #expect(try Self.names(stack.context()) == ["Alpha", "Beta", "Gamma"])
        try parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(parent.insertedObjects.count == 2 && parent.deletedObjects.map(\.objectID) == [ids[2]])
            #expect(parent.updatedObjects.map(\.objectID) == [ids[1]])
            let delta = try #require(parent.registeredObject(for: deltaID) as? Stop)
            #expect(delta.stopTimes.count == 1 && delta.stopTimes.first?.stop === delta)
            try parent.save()
        }
        #expect(storeSaves.withLock { $0 } == 1)
        #expect(try Self.names(stack.context()) == ["Alpha", "Bravo", "Delta"])
        let reader = stack.context()
        try reader.performAndWait {
            let delta = try #require(try reader.fetch(Self.byName, as: Stop.self).last)
            #expect(delta.stopTimes.map(\.departureTime) == [Date(timeIntervalSince1970: 3_600)])
        }
    }

    @Test("a grandchild saves into the child, the child into the root, the root into the store")
    func nestedThreeLevels() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let root = stack.context()
        let middle = ManagedObjectContext(concurrencyType: .privateQueue, parent: root)
        let leaf = ManagedObjectContext(concurrencyType: .privateQueue, parent: middle)
        try middle.performAndWait { (try middle.existingObject(with: ids[0]) as? Stop)?.latitude = 10 }
        try leaf.performAndWait {
            let alpha = try #require(try leaf.existingObject(with: ids[0]) as? Stop)
            #expect(alpha.latitude == 10)  // the middle context's unsaved change
            alpha.name = "Alpine"
            try leaf.save()
        }
        #expect(try Self.names(root) == ["Alpha", "Beta", "Gamma"])
        try middle.performAndWait { try middle.save() }
        #expect(try Self.names(root) == ["Alpine", "Beta", "Gamma"])
        #expect(try Self.names(stack.context()) == ["Alpha", "Beta", "Gamma"])
        try root.performAndWait { try root.save() }
        let reader = stack.context()
        try reader.performAndWait {
            let alpha = try #require(try reader.existingObject(with: ids[0]) as? Stop)
            #expect(alpha.name == "Alpine")
            #expect(alpha.latitude == 10)
        }
    }

    @Test("a child that fails validation pushes nothing")
    func validationFailureLeavesParentUnchanged() throws {
        let stack = try TestStack()
        _ = try Self.seed(stack)
        let parent = stack.context()
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        child.performAndWait {
            let stop = Stop(context: child)  // name, stopID, identifier missing
            stop.latitude = 1
            #expect(throws: ValidationError.self) { try child.save() }
            #expect(child.hasChanges)
        }
        #expect(parent.performAndWait { parent.hasChanges } == false)
    }

    @Test("rolling back a child goes back to the parent's state, not the store's")
    func rollbackToParentState() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let parent = stack.context()
        try parent.performAndWait { (try parent.existingObject(with: ids[0]) as? Stop)?.name = "Parent's" }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            let alpha = try #require(try child.existingObject(with: ids[0]) as? Stop)
            alpha.name = "Child's"
            child.rollback()
            #expect(alpha.name == "Parent's")
        }
    }

    @Test("objects a child pushed keep working after the parent's save gives them permanent IDs")
    func permanentIDsAfterParentSave() throws {
        let stack = try TestStack()
        let parent = stack.context()
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        child.performAndWait { child.automaticallyMergesChangesFromParent = true }
        let (stop, temporary) = try child.performAndWait { () throws -> (Stop, ObjectID) in
            let stop = ContextMergeTests.makeStop(child, "Echo", 5)
            try child.save()
            return (stop, stop.objectID)
        }
        try parent.performAndWait { try parent.save() }
        // The merge is scheduled on the child's queue; wait until the child knows the new ID.
        let permanent = eventually(child, { stop.objectID }, until: { !$0.isTemporaryID })
        #expect(permanent != temporary && !permanent.isTemporaryID)
        try child.performAndWait {
            stop.name = "Echo 2"
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(try Self.names(stack.context()) == ["Echo 2"])
    }

    @Test("a child that merges automatically follows a sibling's save into their parent")
    func siblingsFollowEachOther() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let parent = stack.context()
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let held = try reader.performAndWait { () throws -> Stop? in
            reader.automaticallyMergesChangesFromParent = true
            let stop = try reader.existingObject(with: ids[0]) as? Stop
            #expect(stop?.name == "Alpha")
            return stop
        }
        try writer.performAndWait {
            (try writer.existingObject(with: ids[0]) as? Stop)?.name = "Sibling's"
            try writer.save()
        }
        let name = eventually(reader, { held?.name ?? "" }, until: { $0 == "Sibling's" })
        #expect(name == "Sibling's")
        #expect(try Self.names(stack.context()) == ["Alpha", "Beta", "Gamma"])  // not in the store
    }
}
