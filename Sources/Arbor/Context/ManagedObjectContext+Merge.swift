import Foundation

// Merging's entry points: bringing into this context what was saved elsewhere (`ChangeMerger`).
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
        ChangeMerger(context: self).merge(notification)
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
        for context in contexts { context.performAndWait { ChangeMerger(context: context).merge(changes) } }
    }
}
