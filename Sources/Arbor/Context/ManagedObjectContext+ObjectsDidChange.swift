/// What changed in a context since its observers last heard (Core Data's
/// `NSManagedObjectContextObjectsDidChange`), for fetched results controllers.
struct ContextObjectsChange {
    /// Objects inserted, updated, deleted or refreshed here, or merged from another context's
    /// save: each must be looked at again. Objects no longer registered are given by ID only.
    var objects: [ObjectID: ManagedObject?] = [:]
    /// Temporary IDs a save of this context (or of an ancestor, merged) made permanent.
    var permanentIDs: [ObjectID: ObjectID] = [:]
    /// A change too broad to list (rollback, reset): observers start over.
    var needsRefetch = false

    var isEmpty: Bool { objects.isEmpty && permanentIDs.isEmpty && !needsRefetch }
}

/// A registration for a context's object changes; `cancel()` or releasing it ends it.
final class ObjectsChangeObservation {
    private let cancellation: () -> Void
    private var cancelled = false

    init(_ cancellation: @escaping () -> Void) { self.cancellation = cancellation }

    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        cancellation()
    }

    deinit { cancel() }
}

extension ManagedObjectContext {
    /// Calls `body` on the context's queue with each batch of object changes. Changes are noted
    /// only while someone observes, so contexts without observers pay nothing.
    func addObjectsChangeObserver(_ body: @escaping (ContextObjectsChange) -> Void) -> ObjectsChangeObservation {
        nextObserverKey += 1
        let key = nextObserverKey
        objectsChangeObservers[key] = body
        if noticed == nil { noticed = ContextObjectsChange() }
        return ObjectsChangeObservation { [weak self] in
            guard let self else { return }
            // The observer may go away on another thread: the context's state changes on its queue.
            let remove: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                self.objectsChangeObservers[key] = nil
                if self.objectsChangeObservers.isEmpty { self.noticed = nil }
            }
            if self.isOnQueue { remove() } else { self.queue.async(execute: remove) }
        }
    }

    /// Notes that `object` may have changed (called by every write, insert and delete).
    func notice(_ object: ManagedObject) {
        guard noticed != nil else { return }
        noticed?.objects[object.objectID] = object
    }

    /// Notes a change observers cannot follow object by object.
    func noticeEverything() {
        noticed?.needsRefetch = true
    }

    /// Tells observers what changed since they last heard. Called at the end of each outermost
    /// `perform` / `performAndWait` block, before a save and after a merge; call it yourself after
    /// changes made outside those (Core Data's `processPendingChanges`).
    public func processPendingChanges() {
        guard let change = noticed, !change.isEmpty else { return }
        noticed = ContextObjectsChange()
        for observer in objectsChangeObservers.sorted(by: { $0.key < $1.key }).map(\.value) { observer(change) }
    }

    /// Notes IDs that changed outside this context (a merged save) and tells observers.
    func noticeMerged(_ ids: Set<ObjectID>, permanentIDs: [ObjectID: ObjectID]) {
        guard noticed != nil else { return }
        for id in ids where noticed?.objects[id] == nil { noticed?.objects[id] = .some(registeredObject(for: id)) }
        noticed?.permanentIDs.merge(permanentIDs) { _, new in new }
        processPendingChanges()
    }
}
