extension ManagedObjectContext {
    /// Turns `object` back into a fault. With `mergeChanges`, its unsaved changes are kept and
    /// re-applied over the freshly read row; otherwise they are discarded. Loaded to-many lists
    /// are released, so objects reachable only through them can go away. An object that
    /// Observation watches (see `observesObjects`) is read again at once, with the lists it had
    /// loaded, and its observers fire for the properties whose values changed.
    /// Transient attributes keep their values with `mergeChanges`; otherwise they start again
    /// from their defaults, as the fault they become has no transient state.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        refresh(object, mergeChanges: mergeChanges, keepingTransients: false)
    }

    func refresh(_ object: ManagedObject, mergeChanges: Bool, keepingTransients: Bool) {
        guard owns(object), !object.insertedFlag else { return }
        notice(object, as: .refreshed)
        changingObserved(object) { discardLoadedState(object, mergeChanges: mergeChanges, keepingTransients: keepingTransients) }
    }

    private func discardLoadedState(_ object: ManagedObject, mergeChanges: Bool, keepingTransients: Bool) {
        object.committedValues = nil
        object.committedVersion = nil
        object.isFaultState = true
        if mergeChanges {
            for slot in object.toMany.indices { rereadMembers(object, slot: slot) }
        } else {
            object.prefetched = []
            object.changes = [:]
            if !keepingTransients { object.transientValues = [] }
            object.deletedFlag = false
            for slot in object.toMany.indices { object.toMany[slot] = nil }
            unmarkChanged(object)
        }
    }

    /// Makes the to-many relationship at `slot` be read from the store again when next used;
    /// unsaved changes to it stay, as the delta they are over the stored members (a list whose
    /// order the app rearranged stays as the app left it).
    func rereadMembers(_ object: ManagedObject, slot: Int) {
        guard var state = object.toMany[slot] else { return }
        if !state.isChanged {
            object.toMany[slot] = nil
            return
        }
        if state.current != nil, let appended = state.appendedMembers {
            let currentSet = Set(state.current ?? [])
            state.removed = Set((state.committed ?? []).filter { !currentSet.contains($0) })
            state.added = appended
            state.current = nil
            state.committed = nil
            object.toMany[slot] = state
        }
    }

    /// Refreshes every registered object, keeping unsaved changes.
    public func refreshAllObjects() {
        for object in registeredObjects { refresh(object, mergeChanges: true) }
    }

    /// Discards every unsaved change: inserted objects are forgotten, updated and deleted ones
    /// become faults of their stored state (transient attributes go back to their values at
    /// the last save). The undo manager forgets every action.
    public func rollback() {
        undoRecorder?.removeAllActions()
        noticeEverything()
        for object in Array(changed.values) {
            if object.insertedFlag || (object.deletedFlag && object.objectID.isTemporaryID) {
                notice(object, as: .deleted)
                detach(object)
            } else {
                refresh(object, mergeChanges: false, keepingTransients: true)
            }
        }
        clearChanged()
        pendingFailures = []
    }

    /// Forgets every object: registered objects are detached from the context (their
    /// `managedObjectContext` becomes nil) and unsaved changes are discarded. The undo manager
    /// forgets every action.
    public func reset() {
        undoRecorder?.removeAllActions()
        noticeEverything(reset: true)
        for object in liveRegisteredObjects {
            changingObserved(object) {
                object.managedObjectContext = nil
                object.changes = [:]
                object.transientValues = []
                object.prefetched = []
                object.isFaultState = true
            }
        }
        for object in changed.values { object.managedObjectContext = nil }
        registered.removeAll()
        clearChanged()
        pendingFailures = []
    }
}
