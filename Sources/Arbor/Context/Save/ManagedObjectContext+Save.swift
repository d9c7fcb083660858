extension ManagedObjectContext {
    /// Saves every change to the stores, atomically per store.
    ///
    /// Calls `willSave` on each changed object, then validates everything (non-optional values,
    /// types, to-many counts, deny rules); if anything fails, nothing is written and the error
    /// lists every failure. The store then checks uniqueness constraints and optimistic locking
    /// under its write lock, assigns permanent IDs, bumps row versions and commits.
    ///
    /// With several stores, all are written and checked first (each under its write lock) and
    /// committed only if all succeeded; an I/O failure while committing a later store leaves
    /// earlier stores committed (the exact guarantee is in Spec/object-store.md).
    ///
    /// When a saved row changed in the store since this context read it (optimistic locking),
    /// `mergePolicy` decides: `.error` throws `StoreError.conflicts`; the other policies merge the
    /// row inside the save's transaction, under the write lock (no other writer can slip in),
    /// and the objects take the rows as stored. Unique-constraint conflicts of inserted objects
    /// are resolved by the policy too, and the save is tried again.
    /// - Throws: `ValidationError`, `StoreError.conflicts`, `StoreError` for I/O and read-only stores.
    public func save() throws {
        processPendingChanges()
        if let parent { return try saveIntoParent(parent) }
        let resolver = SaveConflictResolver(context: self)
        var attempts = 0
        while true {
            do {
                return try saveOnce()
            } catch StoreError.conflicts(let conflicts) where mergePolicy != .error && attempts < 3 {
                // Another writer may commit between resolving and saving again: retry a few times.
                attempts += 1
                try resolver.resolve(conflicts)
            } catch let error as ValidationError where mergePolicy != .error && attempts < 3 && resolver.resolves(error) {
                attempts += 1
                try resolver.resolveUniqueness(error.failures)
            }
        }
    }

    /// One attempt: plan the requests, write them to every store in two phases, then bring
    /// the objects and observers up to date.
    private func saveOnce() throws {
        guard hasChanges else { return }
        try prepareChangesForSave()
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }
        let plan = try ContextSavePlan(self, coordinator: coordinator)
        let saves = try coordinator.commit(plan.requests)
        // Who was inserted, updated and deleted, for the did-save notification (read before the
        // results clear the flags; inserted objects' IDs are read after they become permanent).
        var insertedObjects: [ManagedObject] = [], updatedObjects: [ManagedObject] = [], deletedIDs: [ObjectID] = []
        for object in plan.objects {
            if object.deletedFlag {
                if !object.insertedFlag && !object.objectID.isTemporaryID { deletedIDs.append(object.objectID) }
            } else if object.insertedFlag {
                insertedObjects.append(object)
            } else if object.hasChanges {
                updatedObjects.append(object)
            }
        }
        let permanentIDs = try applySaveResults(saves, saved: plan.objects)
        undoRecorder?.remap(permanentIDs)
        // Objects another writer deleted under us were not saved: they left this context.
        let vanished = Set(saves.flatMap(\.save.result.vanished))
        if objectsDidChange.isObserved {
            for object in plan.objects where vanished.contains(object.objectID) { notice(object, as: .invalidated) }
            objectsDidChange.noticePermanentIDs(permanentIDs)
            processPendingChanges()
        }
        updatedObjects.removeAll { vanished.contains($0.objectID) }
        var notification = didSaveNotification(inserted: insertedObjects, updated: updatedObjects, deleted: deletedIDs)
        notification.permanentIDs = permanentIDs
        coordinator.saveObservers.post(notification)
        changeObservers.post(notification)
    }

    /// Returns the permanent ID of each object inserted by the save, by its temporary ID.
    private func applySaveResults(_ prepared: [PersistentStoreCoordinator.CommittedSave],
                                  saved: [ManagedObject]) throws -> [ObjectID: ObjectID] {
        var permanent: [ObjectID: ObjectID] = [:]
        var rows: [ObjectID: (StoredRow, PersistentStore)] = [:]
        var vanished: Set<ObjectID> = []
        for (store, save) in prepared {
            permanent.merge(save.result.permanentIDs) { a, _ in a }
            for (id, row) in save.result.writtenRows { rows[id] = (row, store) }
            vanished.formUnion(save.result.vanished)
        }
        let remap: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        if hasChildren.withLock({ $0 }) { savedTemporaryIDs.merge(permanent) { _, new in new } }
        clearChanged()
        pendingFailures = []
        var appliedRows = 0
        for object in saved {
            if object.deletedFlag || vanished.contains(object.objectID) {
                detach(object)
                continue
            }
            if let newID = permanent[object.objectID] {
                unregister(object)
                object.objectID = newID
                register(object)
            }
            object.commitTransientChanges()
            if let (row, store) = rows[object.objectID] {
                object.changes = [:]
                try apply(row, to: object, from: store)
                appliedRows += 1
            } else {
                // Only to-many changes: the row itself is unchanged; committed references may
                // still name objects inserted by this save.
                object.committedValues = object.committedValues?.remapped(remap)
            }
            object.insertedFlag = false
            for slot in object.toMany.indices { object.toMany[slot]?.commit(remap: remap) }
        }
        if appliedRows < rows.count { try applyTouchedRows(rows, saved: saved) }
        // Only changed objects can hold temporary IDs (adding a member changes the owner), and
        // each of them was remapped above: the rest of the identity map needs no pass.
        return permanent
    }

    /// Rows the save rewrote without their objects changing (members of a reordered list, whose
    /// order column moved): registered objects holding such a row take the new one, so their
    /// next save expects the right version.
    private func applyTouchedRows(_ rows: [ObjectID: (StoredRow, PersistentStore)], saved: [ManagedObject]) throws {
        let savedObjects = Set(saved.map(ObjectIdentifier.init))
        for (id, (row, store)) in rows {
            guard let object = registeredObject(for: id), !savedObjects.contains(ObjectIdentifier(object)),
                  object.hasCommittedValues else { continue }
            try apply(row, to: object, from: store, firing: false)
        }
    }
}
