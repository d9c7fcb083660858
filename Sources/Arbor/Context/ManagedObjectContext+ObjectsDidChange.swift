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

/// A context's objects-did-change observers and what they have not heard yet. Changes are
/// gathered only while someone observes, so contexts without observers pay one branch a write.
struct ObjectsChangeNotifier {
    /// Objects changed since observers last heard (nil while nobody observes).
    private(set) var pending: ContextObjectsChange?
    private var observers: [Int: (ContextObjectsChange) -> Void] = [:]
    private var nextKey = 0

    var isObserved: Bool { pending != nil }

    mutating func add(_ body: @escaping (ContextObjectsChange) -> Void) -> Int {
        nextKey += 1
        observers[nextKey] = body
        if pending == nil { pending = ContextObjectsChange() }
        return nextKey
    }

    mutating func remove(_ key: Int) {
        observers[key] = nil
        if observers.isEmpty { pending = nil }
    }

    /// Notes `object`, registered under `id`, as changed.
    mutating func notice(_ id: ObjectID, _ object: ManagedObject?) {
        guard pending != nil else { return }
        pending?.objects[id] = .some(object)
    }

    /// Notes `id` as changed unless it is noted already (with its object).
    mutating func noticeIfNew(_ id: ObjectID, _ object: @autoclosure () -> ManagedObject?) {
        guard pending != nil, pending?.objects[id] == nil else { return }
        pending?.objects[id] = .some(object())
    }

    mutating func noticePermanentIDs(_ permanentIDs: [ObjectID: ObjectID]) {
        guard pending != nil, !permanentIDs.isEmpty else { return }
        pending?.permanentIDs.merge(permanentIDs) { _, new in new }
    }

    /// Notes a change observers cannot follow object by object.
    mutating func noticeEverything() {
        pending?.needsRefetch = true
    }

    /// The gathered change and the observers to tell, in the order they registered; nil when
    /// there is nothing to tell. Gathering starts over.
    mutating func takeDelivery() -> (change: ContextObjectsChange, observers: [(ContextObjectsChange) -> Void])? {
        guard let change = pending, !change.isEmpty else { return nil }
        pending = ContextObjectsChange()
        return (change, observers.sorted { $0.key < $1.key }.map(\.value))
    }
}

extension ManagedObjectContext {
    /// Calls `body` on the context's queue with each batch of object changes.
    func addObjectsChangeObserver(_ body: @escaping (ContextObjectsChange) -> Void) -> ObjectsChangeObservation {
        let key = objectsDidChange.add(body)
        return ObjectsChangeObservation { [weak self] in
            guard let self else { return }
            // The observer may go away on another thread: the context's state changes on its queue.
            let remove: @Sendable () -> Void = { [weak self] in self?.objectsDidChange.remove(key) }
            if self.isOnQueue { remove() } else { self.queue.async(execute: remove) }
        }
    }

    /// Notes that `object` may have changed (called by every write, insert and delete).
    func notice(_ object: ManagedObject) {
        objectsDidChange.notice(object.objectID, object)
    }

    /// Notes a change observers cannot follow object by object.
    func noticeEverything() {
        objectsDidChange.noticeEverything()
    }

    /// Tells observers what changed since they last heard. Called at the end of each outermost
    /// `perform` / `performAndWait` block, before a save and after a merge; call it yourself after
    /// changes made outside those (Core Data's `processPendingChanges`).
    public func processPendingChanges() {
        guard let delivery = objectsDidChange.takeDelivery() else { return }
        for observer in delivery.observers { observer(delivery.change) }
    }

    /// Notes IDs that changed outside this context (a merged save) and tells observers.
    func noticeMerged(_ ids: Set<ObjectID>, permanentIDs: [ObjectID: ObjectID]) {
        guard objectsDidChange.isObserved else { return }
        for id in ids { objectsDidChange.noticeIfNew(id, self.registeredObject(for: id)) }
        objectsDidChange.noticePermanentIDs(permanentIDs)
        processPendingChanges()
    }
}
