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
