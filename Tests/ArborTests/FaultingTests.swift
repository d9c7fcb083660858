import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Faulting, the row cache and the identity map")
struct FaultingTests {
    func seedStops(_ stack: TestStack, count: Int) throws -> [ObjectID] {
        let context = stack.context()
        return try context.performAndWait {
            let stops = (1...count).map { makeStop(context, Int64($0)) }
            for (index, stop) in stops.enumerated() where index > 0 { stop.parent = stops[0] }
            try context.save()
            return stops.map(\.objectID)
        }
    }

    @Test("an object that outlives its context reads as a detached object does: no context, fallback values")
    func objectOutlivingItsContext() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 2)
        weak var gone: ManagedObjectContext?
        let kept: Stop = try {
            let context = stack.context()
            gone = context
            return try context.performAndWait {
                let stop = try #require(context.object(with: try stack.id(ids[1])) as? Stop)
                // Loaded and unchanged: later reads take the path that does not load the context.
                #expect(stop.name == "Stop 2")
                #expect(stop.name == "Stop 2")
                return stop
            }
        }()
        #expect(gone == nil)
        #expect(kept.managedObjectContext == nil)
        #expect(kept.name == String.fallbackValue)
        #expect(kept.identifier == Int64.fallbackValue)
    }

    @Test("object(with:) does no I/O; the first read loads one row; later reads and contexts hit the cache")
    func countersShowFaulting() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 5)
        try stack.reopen()
        let store = stack.store
        let context = stack.context()
        let held: [ManagedObject] = try context.performAndWait {
            let objects = try ids.map { context.object(with: try stack.id($0)) }
            #expect(objects.allSatisfy { $0.isFault })
            #expect(store.statistics.rowsRead == 0)
            #expect(store.statistics.faultsFired == 0)
            let first = try #require(objects[1] as? Stop)
            #expect(first.name == "Stop 2")
            #expect(!first.isFault)
            #expect(first.awakeFromFetchCount == 1)
            #expect(store.statistics.rowsRead == 1)
            #expect(store.statistics.faultsFired == 1)
            _ = first.latitude
            _ = first.stopID
            #expect(store.statistics.rowsRead == 1)
            // The parent is a fault until read.
            let parent = try #require(first.parent)
            #expect(parent.isFault)
            #expect(store.statistics.rowsRead == 1)
            #expect(parent.identifier == 1)
            #expect(store.statistics.rowsRead == 2)
            // The to-many inverse loads with one range scan, members stay faults.
            let children = parent.children
            #expect(children.count == 4)
            #expect(children.filter(\.isFault).count == 3)
            return objects
        }
        // A second context finds the rows the first one holds in the row cache.
        let other = stack.context()
        try other.performAndWait {
            let stop = try #require(other.object(with: try stack.id(ids[1])) as? Stop)
            let read = store.statistics.rowsRead
            let hits = store.statistics.cacheHits
            #expect(stop.name == "Stop 2")
            #expect(store.statistics.rowsRead == read)
            #expect(store.statistics.cacheHits == hits + 1)
            // stalenessInterval 0: never use cached rows.
            other.stalenessInterval = 0
            other.refresh(stop, mergeChanges: false)
            #expect(stop.name == "Stop 2")
            #expect(store.statistics.rowsRead == read + 1)
        }
        // Rows stay cached while some context holds their objects.
        withExtendedLifetime(held) {}
    }

    @Test("identity map: one object per ID; unchanged objects are released when dropped, changed ones kept until saved")
    func identityAndRelease() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 3)
        let context = stack.context()
        try context.performAndWait {
            weak var weakStop: Stop?
            weak var weakChanged: Stop?
            do {
                let a = context.object(with: ids[0])
                let b = context.object(with: ids[0])
                #expect(a === b)
                #expect(context.registeredObject(for: ids[0]) === a)
                let stop = try #require(a as? Stop)
                _ = stop.name
                _ = stop.children.map(\.name)  // loads the children: a would-be cycle parent <-> children
                weakStop = stop
                let changed = try #require(context.object(with: ids[1]) as? Stop)
                _ = changed.stopID
                changed.name = "renamed"
                weakChanged = changed
            }
            #expect(weakStop == nil)
            #expect(weakChanged != nil)
            #expect(context.registeredObjects.count == 1)
            #expect(stack.store.statistics.cachedRows == 1)
            try context.save()
            #expect(weakChanged == nil)
            #expect(context.registeredObjects.isEmpty)
            #expect(stack.store.statistics.cachedRows == 0)
        }
    }

    @Test("objects released while the context resets, or after their context is gone, leave the identity map sound")
    func releaseDuringResetAndAfterContext() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 6)
        var survivor: Stop?
        do {
            let context = stack.context()
            try context.performAndWait {
                // Children keep their prefetched parent alive: the reset lets the parent go while
                // it walks the registered objects.
                var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "parent != nil"))
                request.relationshipKeyPathsForPrefetching = ["parent"]
                let children = try context.fetch(request, as: Stop.self)
                #expect(children.count == 5)
                #expect(context.registeredObjects.count == 6)
                context.reset()
                #expect(context.registeredObjects.isEmpty)
                #expect(children.allSatisfy { $0.managedObjectContext == nil })
                // The same IDs give new objects, registered again; a released one empties its entry.
                let again = try #require(context.object(with: ids[0]) as? Stop)
                #expect(again.name == "Stop 1")
                weak var dropped: ManagedObject?
                do {
                    let temporary = context.object(with: ids[1])
                    dropped = temporary
                    #expect(context.registeredObject(for: ids[1]) === temporary)
                }
                #expect(dropped == nil)
                #expect(context.registeredObject(for: ids[1]) == nil)
                #expect(context.registeredObjects == [again])
                survivor = again
            }
        }
        // The context is gone; its last object is released without it.
        #expect(survivor?.managedObjectContext == nil)
        survivor = nil
        let fresh = stack.context()
        fresh.performAndWait { #expect((fresh.object(with: ids[0]) as? Stop)?.name == "Stop 1") }
    }

    @Test("refresh discards or merges changes and releases loaded relationships")
    func refresh() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 3)
        let context = stack.context()
        try context.performAndWait {
            let parent = try #require(try context.existingObject(with: ids[0]) as? Stop)
            weak var weakChild: Stop?
            do {
                let child = try #require(parent.children.first)
                child.name = "changed"
                weakChild = child
            }
            #expect(weakChild != nil)
            parent.name = "parent changed"
            context.refresh(parent, mergeChanges: true)
            #expect(parent.isFault)
            #expect(parent.name == "parent changed")
            #expect(parent.changedValues()["name"] as? String == "parent changed")
            context.refresh(parent, mergeChanges: false)
            #expect(parent.name == "Stop 1")
            #expect(!parent.hasChanges)
            if let child = weakChild { context.refresh(child, mergeChanges: false) }
            #expect(weakChild == nil)
            #expect(!context.hasChanges)
        }
    }

    @Test("objects a fetch fills read their to-one references from the row: nil or the related object, no row read")
    func filledObjectsReadReferences() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 4)
        try stack.reopen()
        let context = stack.context()
        try context.performAndWait {
            let stops = try context.fetchFilled("Stop", as: Stop.self)
            #expect(stops.count == 4)
            let read = stack.store.statistics.rowsRead
            let root = try stack.id(ids[0])
            for stop in stops {
                let isRoot = stop.objectID == root
                #expect(stop.parent?.objectID == (isRoot ? nil : root))
                let committed = stop.committedValues(forKeys: ["parent"])
                #expect((committed["parent"] as? ObjectID?) == .some(isRoot ? nil : root))
                #expect(stop.changedValues().isEmpty)
            }
            // A stored nil reference is a nil reference: clearing it again changes nothing.
            let first = try #require(stops.first { $0.objectID == root })
            first.parent = nil
            #expect(!first.hasChanges)
            #expect(stack.store.statistics.rowsRead == read)
        }
    }

    @Test("changedValues and committedValues(forKeys:)")
    func changedAndCommitted() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 2)
        let context = stack.context()
        try context.performAndWait {
            let stop = try #require(try context.existingObject(with: ids[1]) as? Stop)
            #expect(stop.changedValues().isEmpty)
            stop.name = "new"
            stop.parent = nil
            stop.name = "Stop 2"  // back to the stored value: no longer a change
            let changes = stop.changedValues()
            #expect(Set(changes.keys) == ["parent"])
            let committed = stop.committedValues(forKeys: ["name", "parent"])
            #expect(committed["name"] as? String == "Stop 2")
            #expect((committed["parent"] as? ObjectID?) == .some(ids[0]))
            #expect(stop.isUpdated)
            // The old parent changed too: its children lost this stop.
            #expect(context.updatedObjects.map(\.objectID).sorted { $0.primaryKey < $1.primaryKey } == [ids[0], ids[1]])
        }
    }

    @Test("a fault whose row is gone: existingObject throws, typed reads fall back and record the error")
    func missingRow() throws {
        let stack = try TestStack()
        let ids = try seedStops(stack, count: 2)
        let deleter = stack.context()
        try deleter.performAndWait {
            deleter.delete(try deleter.existingObject(with: ids[1]))
            try deleter.save()
        }
        let context = stack.context()
        try context.performAndWait {
            #expect(throws: ContextError.objectNotFound(ids[1])) { try context.existingObject(with: ids[1]) }
            let ghost = try #require(context.object(with: ids[1]) as? Stop)
            #expect(ghost.name == "")
            #expect(context.lastFaultError as? ContextError == .objectNotFound(ids[1]))
        }
    }
}
