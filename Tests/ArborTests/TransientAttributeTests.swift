@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Observation
import Testing

@Suite("Transient attributes: tracked, observed and undone, never stored")
struct TransientAttributeTests {
    func saved(_ context: ManagedObjectContext, _ name: String) throws -> RuledStation {
        let station = RuledStation(context: context)
        station.name = name
        try context.save()
        return station
    }

    @Test("a transient value makes the object changed, survives the save, and is never written")
    func trackedNotStored() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        let id = try context.performAndWait {
            let station = try saved(context, "a")
            #expect(station.isSelected == false)
            station.isSelected = true
            station.label = "picked"
            #expect(station.hasChanges)
            #expect(station.isUpdated)
            #expect(station.changedValues()["isSelected"] as? Bool == true)
            #expect(station.value(forKey: "label") as? String == "picked")
            try context.save()
            #expect(!station.hasChanges)
            #expect(station.isSelected)
            #expect(station.label == "picked")
            #expect(station.committedValues(forKeys: ["label"])["label"] as? String == "picked")
            return station.objectID
        }
        // Another context, and the file reopened, see the default.
        let other = stack.context()
        try other.performAndWait {
            let station = try #require(try other.existingObject(with: id) as? RuledStation)
            #expect(station.isSelected == false)
            #expect(station.label == nil)
        }
        try stack.reopen()
        let reopened = stack.context()
        try reopened.performAndWait {
            let station = try #require(try reopened.existingObject(with: id) as? RuledStation)
            #expect(!station.isSelected)
        }
    }

    @Test("a save of transient changes only writes no row")
    func transientOnlySaveWritesNothing() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            let station = try saved(context, "a")
            let version = station.committedVersion
            let modified = station.modified
            station.isSelected = true
            try context.save()
            #expect(station.committedVersion == version)
            #expect(station.modified == modified)  // now() runs only when the row is written
        }
    }

    @Test("rollback restores the value of the last save; refresh without merging forgets it; a child's save pushes it")
    func rollbackRefreshAndChild() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        let id = try context.performAndWait {
            let station = try saved(context, "a")
            station.label = "saved"
            try context.save()
            station.label = "unsaved"
            context.rollback()
            #expect(station.label == "saved")
            station.label = "kept"
            context.refresh(station, mergeChanges: true)
            #expect(station.label == "kept")
            context.refresh(station, mergeChanges: false)
            #expect(station.label == nil)

            return station.objectID
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: context)
        try child.performAndWait {
            let mine = try #require(try child.existingObject(with: id) as? RuledStation)
            mine.label = "from the child"
            let fresh = RuledStation(context: child)
            fresh.name = "new"
            fresh.isSelected = true
            try child.save()
            #expect(mine.label == "from the child")
            #expect(!mine.hasChanges)
        }
        try context.performAndWait {
            let station = try #require(context.registeredObject(for: id) as? RuledStation)
            #expect(station.label == "from the child")
            let inserted = try #require(context.insertedObjects.first as? RuledStation)
            #expect(inserted.isSelected)
        }
    }

    @Test("undo and redo a transient change; Observation fires for it")
    func undoAndObservation() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: stack.coordinator)
        try context.performAndWait {
            context.observesObjects = true
            let station = try saved(context, "a")
            context.undoManager = ContextUndoManager()
            context.processPendingChanges()
            station.label = "one"
            context.processPendingChanges()
            #expect(context.undoManager?.canUndo == true)
            context.undo()
            #expect(station.label == nil)
            context.redo()
            #expect(station.label == "one")

            final class Fired: @unchecked Sendable { var count = 0 }
            let fired = Fired()
            withObservationTracking { _ = station.label } onChange: { fired.count += 1 }
            station.isSelected = true  // another property: does not fire
            #expect(fired.count == 0)
            station.label = "two"
            #expect(fired.count == 1)
        }
    }

    @Test("fetches cannot test or sort by a transient attribute")
    func notFetchable() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            _ = try saved(context, "a")
            #expect(throws: (any Error).self) {
                _ = try context.fetch(FetchRequest(entityName: "RuledStation", predicate: try ObjectPredicate(format: "isSelected == YES")))
            }
            var sorted = FetchRequest(entityName: "RuledStation")
            sorted.sortDescriptors = [ObjectSortDescriptor("label")]
            #expect(throws: (any Error).self) { _ = try context.fetch(sorted) }
        }
    }

    @Test("a transient attribute of a superentity is inherited with a slot of each sub-entity's own")
    func inherited() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription("Base", attributes: [AttributeDescription("a", .int64, defaultValue: .int(0)),
                                                   AttributeDescription("t", .string, optional: true, transient: true)]),
            EntityDescription("Sub", superentity: "Base", attributes: [AttributeDescription("b", .int64, defaultValue: .int(0))],
                              relationships: [.toMany("items", "Item", inverse: "owner")]),
            EntityDescription("Item", relationships: [.toOne("owner", "Sub", inverse: "items")]),
        ])
        let sub = try #require(model.info(named: "Sub")), base = try #require(model.info(named: "Base"))
        #expect(sub.transientAttributes.first?.slot == sub.columnCount + sub.toManyCount)
        #expect(base.transientAttributes.first?.slot == base.columnCount)
        let stack = try TestStack(model: model)
        let context = stack.context()
        try context.performAndWait {
            let object = try context.insertNewObject(forEntityName: "Sub")
            object.setValue("scratch", forKey: "t")
            object.setValue(5, forKey: "b")
            try context.save()
            #expect(object.value(forKey: "t") as? String == "scratch")
            #expect(object.value(forKey: "b") as? Int64 == 5)
        }
    }
}
