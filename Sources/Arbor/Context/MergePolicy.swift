import Foundation

/// How a save resolves optimistic-locking conflicts: rows it writes or deletes that another
/// context or process changed since this context read them (Core Data's merge policies).
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

extension ManagedObjectContext {
    /// Resolves `conflicts` by `mergePolicy` so the next save attempt succeeds: each object's
    /// committed state becomes the stored row (so its expected version matches), and its
    /// unsaved changes are kept, trimmed or dropped as the policy says. An object whose row was
    /// deleted in the store leaves this context under every policy.
    func resolve(_ conflicts: [SaveConflict]) throws {
        for conflict in conflicts {
            guard let object = changed[conflict.objectID] ?? registeredObject(for: conflict.objectID) else { continue }
            let store = try store(for: conflict.objectID)
            guard let stored = try store.row(for: conflict.objectID, maxAge: 0) else {
                unmarkChanged(object)
                unregister(object)
                object.managedObjectContext = nil
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
            case .objectTrumps:
                try apply(stored, to: object, from: store)
            case .storeTrumps:
                let before = object.committedValues ?? []
                try apply(stored, to: object, from: store)
                let after = object.committedValues ?? []
                for slot in 0..<min(before.count, after.count) where before[slot] != after[slot] {
                    object.changes[slot] = nil
                }
                if object.changes.isEmpty && !object.hasChanges { unmarkChanged(object) }
            }
        }
    }
}
