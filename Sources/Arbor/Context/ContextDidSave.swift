import ArborEngine
import Foundation

/// What one save changed, by ID (Core Data's `NSManagedObjectContextDidSave` user info).
/// Sendable: deliver it to any context and merge it there with `mergeChanges(fromContextDidSave:)`.
public struct ContextDidSave: Sendable {
    /// Objects the save inserted (with their permanent IDs).
    public let inserted: Set<ObjectID>
    /// Objects whose attributes or relationships the save changed.
    public let updated: Set<ObjectID>
    /// Objects the save deleted.
    public let deleted: Set<ObjectID>
    /// The saving context's `name`.
    public let contextName: String?
    /// The saving context, so a context skips its own saves when merging.
    let source: ObjectIdentifier
    /// The permanent ID of each inserted object by its temporary ID (a child context that
    /// pushed the object knows it by the temporary one until it merges this notification).
    public internal(set) var permanentIDs: [ObjectID: ObjectID] = [:]
}

/// A registration for did-save notifications; `cancel()` (or releasing it) ends it.
public final class SaveObservation: Sendable {
    private let cancellation: @Sendable () -> Void
    private let cancelled = Locked(false)

    init(_ cancellation: @escaping @Sendable () -> Void) { self.cancellation = cancellation }

    /// Stops the notifications. Idempotent.
    public func cancel() {
        let first = cancelled.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { cancellation() }
    }

    deinit { cancel() }
}

/// The observers of saves made through one coordinator.
final class SaveObservers: Sendable {
    private struct State {
        var next = 0
        var observers: [Int: @Sendable (ContextDidSave) -> Void] = [:]
    }
    private let state = Locked(State())

    func add(_ body: @escaping @Sendable (ContextDidSave) -> Void) -> SaveObservation {
        let key = state.withLock { state -> Int in
            state.next += 1
            state.observers[state.next] = body
            return state.next
        }
        return SaveObservation { [weak self] in self?.state.withLock { _ = $0.observers.removeValue(forKey: key) } }
    }

    func post(_ notification: ContextDidSave) {
        let observers = state.withLock { Array($0.observers.sorted { $0.key < $1.key }.map(\.value)) }
        for observer in observers { observer(notification) }
    }
}

extension PersistentStoreCoordinator {
    /// Calls `body` after every save of any context on this coordinator, on the saving
    /// context's queue, once the save is committed. Keep the returned observation: releasing
    /// or cancelling it ends the calls.
    public func addDidSaveObserver(_ body: @escaping @Sendable (ContextDidSave) -> Void) -> SaveObservation {
        saveObservers.add(body)
    }

    /// Every save of any context on this coordinator, as an asynchronous sequence (ends when
    /// the consuming task is cancelled).
    public var didSaveNotifications: AsyncStream<ContextDidSave> {
        AsyncStream { continuation in
            let observation = saveObservers.add { continuation.yield($0) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }
}

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
        guard notification.source != ObjectIdentifier(self) else { return }
        if !notification.permanentIDs.isEmpty { adoptPermanentIDs(notification.permanentIDs) }
        for id in notification.updated {
            if let object = registeredObject(for: id) { refresh(object, mergeChanges: true) }
        }
        for id in notification.deleted {
            guard let object = registeredObject(for: id) else { continue }
            detach(object)
            object.isFaultState = true
        }
        // Rows in the stores' caches were replaced by the save; objects refreshed above read them.
        noticeMerged(notification.inserted.union(notification.updated).union(notification.deleted),
                     permanentIDs: notification.permanentIDs)
        changeObservers.post(notification)
    }

    /// Gives objects known here by a temporary ID that a save (of an ancestor) made permanent
    /// their permanent ID, in the identity map and in every reference and member list.
    func adoptPermanentIDs(_ permanent: [ObjectID: ObjectID]) {
        let remap: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        for object in liveRegisteredObjects {
            if let newID = permanent[object.objectID], registered[newID] == nil {
                let wasChanged = object.isMarkedChanged
                unregister(object)
                object.objectID = newID
                register(object)
                if wasChanged { markChanged(object) }
            }
            object.committedValues = object.committedValues?.remapped(remap)
            object.changes.updateEach { $0 = $0.remapped(remap) }
            for slot in object.toMany.indices { object.toMany[slot]?.remap(remap) }
        }
    }

    /// The did-save notification of a save that just committed, from the objects it saved
    /// (after their IDs became permanent).
    func didSaveNotification(inserted: [ManagedObject], updated: [ManagedObject], deleted: [ObjectID]) -> ContextDidSave {
        ContextDidSave(inserted: Set(inserted.map(\.objectID)), updated: Set(updated.map(\.objectID)), deleted: Set(deleted),
                       contextName: name, source: ObjectIdentifier(self))
    }
}
