import Foundation

// Merging: bringing into this context what was saved elsewhere — another context's save
// (`ContextDidSave`) or changes made outside every context (`ObjectChanges`).
extension ManagedObjectContext {
    /// Whether the saves of other contexts on the coordinator are merged into this one as they
    /// commit (with `mergeChanges(fromContextDidSave:)`, scheduled on this context's queue) —
    /// a view context that follows background imports. A child context follows its parent
    /// instead: the parent's saves, the changes merged into it and its other children's saves.
    public var automaticallyMergesChangesFromParent: Bool {
        get { mergeObservation != nil }
        set {
            if newValue, mergeObservation == nil, let parent {
                // A child follows its parent: the parent's saves, merges and other children's saves.
                mergeObservation = parent.changeObservers.add { [weak self] notification in
                    guard let self, notification.source != ObjectIdentifier(self) else { return }
                    self.perform { self.mergeChanges(fromContextDidSave: notification) }
                }
            } else if newValue, mergeObservation == nil, let coordinator = persistentStoreCoordinator {
                mergeObservation = coordinator.addDidSaveObserver { [weak self] notification in
                    guard let self, notification.source != ObjectIdentifier(self) else { return }
                    self.perform { self.mergeChanges(fromContextDidSave: notification) }
                }
            } else if !newValue {
                mergeObservation?.cancel()
                mergeObservation = nil
            }
        }
    }

    /// Brings a save of another context into this one (call it on this context's queue, or let
    /// `automaticallyMergesChangesFromParent` do it): registered objects the save updated are
    /// refreshed (their unsaved changes here kept on top), registered objects it deleted are
    /// dropped from this context, and the inserted ones are there for the next fetch.
    /// Notifications of this context's own saves are ignored.
    public func mergeChanges(fromContextDidSave notification: ContextDidSave) {
        guard notification.source != ObjectIdentifier(self) else { return }
        if !notification.permanentIDs.isEmpty { adoptPermanentIDs(notification.permanentIDs) }
        for id in notification.updated {
            if let object = registeredObject(for: id) { refresh(object, mergeChanges: true) }
        }
        for id in notification.deleted {
            guard let object = registeredObject(for: id) else { continue }
            detach(object)
            object.isFaultState = true
        }
        // Rows in the stores' caches were replaced by the save; objects refreshed above read them.
        noticeMerged(notification.inserted.union(notification.updated).union(notification.deleted),
                     permanentIDs: notification.permanentIDs)
        changeObservers.post(notification)
    }

    /// Gives objects known here by a temporary ID that a save (of an ancestor) made permanent
    /// their permanent ID, in the identity map and in every reference and member list.
    func adoptPermanentIDs(_ permanent: [ObjectID: ObjectID]) {
        let remap: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        for object in liveRegisteredObjects {
            if let newID = permanent[object.objectID], registered[newID] == nil {
                let wasChanged = object.isMarkedChanged
                unregister(object)
                object.objectID = newID
                register(object)
                if wasChanged { markChanged(object) }
            }
            object.committedValues = object.committedValues?.remapped(remap)
            object.changes.updateEach { $0 = $0.remapped(remap) }
            for slot in object.toMany.indices { object.toMany[slot]?.remap(remap) }
        }
    }

    /// The did-save notification of a save that just committed, from the objects it saved
    /// (after their IDs became permanent).
    func didSaveNotification(inserted: [ManagedObject], updated: [ManagedObject], deleted: [ObjectID]) -> ContextDidSave {
        ContextDidSave(inserted: Set(inserted.map(\.objectID)), updated: Set(updated.map(\.objectID)), deleted: Set(deleted),
                       contextName: name, source: ObjectIdentifier(self))
    }

    // MARK: Changes made outside every context

    /// Brings changes made outside every context — by batch requests, or saved by another
    /// process — into `contexts` (Core Data's `mergeChanges(fromRemoteContextSave:into:)`),
    /// each on its own queue (waiting for it): registered objects that were updated are
    /// refreshed (their unsaved changes kept on top), deleted ones are dropped from the context,
    /// to-many relationships that may have gained or lost members are read again when next
    /// used, and fetched results controllers report the changes.
    /// - Complexity: O(registered objects + changes) per context.
    public static func mergeChanges(fromRemoteContextSave changes: ObjectChanges, into contexts: [ManagedObjectContext]) {
        for context in contexts { context.performAndWait { context.merge(changes) } }
    }

    /// `mergeChanges(fromRemoteContextSave:into:)` for one context, on its queue.
    func merge(_ changes: ObjectChanges) {
        guard !changes.isEmpty else { return }
        let objects = liveRegisteredObjects
        // Walk whichever side is smaller: the registered objects or the named IDs.
        if objects.count <= changes.deleted.count + changes.updated.count {
            for object in objects {
                if changes.deleted.contains(object.objectID) {
                    detach(object)
                    object.isFaultState = true
                } else if changes.updated.contains(object.objectID) {
                    refresh(object, mergeChanges: true)
                }
            }
        } else {
            for id in changes.deleted {
                guard let object = registeredObject(for: id) else { continue }
                detach(object)
                object.isFaultState = true
            }
            for id in changes.updated { if let object = registeredObject(for: id) { refresh(object, mergeChanges: true) } }
        }
        // Any object of a changed hierarchy may have joined or left a to-many list (a new stop
        // time, a deleted one, one moved to another stop): such lists are read again.
        var roots: Set<UInt16> = []
        for set in [changes.inserted, changes.updated, changes.deleted] {
            for group in set.groups { roots.insert(group.info.rootCode) }
        }
        for object in objects where object.managedObjectContext === self {
            for relationship in object.info.relationships where relationship.kind != .toOne {
                guard let destination = model?.info(named: relationship.destinationName), roots.contains(destination.rootCode),
                      object.toMany[relationship.slot] != nil else { continue }
                rereadMembers(object, slot: relationship.slot)
                notice(object)
            }
        }
        if changes.count > Self.mergeListLimit {
            noticeEverything()
            processPendingChanges()
        } else {
            noticeMerged(Set(changes.inserted).union(changes.updated).union(changes.deleted), permanentIDs: [:])
        }
    }

    /// Above this many changed objects, observers (fetched results controllers) are told to
    /// start over rather than given every ID.
    static let mergeListLimit = 10_000
}
