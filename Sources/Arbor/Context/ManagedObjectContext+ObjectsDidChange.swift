/// What changed in a context since its observers last heard: the published `ObjectsDidChange`
/// and what fetched results controllers need besides.
struct ContextObjectsChange {
    /// Objects inserted, updated, deleted or refreshed here, or merged from another context's
    /// save: each must be looked at again. Objects no longer registered are given by ID only.
    /// Not filled for merges of more than `ChangeMerger.listLimit` objects (`needsRefetch`).
    var objects: [ObjectID: ManagedObject?] = [:]
    /// How each changed object changed.
    var kinds: [ObjectID: ObjectChangeKind] = [:]
    /// Temporary IDs a save of this context (or of an ancestor, merged) made permanent.
    var permanentIDs: [ObjectID: ObjectID] = [:]
    /// A change too broad to list (rollback, reset, a large merge): observers start over.
    var needsRefetch = false
    /// The context was reset.
    var invalidatedAll = false

    var isEmpty: Bool { objects.isEmpty && kinds.isEmpty && permanentIDs.isEmpty && !needsRefetch }

    /// Notes `kind` for `id`, after what was noted before.
    mutating func note(_ id: ObjectID, _ kind: ObjectChangeKind) {
        if let earlier = kinds[id] {
            kinds[id] = earlier.followed(by: kind)
        } else {
            kinds[id] = kind
        }
    }

    /// The change as the public API gives it.
    var published: ObjectsDidChange {
        var result = ObjectsDidChange()
        for (id, kind) in kinds {
            switch kind {
            case .inserted: result.inserted.insert(id)
            case .updated: result.updated.insert(id)
            case .deleted: result.deleted.insert(id)
            case .refreshed: result.refreshed.insert(id)
            case .invalidated: result.invalidated.insert(id)
            }
        }
        result.invalidatedAll = invalidatedAll
        result.permanentIDs = permanentIDs
        return result
    }
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

    /// Notes `object`, registered under `id`, as changed in the way `kind` says.
    mutating func notice(_ id: ObjectID, _ object: ManagedObject?, _ kind: ObjectChangeKind) {
        guard pending != nil else { return }
        pending?.objects[id] = .some(object)
        pending?.note(id, kind)
    }

    /// Notes `id` as changed by a merge; with `listed`, for fetched results controllers too.
    mutating func noticeMerged(_ id: ObjectID, _ kind: ObjectChangeKind, listed: Bool, _ object: () -> ManagedObject?) {
        guard pending != nil else { return }
        if listed, pending?.objects[id] == nil { pending?.objects[id] = .some(object()) }
        pending?.note(id, kind)
    }

    mutating func noticePermanentIDs(_ permanentIDs: [ObjectID: ObjectID]) {
        guard pending != nil, !permanentIDs.isEmpty else { return }
        pending?.permanentIDs.merge(permanentIDs) { _, new in new }
    }

    /// Notes a change observers cannot follow object by object; `reset`: every object is gone.
    mutating func noticeEverything(reset: Bool = false) {
        pending?.needsRefetch = true
        if reset { pending?.invalidatedAll = true }
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
    func addObjectsChangeObserver(_ body: @escaping (ContextObjectsChange) -> Void) -> ChangeObservation {
        let key = performAndWait { objectsDidChange.add(body) }
        return ChangeObservation { [weak self] in
            guard let self else { return }
            // The observer may go away on another thread: the context's state changes on its queue.
            let remove: @Sendable () -> Void = { [weak self] in self?.objectsDidChange.remove(key) }
            if self.isOnQueue { remove() } else { self.queue.async(execute: remove) }
        }
    }

    /// Notes that `object` changed (called by every write and delete): deleted or updated, as
    /// its state says. Insertions note themselves (`notice(_:as:)`).
    func notice(_ object: ManagedObject) {
        objectsDidChange.notice(object.objectID, object, object.deletedFlag ? .deleted : .updated)
    }

    /// Notes that `object` changed in the way `kind` says.
    func notice(_ object: ManagedObject, as kind: ObjectChangeKind) {
        objectsDidChange.notice(object.objectID, object, kind)
    }

    /// Notes a change observers cannot follow object by object; `reset`: every object is gone.
    func noticeEverything(reset: Bool = false) {
        objectsDidChange.noticeEverything(reset: reset)
    }

    /// Tells observers what changed since they last heard. Called at the end of each outermost
    /// `perform` / `performAndWait` block, before a save and after a merge; call it yourself after
    /// changes made outside those (Core Data's `processPendingChanges`).
    /// Closes the undo manager's automatic group too.
    public func processPendingChanges() {
        undoRecorder?.performDidEnd()
        guard let delivery = objectsDidChange.takeDelivery() else { return }
        for observer in delivery.observers { observer(delivery.change) }
    }

    /// Notes what a merge changed (IDs saved or changed outside this context) and tells
    /// observers. With `listed` false (a large merge), fetched results controllers start over
    /// instead of looking at each ID.
    func noticeMerged(inserted: some Sequence<ObjectID>, updated: some Sequence<ObjectID>, deleted: some Sequence<ObjectID>,
                      permanentIDs: [ObjectID: ObjectID], listed: Bool = true) {
        guard objectsDidChange.isObserved else { return }
        func note(_ ids: some Sequence<ObjectID>, _ kind: ObjectChangeKind) {
            for id in ids { objectsDidChange.noticeMerged(id, kind, listed: listed) { self.registeredObject(for: id) } }
        }
        note(inserted, .inserted)
        note(updated, .updated)
        note(deleted, .deleted)
        if !listed { objectsDidChange.noticeEverything() }
        objectsDidChange.noticePermanentIDs(permanentIDs)
        processPendingChanges()
    }
}
