/// An object's state as undo and redo restore it: whether it is in its context's graph and,
/// if so, the current value of each attribute and to-one relationship and the members of each
/// to-many relationship. Values are absolute (not changes over the stored row), so a state
/// restored after a save makes the object dirty again, as in Core Data.
struct ObjectSnapshot: Equatable {
    /// nil: the object is not in the graph (not inserted yet, or deleted).
    var values: Values?

    struct Values: Equatable {
        /// Per entry of `EntityInfo.undoSlots`.
        var columns: [PropertyValue]
        /// Per to-many slot.
        var lists: [[ObjectID]]
    }

    static let absent = ObjectSnapshot(values: nil)

    /// The snapshot with every object ID passed through `map` (temporary IDs made permanent).
    func remapped(_ map: (ObjectID) -> ObjectID) -> ObjectSnapshot {
        guard let values else { return self }
        return ObjectSnapshot(values: Values(columns: values.columns.map { $0.remapped(map) },
                                             lists: values.lists.map { $0.map(map) }))
    }
}

extension ManagedObjectContext {
    /// Whether `object` is in this context's graph: registered here, and not deleted.
    func isInGraph(_ object: ManagedObject) -> Bool {
        object.managedObjectContext === self && !object.deletedFlag && registeredObject(for: object.objectID) === object
    }

    /// The state of `object` now; loads a fault and its to-many lists.
    /// - Complexity: O(properties), plus one lookup per unloaded to-many relationship.
    func snapshot(_ object: ManagedObject) -> ObjectSnapshot {
        guard isInGraph(object) else { return .absent }
        let info = object.info
        let columns = info.undoSlots.map { currentValue(object, slot: $0) }
        var lists = [[ObjectID]](repeating: [], count: info.toManyCount)
        for relationship in info.relationships where relationship.kind != .toOne && relationship.slot < lists.count {
            lists[relationship.slot] = members(object, relationship)
        }
        return ObjectSnapshot(values: ObjectSnapshot.Values(columns: columns, lists: lists))
    }

    /// Takes `object` from state `other` back to state `snapshot`, as undo and redo do: the
    /// properties that differ between the two get `snapshot`'s values, the others keep theirs
    /// (changes not recorded stay). Inverses are not maintained (the partners are restored from
    /// their own snapshots) and delete rules do not run. Observers of the object and of the
    /// context hear of it.
    func restore(_ object: ManagedObject, to snapshot: ObjectSnapshot, from other: ObjectSnapshot) {
        changingObserved(object) {
            guard let values = snapshot.values else {
                takeOutOfGraph(object)
                return
            }
            var differing = other.values
            if !isInGraph(object) {
                bringIntoGraph(object)
                differing = nil
            }
            write(values, to: object, except: differing)
        }
    }

    /// Deletes `object` without delete rules: an unsaved insert is forgotten, a stored object
    /// is marked deleted.
    private func takeOutOfGraph(_ object: ManagedObject) {
        guard isInGraph(object) else { return }
        object.deletedFlag = true
        markChanged(object)
        if object.insertedFlag {
            object.insertedFlag = false
            unregister(object)
        }
    }

    /// Puts `object` back: a deletion is cancelled; an object no longer registered (an insert
    /// undone, or a deletion saved) is inserted again, under its own ID — a saved deletion
    /// undone writes its row back with the same key.
    private func bringIntoGraph(_ object: ManagedObject) {
        object.deletedFlag = false
        if object.managedObjectContext === self, registeredObject(for: object.objectID) === object { return }
        object.managedObjectContext = self
        object.insertedFlag = true
        object.isFaultState = false
        object.committedValues = nil
        object.committedVersion = nil
        object.changes = [:]
        object.toMany = ToManySlots()
        register(object)
        markChanged(object)
        notice(object, as: .inserted)
    }

    /// Makes `values` the object's current values, except where `unchanged` has the same
    /// value: a value equal to the stored one is no change; a list different from the stored
    /// one is saved whole.
    private func write(_ values: ObjectSnapshot.Values, to object: ManagedObject, except unchanged: ObjectSnapshot.Values?) {
        let info = object.info
        for (index, (slot, value)) in zip(info.undoSlots, values.columns).enumerated() {
            if let unchanged, index < unchanged.columns.count, unchanged.columns[index] == value { continue }
            if object.insertedFlag {
                object.changes[slot] = value
            } else {
                object.changes[slot] = committedValue(object, slot: slot) == value ? nil : value
            }
        }
        for relationship in info.relationships where relationship.kind != .toOne && relationship.slot < values.lists.count {
            let list = values.lists[relationship.slot]
            if let unchanged, relationship.slot < unchanged.lists.count, unchanged.lists[relationship.slot] == list { continue }
            _ = members(object, relationship)
            var state = object.toMany[relationship.slot] ?? ToManyState()
            let committed = state.committed ?? []
            let ordered = relationship.description.isOrdered
            state.current = list
            state.isChanged = ordered ? list != committed : Set(list) != Set(committed)
            state.orderChanged = ordered && state.isChanged
            object.toMany[relationship.slot] = state
        }
        if object.hasChanges { markChanged(object) } else { unmarkChanged(object) }
    }
}
