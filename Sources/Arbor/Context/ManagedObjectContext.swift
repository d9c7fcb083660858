import ArborEngine
import Dispatch
import Foundation

/// A scratchpad of managed objects over a coordinator (Core Data's `NSManagedObjectContext`).
///
/// **Confinement.** A context and its objects belong to one queue: the main queue for a
/// `.mainQueue` context (the view context), a private serial queue otherwise. Run work with
/// `perform` (async) or `performAndWait`; objects are not `Sendable`, so handing one to another
/// context does not compile — pass `objectID`s. Using an object of another context in a call
/// (`delete`, a relationship) is reported as `ContextError.objectFromAnotherContext`.
///
/// **Identity map.** One object per ID per context. Unchanged objects are not retained and go
/// away when the app drops them (each takes itself out of the map as it deinitializes: release
/// objects on their context's queue, as every other use of them); inserted, updated and deleted
/// objects are held until saved.
public final class ManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    public enum ConcurrencyType: Sendable {
        case mainQueue
        case privateQueue
    }

    public let concurrencyType: ConcurrencyType
    public let persistentStoreCoordinator: PersistentStoreCoordinator?
    /// The context this one saves into (a child context), or nil when it saves to the stores.
    public let parent: ManagedObjectContext?
    /// A name for debugging.
    public var name: String?
    /// How old (in seconds) a row in the store's row cache may be to fulfill a fault. Negative
    /// (the default): any age; 0: always re-read the row from the file (Core Data's convention).
    public var stalenessInterval: TimeInterval = -1
    /// The last error met while firing a fault through a non-throwing accessor (the property
    /// then reads as its fallback value). Use `existingObject(with:)` to get such errors thrown.
    public internal(set) var lastFaultError: Error?
    /// How `save()` resolves optimistic-locking conflicts (default: `.error`).
    public var mergePolicy: MergePolicy = .error

    let queue: DispatchQueue
    /// The weak reference to this context that its objects share.
    let link = ContextLink()
    private let queueToken = DispatchSpecificKey<ObjectIdentifier>()
    /// The identity map. Unchecked: a context is used on its queue only, and no access to the
    /// map runs code that could reach the map again (objects are made between accesses; its
    /// entries hold no references, so editing it releases no object). A checked access costs
    /// about 120 instructions, and a fetch makes two per object (one to register it, one when
    /// it goes).
    @exclusivity(unchecked) var registered = IdentityMap()
    /// Inserted, updated and deleted objects, held strongly until saved or rolled back.
    var changed = ChangedObjects()
    /// Problems found by non-throwing setters, reported by the next save.
    var pendingFailures: [ValidationFailure] = []
    /// Set while `automaticallyMergesChangesFromParent` is on.
    var mergeObservation: SaveObservation?
    /// Told of every change to what this context's children see: its own saves, its children's
    /// saves into it and merges into it.
    let changeObservers = SaveObservers()
    /// Set once a child context exists: saves then remember which permanent ID each temporary
    /// ID became (`savedTemporaryIDs`), so children holding the temporary ID still find the object.
    let hasChildren = Locked(false)
    var savedTemporaryIDs: [ObjectID: ObjectID] = [:]
    /// What each `FetchableValue` type reads of each entity, resolved at its first fetch here.
    var resolvedValueFields: [ResolvedValueFields.Key: ResolvedValueFields] = [:]
    /// Objects-did-change observers (fetched results controllers) and what they have not heard.
    var objectsDidChange = ObjectsChangeNotifier()
    /// The undo manager (`undoManager`), told of every edit before it is made.
    var undoRecorder: ContextUndoManager?
    /// Nesting of `perform` blocks on the queue: changes are processed when the outermost ends.
    private var performDepth = 0

    var model: ManagedObjectModel? { persistentStoreCoordinator?.managedObjectModel }

    /// A context on `coordinator`.
    public convenience init(concurrencyType: ConcurrencyType, coordinator: PersistentStoreCoordinator?) {
        self.init(concurrencyType: concurrencyType, coordinator: coordinator, parent: nil)
    }

    /// A child context of `parent` (Core Data's nested context): it reads through the parent —
    /// faults take the parent's current values, fetches include the parent's unsaved changes —
    /// and `save()` pushes its changes into the parent only; the parent's save writes them to
    /// the stores. The child holds its parent strongly.
    ///
    /// The child calls into the parent with `parent.performAndWait`: never block the parent's
    /// queue waiting for the child (a main-queue parent and a child waited on from the main
    /// thread would deadlock, as in Core Data).
    public convenience init(concurrencyType: ConcurrencyType, parent: ManagedObjectContext) {
        parent.hasChildren.withLock { $0 = true }
        self.init(concurrencyType: concurrencyType, coordinator: parent.persistentStoreCoordinator, parent: parent)
    }

    private init(concurrencyType: ConcurrencyType, coordinator: PersistentStoreCoordinator?, parent: ManagedObjectContext?) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = coordinator
        self.parent = parent
        switch concurrencyType {
        case .mainQueue: queue = DispatchQueue.main
        case .privateQueue: queue = DispatchQueue(label: "arbor.context")
        }
        if concurrencyType == .privateQueue { queue.setSpecific(key: queueToken, value: ObjectIdentifier(self)) }
        link.context = self
        link.owner = Unmanaged.passUnretained(self)
        link.observesObjects = concurrencyType == .mainQueue
    }

    /// Whether this context's objects work with Swift's Observation: property reads inside
    /// `withObservationTracking` (or a SwiftUI view) are registered, and changes to them fire.
    /// On by default for a main-queue context, which a UI observes; off for private-queue
    /// contexts, so imports and background work pay nothing (a registered read costs about
    /// 110 instructions, an object's first one about 1,000 more).
    public var observesObjects: Bool {
        get { link.observesObjects }
        set { link.observesObjects = newValue }
    }

    deinit {
        link.isAlive = false
        // Objects prefetched in both directions keep each other alive (a stop its times, each
        // time its stop) until a reset or refresh lets go. Without their context they can no
        // longer load anything: the relatives are let go here, so such a graph is released.
        for object in liveRegisteredObjects { object.prefetched = [] }
    }

    public var description: String { "<ManagedObjectContext \(name ?? "") \(concurrencyType)>" }

    // MARK: Running work on the context's queue

    var isOnQueue: Bool {
        switch concurrencyType {
        case .mainQueue: return Thread.isMainThread
        case .privateQueue: return DispatchQueue.getSpecific(key: queueToken) == ObjectIdentifier(self)
        }
    }

    /// Runs `body` on the context's queue and returns its result. Observers (fetched results
    /// controllers) hear of the block's changes when it ends.
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try self.tracked(body) }) }
        }
    }

    /// Schedules `body` on the context's queue and returns at once.
    public func perform(_ body: @escaping @Sendable () -> Void) {
        queue.async { self.tracked(body) }
    }

    /// Runs `body` on the context's queue and waits for it (inline when already on the queue).
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if isOnQueue { return try tracked(body) }
        return try queue.sync { try tracked(body) }
    }

    /// Runs a block on the queue; when the outermost block ends, pending changes are processed.
    private func tracked<T>(_ body: () throws -> T) rethrows -> T {
        performDepth += 1
        defer {
            performDepth -= 1
            if performDepth == 0 {
                undoRecorder?.performDidEnd()
                if objectsDidChange.isObserved { processPendingChanges() }
            }
        }
        return try body()
    }

    // MARK: Identity map

    func store(for id: ObjectID) throws -> PersistentStore {
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }
        return try coordinator.store(for: id)
    }


    /// The slot of the attribute an `@Attribute` wrapper at `keyPath` names in `object`'s
    /// entity; `key` reads the wrapper's name on a miss. nil when the entity has no such
    /// attribute. O(1): a lookup by the key path's identity (at most 1,024 are cached).
    func attributeSlot(_ keyPath: AnyKeyPath, of object: ManagedObject, key: () -> String) -> Int? {
        if let slot = link.cachedSlot(keyPath, info: object.info) { return slot }
        guard let slot = object.info.anyAttribute(named: key())?.slot else { return nil }
        let identifier = KeyPathIdentity(id: ObjectIdentifier(keyPath))
        if link.attributeSlots.count < 1_024 || link.attributeSlots[identifier] != nil {
            link.attributeSlots[identifier] = ContextLink.AttributeSlot(keyPath: keyPath, info: object.info, slot: slot)
        }
        return slot
    }

    /// Registers `object` in the identity map.
    func register(_ object: ManagedObject) { registered.register(object) }

    /// Keeps `object`'s row in `store`'s row cache while the object lives. Done when the
    /// object first loads its row from the store (a fault firing, a batch filling), not when
    /// it is registered: objects a fetch fills hold their columns already, and most are never
    /// turned back into faults, so a cache entry for each would only cost time.
    func retainCachedRow(_ object: ManagedObject, in store: PersistentStore) {
        guard !object.objectID.isTemporaryID, object.cacheRetention == nil, let cache = store.storage.objectRowCache else { return }
        let key = RowKey(object.objectID)
        cache.retain(key)
        object.cacheRetention = (cache, key)
    }

    /// Takes `object` out of this context: forgotten by the identity map and the changed set,
    /// its `managedObjectContext` nil (deleted and saved, gone from the store, or given way).
    /// Takes `object` out of this context (its observers see its properties become empty).
    func detach(_ object: ManagedObject) {
        changingObserved(object) {
            unregister(object)
            object.managedObjectContext = nil
        }
    }

    func unregister(_ object: ManagedObject) {
        registered.remove(object)
        unmarkChanged(object)
    }

    /// Empties a deinitializing object's identity-map entry (before the map's next use).
    func forget(_ object: ManagedObject) { registered.noteDeparture(object) }

    /// The registered objects, retained (see `IdentityMap.liveObjects`).
    var liveRegisteredObjects: [ManagedObject] { registered.liveObjects }

    func registerInserted(_ object: ManagedObject) {
        willChange(object)
        object.insertedFlag = true
        object.isFaultState = false
        for attribute in object.info.attributes {
            if let value = attribute.description.defaultValue { object.changes[attribute.slot] = .value(value) }
        }
        register(object)
        markChanged(object)
        notice(object, as: .inserted)
        object.awakeFromInsert()
    }

    /// Inserts an object created without a context (Core Data's `insert(_:)`): only objects
    /// created with `init(context:)` for this context can be inserted.
    public func insert(_ object: ManagedObject) {
        guard object.managedObjectContext === self else {
            pendingFailures.append(ValidationFailure(objectID: object.objectID, entity: object.entityName, key: "",
                                                     kind: .objectFromAnotherContext(object.objectID)))
            return
        }
        if object.deletedFlag && !object.insertedFlag { return }
        if registered[object.objectID] !== object { registerInserted(object) }
    }

    /// Creates and inserts an object of the entity named `entityName`.
    /// - Throws: `ContextError.unknownEntity`.
    public func insertNewObject(forEntityName entityName: String) throws -> ManagedObject {
        guard let info = model?.info(named: entityName) else { throw ContextError.unknownEntity(entityName) }
        let object = info.managedObjectClass.init(ObjectConstruction(id: ObjectID.makeTemporary(info), context: self))
        registerInserted(object)
        return object
    }

    /// The object for `id`: the registered one, or a new fault. Never does I/O; reading a
    /// property of a fault whose row is gone reads fallback values and sets `lastFaultError`.
    /// - Complexity: O(1): one probe of the identity map, two when the object is created.
    public func object(with id: ObjectID) -> ManagedObject {
        let (found, slot) = registered.lookup(id)
        if let found { return found }
        // Made outside any access to the map: a subclass's initializer may use the context
        // (the slot is then probed again if the map changed).
        let object = id.info.managedObjectClass.init(ObjectConstruction(id: id, context: self))
        registered.register(object, at: slot)
        return object
    }

    /// The object for `id` with its data loaded.
    /// - Throws: `ContextError.objectNotFound` when no row exists; store errors.
    public func existingObject(with id: ObjectID) throws -> ManagedObject {
        let object = self.object(with: id)
        if object.deletedFlag && object.insertedFlag == false && changed[id] == nil { throw ContextError.objectNotFound(id) }
        try fulfill(object)
        return object
    }

    /// The registered object for `id`, if this context has one; never creates one.
    public func registeredObject(for id: ObjectID) -> ManagedObject? { registered[id] }

    /// Every object the context currently holds.
    public var registeredObjects: Set<ManagedObject> {
        Set(liveRegisteredObjects)
    }

    /// Checks that `object` belongs to this context.
    func owns(_ object: ManagedObject) -> Bool { object.managedObjectContext === self }
}

/// A key path's identity as a dictionary key, hashed with `mixedHash` (every property read
/// looks its slot up by it).
struct KeyPathIdentity: Hashable {
    let id: ObjectIdentifier

    func hash(into hasher: inout Hasher) { hasher.combine(id) }
    func _rawHashValue(seed: Int) -> Int { mixedHash(UInt64(UInt(bitPattern: id)), seed: seed) }
}
