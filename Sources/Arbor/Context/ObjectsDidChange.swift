/// What changed in a context's objects since its observers last heard (Core Data's
/// `NSManagedObjectContextObjectsDidChange`), by ID. Delivered at the end of each outermost
/// `perform` / `performAndWait` block that changed something, after a merge and after a save
/// (see `ManagedObjectContext.addObjectsDidChangeObserver(_:)`).
///
/// Each object is in one set at most. An object inserted and deleted between two deliveries
/// is in none; one inserted and then changed is `inserted`.
public struct ObjectsDidChange: Sendable, Equatable {
    /// Objects inserted in this context, or by a merged save.
    public var inserted: Set<ObjectID> = []
    /// Objects whose properties were changed in this context, or by a merged save.
    public var updated: Set<ObjectID> = []
    /// Objects deleted in this context, by a merged save, or forgotten by a rollback (inserted
    /// objects rolled back).
    public var deleted: Set<ObjectID> = []
    /// Objects refreshed: by `refresh(_:mergeChanges:)`, a rollback, or a merge that re-read their
    /// to-many relationships.
    public var refreshed: Set<ObjectID> = []
    /// Objects that left the context because their row is gone (deleted by another writer
    /// under a save of this context).
    public var invalidated: Set<ObjectID> = []
    /// The context was reset: every object it had is gone (`NSInvalidatedAllObjectsKey`).
    public var invalidatedAll = false
    /// The permanent ID of each object a save (here, or of an ancestor, merged) inserted, by
    /// the temporary ID observers heard of earlier.
    public var permanentIDs: [ObjectID: ObjectID] = [:]

    public init() {}

    /// Whether nothing changed.
    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty && !invalidatedAll
            && permanentIDs.isEmpty
    }
}

/// How an object changed between two deliveries of `ObjectsDidChange`.
enum ObjectChangeKind {
    case inserted, updated, deleted, refreshed, invalidated

    /// The kind of an object noted `self` and then `later`; nil when nothing is left to report
    /// (inserted, then deleted). Insertion and deletion outrank updates and refreshes.
    func followed(by later: ObjectChangeKind) -> ObjectChangeKind? {
        switch (self, later) {
        case (.inserted, .deleted), (.inserted, .invalidated): return nil
        case (.inserted, _): return .inserted
        case (.deleted, .updated), (.deleted, .refreshed): return .deleted
        case (.updated, .refreshed): return .updated
        default: return later
        }
    }
}

extension ManagedObjectContext {
    /// Calls `body` on the context's queue with what changed in its objects, after each
    /// outermost `perform` / `performAndWait` block that changed something, after each merge
    /// and save (call `processPendingChanges()` after changes made outside those). `body` may
    /// use the context's objects (`registeredObject(for:)`). Keep the returned observation:
    /// releasing or cancelling it ends the calls.
    ///
    /// While a context has observers, each change costs a dictionary update.
    public func addObjectsDidChangeObserver(_ body: @escaping (ObjectsDidChange) -> Void) -> ChangeObservation {
        addObjectsChangeObserver { change in
            let published = change.published
            if !published.isEmpty { body(published) }
        }
    }

    /// The context's object changes as an asynchronous sequence (see
    /// `addObjectsDidChangeObserver(_:)`); it ends when the consuming task is cancelled.
    public var objectsDidChangeNotifications: AsyncStream<ObjectsDidChange> {
        AsyncStream { continuation in
            let observation = addObjectsDidChangeObserver { continuation.yield($0) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }
}
