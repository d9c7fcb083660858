import Foundation

/// How a save resolves conflicts (Core Data's merge policies): optimistic-locking conflicts —
/// rows it writes or deletes that another context or process changed since this context read
/// them — and unique-constraint conflicts — an inserted object whose unique properties equal
/// those of a stored one. For the latter, `.objectTrumps` and `.overwrite` make the inserted
/// object take over the stored row (its values win), `.storeTrumps` and `.rollback` drop it in
/// favour of the stored object; either way relationships to it are re-pointed to the stored object.
public enum MergePolicy: Sendable, Equatable {
    /// Fail with `StoreError.conflicts`, naming every conflicting object and both versions (the default).
    case error
    /// Property by property, the store's changes win: properties the other writer changed take
    /// its values; this context's changes to the other properties are saved.
    case storeTrumps
    /// Property by property, this context's changes win; the properties it did not change take
    /// the stored values.
    case objectTrumps
    /// This context's whole state of the object replaces the stored row.
    case overwrite
    /// This context's changes to conflicting objects are discarded; the stored state stays.
    case rollback
}

extension MergePolicy {
    /// Whether this context's change to column `slot` survives a conflict, given the row as
    /// the other writer left it (`stored`) and as this context read it (`read`). The one rule
    /// both sides apply: stores when they merge a row, contexts when they keep or drop changes.
    func keepsChange<Value: Equatable>(at slot: Int, stored: [Value], read: [Value]) -> Bool {
        switch self {
        case .error, .overwrite, .objectTrumps: return true
        // Only where the other writer left the value as this context read it.
        case .storeTrumps: return slot < stored.count && slot < read.count && stored[slot] == read[slot]
        case .rollback: return false
        }
    }

    /// The row an update in conflict writes, inside the store's write transaction: `stored` is
    /// the row as another writer left it, `mine` this context's row, `read` the row as this
    /// context read it, `changedSlots` the columns it changed. Nil for `.rollback` (the stored
    /// row stays). Every store applies this one rule.
    func mergedColumns(stored: [ColumnValue], mine: [ColumnValue], read: [ColumnValue], changedSlots: [Int]) -> [ColumnValue]? {
        switch self {
        case .rollback: return nil
        case .error, .overwrite: return mine  // the whole row as this context has it
        case .objectTrumps, .storeTrumps:
            var merged = stored
            for slot in changedSlots where slot < merged.count && slot < mine.count && keepsChange(at: slot, stored: stored, read: read) {
                merged[slot] = mine[slot]
            }
            return merged
        }
    }
}

extension ManagedObjectContext {
    /// Resolves `conflicts` by `mergePolicy` so the next save attempt succeeds: each object's
    /// committed state becomes the stored row (so its expected version matches), and its
    /// unsaved changes are kept, trimmed or dropped as the policy says. An object whose row was
    /// deleted in the store leaves this context under every policy.
    func resolve(_ conflicts: [SaveConflict]) throws {
        for conflict in conflicts {
            guard let object = changed[conflict.objectID] ?? registeredObject(for: conflict.objectID) else { continue }
            let store = try store(for: conflict.objectID)
            guard let stored = try store.storage.row(for: conflict.objectID, maxAge: 0) else {
                detach(object)
                continue
            }
            switch mergePolicy {
            case .error:
                return
            case .rollback:
                refresh(object, mergeChanges: false)
            case .overwrite:
                // Keep the old committed values under the changes: the whole in-memory state is written.
                object.committedVersion = stored.version
            case .objectTrumps, .storeTrumps:
                let read = object.committedValues?.all ?? []
                try apply(stored, to: object, from: store)
                let after = object.committedValues?.all ?? []
                for slot in object.changes.slots where !mergePolicy.keepsChange(at: slot, stored: after, read: read) {
                    object.changes[slot] = nil
                }
                if object.changes.isEmpty && !object.hasChanges { unmarkChanged(object) }
            }
        }
    }
}

extension ManagedObjectContext {
    /// Whether every failure of `error` is a unique-constraint conflict of an inserted object
    /// with a stored one: the kind a merge policy resolves.
    func resolvesByPolicy(_ error: ValidationError) -> Bool {
        !error.failures.isEmpty && error.failures.allSatisfy { failure in
            guard case .uniqueConstraint(_, let other) = failure.kind, let id = failure.objectID else { return false }
            return id.isTemporaryID && !other.isTemporaryID && changed[id]?.insertedFlag == true
        }
    }

    /// Resolves unique-constraint conflicts by `mergePolicy` (see `MergePolicy`).
    func resolveUniqueness(_ failures: [ValidationFailure]) throws {
        for failure in failures {
            guard case .uniqueConstraint(_, let existing) = failure.kind, let temporary = failure.objectID,
                  let object = changed[temporary], object.insertedFlag else { continue }
            switch mergePolicy {
            case .error:
                return
            case .objectTrumps, .overwrite:
                let store = try store(for: existing)
                guard let stored = try store.storage.row(for: existing, maxAge: 0) else { continue }  // gone: the retry inserts
                // The stored object's own instance here, if any, gives way to the inserted one.
                if let registeredTwin = registeredObject(for: existing), registeredTwin !== object {
                    detach(registeredTwin)
                }
                unregister(object)
                object.objectID = existing
                object.insertedFlag = false
                try apply(stored, to: object, from: store)
                register(object)
                markChanged(object)
            case .storeTrumps, .rollback:
                detach(object)
            }
            remapReferences(from: temporary, to: existing)
        }
    }

    /// Points every pending reference to `old` (to-one values and to-many changes) at `new`.
    func remapReferences(from old: ObjectID, to new: ObjectID) {
        func map(_ id: ObjectID) -> ObjectID { id == old ? new : id }
        for object in changed.values {
            object.changes.updateEach { $0 = $0.remapped(map) }
            for slot in object.toMany.indices { object.toMany[slot]?.remap(map) }
        }
    }
}
