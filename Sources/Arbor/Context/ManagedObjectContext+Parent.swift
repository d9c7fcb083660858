// Child contexts: a child reads through its parent and saves into it.

/// One object's state in a parent context, as its child sees it.
struct ParentState {
    /// The object's ID in the parent (permanent when the parent saved it since the child read it).
    var id: ObjectID
    var values: [PropertyValue]
    var version: UInt64?
}

extension ManagedObjectContext {
    // MARK: Reading through the parent (run on the parent's queue)

    /// The ID `id` has in this context: a temporary ID this context saved becomes permanent.
    func currentID(_ id: ObjectID) -> ObjectID { id.isTemporaryID ? savedTemporaryIDs[id] ?? id : id }

    /// The current state of the object `id` here, for a child's fault.
    /// - Throws: `ContextError.objectNotFound` when it is deleted here or has no row.
    func stateForChild(_ id: ObjectID) throws -> ParentState {
        let object = self.object(with: currentID(id))
        guard !object.deletedFlag else { throw ContextError.objectNotFound(id) }
        try fulfill(object)
        let values = (0..<object.info.columnCount).map { currentValue(object, slot: $0) }
        return ParentState(id: object.objectID, values: values, version: object.committedVersion)
    }

    /// The current members of a to-many relationship of `id` here, for a child.
    func membersForChild(_ id: ObjectID, _ relationship: EntityInfo.Relationship) -> [ObjectID] {
        let object = self.object(with: currentID(id))
        if object.deletedFlag { return [] }
        return members(object, relationship)
    }

    /// The IDs of objects with unsaved changes here and in every ancestor: what a child's fetch
    /// must evaluate in memory rather than from the stored rows.
    func pendingIDsForChildren() -> Set<ObjectID> {
        var ids = Set(changed.ids)
        if let parent { ids.formUnion(parent.performAndWait { parent.pendingIDsForChildren() }) }
        return ids
    }

    /// The ancestors' unsaved changes a fetch in this context must see (empty for a root context).
    func inheritedPendingIDs() -> Set<ObjectID> {
        guard let parent else { return [] }
        return parent.performAndWait { parent.pendingIDsForChildren() }
    }

    /// Whether fetches here must account for unsaved changes, this context's or its ancestors'
    /// (otherwise the stored rows and indexes alone give the answer).
    var hasVisiblePendingChanges: Bool { !changed.isEmpty || !inheritedPendingIDs().isEmpty }

    /// Loads a fault of a child context from its parent's current state.
    func fulfillFromParent(_ object: ManagedObject, parent: ManagedObjectContext) throws {
        let state = try parent.performAndWait { try parent.stateForChild(object.objectID) }
        if state.id != object.objectID, registered[state.id] == nil {
            // The parent saved the object since this context inserted it: take the permanent ID.
            unregister(object)
            object.objectID = state.id
            register(object)
        }
        object.committedValues = CommittedValues(state.values)
        object.committedVersion = state.version
        object.isFaultState = false
    }

    /// The members a to-many relationship has in the parent (this context's "stored" members).
    func parentMembers(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, parent: ManagedObjectContext) -> [ObjectID] {
        parent.performAndWait { parent.membersForChild(object.objectID, relationship) }
    }

    // MARK: Saving into the parent

    /// A child's save: validates, then hands every change to the parent in one step on the
    /// parent's queue; the child's objects then hold what they pushed as their committed state.
    func saveIntoParent(_ parent: ManagedObjectContext) throws {
        guard hasChanges else { return }
        try prepareChangesForSave()
        let plan = ChildSavePlan(self)
        let saved = plan.objects
        let notification = didSaveNotification(inserted: plan.inserted, updated: plan.updated, deleted: plan.deleted)
        let changes = plan.changes
        parent.performAndWait { parent.receive(changes, notification: notification) }

        // The pushed state is now this context's committed state.
        clearChanged()
        pendingFailures = []
        for object in saved {
            if object.deletedFlag {
                detach(object)
                continue
            }
            object.committedValues = CommittedValues((0..<object.info.columnCount).map { currentValue(object, slot: $0) })
            object.commitTransientChanges()
            object.changes = [:]
            object.insertedFlag = false
            object.isFaultState = false
            for slot in object.toMany.indices { object.toMany[slot]?.commit(remap: { $0 }) }
        }
        changeObservers.post(notification)
    }

    /// Applies a child's changes here, as if made here: they are this context's unsaved changes
    /// until it saves. Delete rules already ran in the child (their effects are among the
    /// changes), so deletions only mark objects.
    func receive(_ changes: [ChildChange], notification: ContextDidSave) {
        for change in changes where change.inserted {
            let id = currentID(change.id)
            if let existing = registeredObject(for: id) {
                // Deleted here and inserted again by the child (an undone deletion): kept.
                if existing.deletedFlag {
                    willChange(existing)
                    existing.deletedFlag = false
                    markChanged(existing)
                }
                continue
            }
            let object = id.info.managedObjectClass.init(ObjectConstruction(id: id, context: self))
            willChange(object)
            object.insertedFlag = true
            object.isFaultState = false
            register(object)
            markChanged(object)
            notice(object, as: .inserted)
        }
        for change in changes where !change.deleted {
            let object = self.object(with: currentID(change.id))
            willChange(object)
            changingObserved(object) { apply(change, to: object) }
            markChanged(object)
        }
        for change in changes where change.deleted {
            let object = self.object(with: currentID(change.id))
            willChange(object)
            object.deletedFlag = true
            if object.insertedFlag {
                // Inserted here and deleted in the child: it never reaches the store.
                notice(object)
                object.insertedFlag = false
                unregister(object)
            } else {
                markChanged(object)
            }
        }
        changeObservers.post(notification)
    }

    /// Makes a child's values and member lists for `object` its unsaved changes here.
    private func apply(_ change: ChildChange, to object: ManagedObject) {
        for (slot, value) in change.values { object.changes[slot] = value.remapped(currentID) }
        for (slot, list, reordered) in change.toMany {
            guard let relationship = object.info.relationships.first(where: { $0.kind != .toOne && $0.slot == slot }) else { continue }
            _ = members(object, relationship)  // materialize: `committed` is what this context read
            var state = object.toMany[slot] ?? ToManyState()
            state.current = list.map(currentID)
            state.isChanged = true
            state.orderChanged = state.orderChanged || reordered
            object.toMany[slot] = state
        }
    }
}
