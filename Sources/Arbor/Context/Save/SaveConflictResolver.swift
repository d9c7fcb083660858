/// Settles what stopped a save so that the next attempt succeeds, by the context's merge
/// policy (see `MergePolicy`): optimistic-locking conflicts, where a saved row changed in the
/// store since the context read it, and unique-constraint conflicts of inserted objects with
/// stored ones. It changes only the context's objects; the save then runs again.
struct SaveConflictResolver {
    let context: ManagedObjectContext
    var policy: MergePolicy { context.mergePolicy }

    /// Resolves `conflicts` by the policy so the next save attempt succeeds: each object's
    /// committed state becomes the stored row (so its expected version matches), and its
    /// unsaved changes are kept, trimmed or dropped as the policy says. An object whose row was
    /// deleted in the store leaves this context under every policy.
    func resolve(_ conflicts: [SaveConflict]) throws {
        for conflict in conflicts {
            guard let object = context.changed[conflict.objectID] ?? context.registeredObject(for: conflict.objectID) else { continue }
            let store = try context.store(for: conflict.objectID)
            guard let stored = try store.storage.row(for: conflict.objectID, maxAge: 0) else {
                context.detach(object)
                continue
            }
            switch policy {
            case .error:
                return
            case .rollback:
                context.refresh(object, mergeChanges: false)
            case .overwrite:
                // Keep the old committed values under the changes: the whole in-memory state is written.
                object.committedVersion = stored.version
            case .objectTrumps, .storeTrumps:
                try context.changingObserved(object) {
                    let read = object.committedValues?.all ?? []
                    try context.apply(stored, to: object, from: store)
                    let after = object.committedValues?.all ?? []
                    for slot in object.changes.slots where !policy.keepsChange(at: slot, stored: after, read: read) {
                        object.changes[slot] = nil
                    }
                }
                if object.changes.isEmpty && !object.hasChanges { context.unmarkChanged(object) }
            }
        }
    }

    /// Whether every failure of `error` is a unique-constraint conflict of an inserted object
    /// with a stored one: the kind a merge policy resolves.
    func resolves(_ error: ValidationError) -> Bool {
        !error.failures.isEmpty && error.failures.allSatisfy { failure in
            guard case .uniqueConstraint(_, let other) = failure.kind, let id = failure.objectID else { return false }
            return id.isTemporaryID && !other.isTemporaryID && context.changed[id]?.insertedFlag == true
        }
    }

    /// Resolves unique-constraint conflicts by the policy (see `MergePolicy`).
    func resolveUniqueness(_ failures: [ValidationFailure]) throws {
        for failure in failures {
            guard case .uniqueConstraint(_, let existing) = failure.kind, let temporary = failure.objectID,
                  let object = context.changed[temporary], object.insertedFlag else { continue }
            switch policy {
            case .error:
                return
            case .objectTrumps, .overwrite:
                let store = try context.store(for: existing)
                guard let stored = try store.storage.row(for: existing, maxAge: 0) else { continue }  // gone: the retry inserts
                // The stored object's own instance here, if any, gives way to the inserted one.
                if let registeredTwin = context.registeredObject(for: existing), registeredTwin !== object {
                    context.detach(registeredTwin)
                }
                context.unregister(object)
                object.objectID = existing
                object.insertedFlag = false
                try context.changingObserved(object) { try context.apply(stored, to: object, from: store) }
                context.register(object)
                context.markChanged(object)
            case .storeTrumps, .rollback:
                context.detach(object)
            }
            remapReferences(from: temporary, to: existing)
        }
    }

    /// Points every pending reference to `old` (to-one values and to-many changes) at `new`.
    private func remapReferences(from old: ObjectID, to new: ObjectID) {
        func map(_ id: ObjectID) -> ObjectID { id == old ? new : id }
        for object in context.changed.values {
            object.changes.updateEach { $0 = $0.remapped(map) }
            for slot in object.toMany.indices { object.toMany[slot]?.remap(map) }
        }
    }
}
