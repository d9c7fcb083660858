import Foundation

/// Brings into a context what was saved elsewhere — another context's save (`ContextDidSave`)
/// or changes made outside every context (`ObjectChanges`): registered objects that were updated
/// are refreshed with their unsaved changes kept on top, deleted ones leave the context,
/// temporary IDs another context made permanent are adopted, to-many lists that may have
/// changed are read again when next used, and observers hear of it all. Run on the context's
/// queue.
struct ChangeMerger {
    let context: ManagedObjectContext

    /// Merges another context's save (see `ManagedObjectContext.mergeChanges(fromContextDidSave:)`).
    func merge(_ notification: ContextDidSave) {
        guard notification.source != ObjectIdentifier(context) else { return }
        if !notification.permanentIDs.isEmpty { adoptPermanentIDs(notification.permanentIDs) }
        for id in notification.updated {
            if let object = context.registeredObject(for: id) { context.refresh(object, mergeChanges: true) }
        }
        for id in notification.deleted {
            guard let object = context.registeredObject(for: id) else { continue }
            context.detach(object)
            object.isFaultState = true
        }
        // Rows in the stores' caches were replaced by the save; objects refreshed above read them.
        context.noticeMerged(inserted: notification.inserted, updated: notification.updated, deleted: notification.deleted,
                             permanentIDs: notification.permanentIDs)
        context.changeObservers.post(notification)
    }

    /// Merges changes made outside every context (see `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`).
    func merge(_ changes: ObjectChanges) {
        guard !changes.isEmpty else { return }
        let objects = context.liveRegisteredObjects
        // Walk whichever side is smaller: the registered objects or the named IDs.
        if objects.count <= changes.deleted.count + changes.updated.count {
            for object in objects {
                if changes.deleted.contains(object.objectID) {
                    context.detach(object)
                    object.isFaultState = true
                } else if changes.updated.contains(object.objectID) {
                    context.refresh(object, mergeChanges: true)
                }
            }
        } else {
            for id in changes.deleted {
                guard let object = context.registeredObject(for: id) else { continue }
                context.detach(object)
                object.isFaultState = true
            }
            for id in changes.updated { if let object = context.registeredObject(for: id) { context.refresh(object, mergeChanges: true) } }
        }
        // Any object of a changed hierarchy may have joined or left a to-many list (a new stop
        // time, a deleted one, one moved to another stop): such lists are read again.
        var roots: Set<UInt16> = []
        for set in [changes.inserted, changes.updated, changes.deleted] {
            for group in set.groups { roots.insert(group.info.rootCode) }
        }
        for object in objects where object.managedObjectContext === context {
            context.changingObserved(object) {
                for relationship in object.info.relationships where relationship.kind != .toOne {
                    guard let destination = context.model?.info(named: relationship.destinationName), roots.contains(destination.rootCode),
                          object.toMany[relationship.slot] != nil else { continue }
                    context.rereadMembers(object, slot: relationship.slot)
                    context.notice(object, as: .refreshed)
                }
            }
        }
        context.noticeMerged(inserted: changes.inserted, updated: changes.updated, deleted: changes.deleted, permanentIDs: [:],
                             listed: changes.count <= Self.listLimit)
    }

    /// Gives objects known here by a temporary ID that a save (of an ancestor) made permanent
    /// their permanent ID, in the identity map and in every reference and member list.
    private func adoptPermanentIDs(_ permanent: [ObjectID: ObjectID]) {
        let remap: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        context.undoRecorder?.remap(permanent)
        for object in context.liveRegisteredObjects {
            if let newID = permanent[object.objectID], context.registered[newID] == nil {
                let wasChanged = object.isMarkedChanged
                context.unregister(object)
                object.objectID = newID
                context.register(object)
                if wasChanged { context.markChanged(object) }
            }
            object.committedValues = object.committedValues?.remapped(remap)
            object.changes.updateEach { $0 = $0.remapped(remap) }
            for slot in object.toMany.indices { object.toMany[slot]?.remap(remap) }
        }
    }

    /// Above this many changed objects, observers (fetched results controllers) are told to
    /// start over rather than given every ID.
    static let listLimit = 10_000
}
