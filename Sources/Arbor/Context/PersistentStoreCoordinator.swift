import ArborEngine
import Foundation

/// Connects contexts to the persistent stores of one model (Core Data's
/// `NSPersistentStoreCoordinator`). Sendable: contexts on any queue share it.
///
/// Each entity lives in the first store whose configuration holds it; an object ID names its
/// store by UUID.
public final class PersistentStoreCoordinator: Sendable {
    public let managedObjectModel: ManagedObjectModel
    private let stores = Locked<[PersistentStore]>([])
    let saveObservers = SaveObservers()

    public init(managedObjectModel: ManagedObjectModel) {
        self.managedObjectModel = managedObjectModel
    }

    /// The stores, in the order they were added.
    public var persistentStores: [PersistentStore] { stores.withLock { $0 } }

    /// Opens the store file at `url` (creating it unless `options` say otherwise) and adds it.
    /// - Throws: `StoreError` (missing, foreign, corrupt file; model mismatch).
    @discardableResult
    public func addPersistentStore(at url: URL, configuration: String = ManagedObjectModel.defaultConfiguration,
                                   options: PersistentStore.Options = PersistentStore.Options()) throws -> PersistentStore {
        let store = try PersistentStore(url: url, model: managedObjectModel, configuration: configuration, options: options)
        try add(store)
        return store
    }

    /// Adds a store opened for this coordinator's model. When a migration added or changed
    /// derived attributes of the store's entities, their values are computed first (see
    /// `computePendingDerivations`).
    /// - Throws: `StoreError.notAStoreFile` when the store was opened with another model or is
    ///   already added; `ValidationError` when a derived value does not fit its attribute (the
    ///   store is not added then); store errors.
    public func add(_ store: PersistentStore) throws {
        guard store.model === managedObjectModel else {
            throw StoreError.notAStoreFile(path: store.path, detail: "the store was opened with another model object")
        }
        try stores.withLock { stores in
            guard !stores.contains(where: { $0.identifier == store.identifier }) else {
                throw StoreError.notAStoreFile(path: store.path, detail: "a store with this UUID is already added")
            }
            stores.append(store)
        }
        guard !store.isReadOnly, !managedObjectModel.derivations.isEmpty else { return }
        do {
            try computePendingDerivations(in: store)
        } catch {
            remove(store)
            throw error
        }
    }

    /// Removes a store; objects of its entities can no longer be loaded or saved.
    public func remove(_ store: PersistentStore) {
        stores.withLock { $0.removeAll { $0 === store } }
    }

    /// The store that holds objects of `id`: by UUID for permanent IDs, by entity otherwise.
    func store(for id: ObjectID) throws -> PersistentStore {
        try stores.withLock { stores in
            if let uuid = id.storeIdentifier {
                guard let store = stores.first(where: { $0.identifier == uuid }) else { throw ContextError.objectNotFound(id) }
                return store
            }
            guard let store = stores.first(where: { $0.holds(id.info) }) else { throw StoreError.noStoreForEntity(id.entityName) }
            return store
        }
    }

    /// The ID a URI from `ObjectID.uriRepresentation` names, when it belongs to one of the
    /// coordinator's stores and entities; nil otherwise.
    public func managedObjectID(forURIRepresentation uri: URL) -> ObjectID? {
        guard uri.scheme == "arbor", let host = uri.host, let uuid = UUID(uuidString: host) else { return nil }
        let parts = uri.path.split(separator: "/")
        guard parts.count == 2, let info = managedObjectModel.info(named: String(parts[0])),
              parts[1].first == "p", let key = Int64(parts[1].dropFirst()),
              persistentStores.contains(where: { $0.identifier == uuid }) else { return nil }
        return ObjectID(info: info, store: uuid, key: key)
    }
}

/// The whole stack in one object (Core Data's `NSPersistentContainer`): a model, a coordinator
/// with its store file, a main-queue view context, and background contexts on demand.
public final class PersistentContainer: Sendable {
    public let name: String
    public let managedObjectModel: ManagedObjectModel
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The context for the UI, on the main queue.
    public let viewContext: ManagedObjectContext

    /// Opens (or creates) the store file at `url` for `model`. Without a URL the file is
    /// `<name>.arbor` in the current directory.
    /// - Throws: `StoreError` when the file cannot be opened as a store of `model`.
    public convenience init(name: String, model: ManagedObjectModel, url: URL? = nil,
                            options: PersistentStore.Options = PersistentStore.Options()) throws {
        let location = url ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("\(name).arbor")
        var description = PersistentStoreDescription(url: location)
        description.options = options
        try self.init(name: name, model: model, stores: [description])
    }

    init(name: String, model: ManagedObjectModel, stores descriptions: [PersistentStoreDescription]) throws {
        self.name = name
        managedObjectModel = model
        persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
        for description in descriptions { try persistentStoreCoordinator.addPersistentStore(with: description) }
        viewContext = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: persistentStoreCoordinator)
        viewContext.name = "view"
    }

    /// A new private-queue context on the container's coordinator.
    public func newBackgroundContext() -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: persistentStoreCoordinator)
    }

    /// Runs `body` on a new background context.
    public func performBackgroundTask<T: Sendable>(_ body: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        let context = newBackgroundContext()
        return try await context.perform { try body(context) }
    }
}
