import Foundation
import Logging

extension ManagedObjectContext {
    /// The objects that match `request`, sorted, after offset and limit.
    ///
    /// Stores are read through the query planner (an index range when one covers the predicate,
    /// otherwise a scan); with `includesPendingChanges` (the default) the context's unsaved
    /// inserts, updates and deletes are reflected first, then sort, offset and limit apply.
    /// - Throws: `ContextError.unknownEntity`, `ObjectPredicateError` (unknown key, type mismatch),
    ///   store errors.
    ///
    /// With a `fetchBatchSize`, the result holds only the matching rows' keys and materializes
    /// objects a batch at a time as they are accessed (see `FetchResults`).
    /// - Complexity: the search, O(log n + rows examined); then O(1) per object, made when the
    ///   fetch runs (no batch size) or when its batch is first accessed.
    public func fetch(_ request: FetchRequest) throws -> FetchResults<ManagedObject> {
        if request.fetchBatchSize > 0 { return try batchedResults(request, as: ManagedObject.self) }
        return FetchResults(objects: try fetchObjects(request), context: self)
    }

    /// Typed `fetch`: the objects of `request` as `T` (objects of other classes are skipped).
    /// Inlinable: the caller's module makes the result's type once (a generic type made in
    /// this module would be looked up on every fetch).
    @inlinable
    public func fetch<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> FetchResults<T> {
        if request.fetchBatchSize > 0 { return try batchedResults(request, as: type) }
        return FetchResults(objects: try fetchObjects(request, as: type), context: self)
    }

    /// How many rows ahead a fetch asks for the identity map's entries (`IdentityMap.prefetch`).
    static let identityPrefetchDistance = 8

    /// Every object of `request` at once.
    func fetchObjects(_ request: FetchRequest) throws -> [ManagedObject] {
        try fetchObjects(request, as: ManagedObject.self)
    }

    /// `fetchObjects(_:)`, only the objects that are `T`s (objects of other classes are
    /// skipped), checked as they are registered: one array, not a second one filtered from the first.
    @usableFromInline
    func fetchObjects<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> [ManagedObject] {
        var (entries, _) = try execute(request)
        let fill = request.includesPropertyValues && (!request.returnsObjectsAsFaults || !request.relationshipKeyPathsForPrefetching.isEmpty)
        // Room for every object up front: the identity map would otherwise rehash as it grows.
        registered.reserveCapacity(forMore: entries.count)
        let prefetching = registered.outgrowsCaches
        // Rows come store by store: the store of the previous entry is looked up once (known
        // by the ID's store bits: its UUID would be made for every entry to be compared).
        // A loop, not `map`: a variable captured by the closure costs a run-time exclusivity
        // check at each access.
        var lastStore: PersistentStore?, lastStoreBits: ObjectID.StoreBits?
        var objects: [ManagedObject] = []
        objects.reserveCapacity(entries.count)
        // By index, each row moved out of its entry: a copy of the entry would retain the
        // parts of its ID and row, and release them again.
        for index in entries.indices {
            // The entries of a table larger than the caches are misses: each asked for ahead.
            if prefetching, index &+ Self.identityPrefetchDistance < entries.endIndex {
                registered.prefetch(hashBits: entries[index &+ Self.identityPrefetchDistance].id.hashBits)
            }
            let object = self.object(with: entries[index].id)
            if object.isFaultState, !object.hasCommittedValues {
                if fill, parent != nil {
                    fulfillQuietly(object)
                } else if parent == nil, !entries[index].id.isTemporaryID, let row = entries[index].row.take() {
                    // Filled, or (a fault) holding the row it fires with, without a read: the
                    // row data a Core Data fetch leaves in its row cache.
                    let storeBits = entries[index].id.storeBits
                    if lastStore == nil || lastStoreBits != storeBits {
                        lastStore = try? self.store(for: entries[index].id)
                        lastStoreBits = storeBits
                    }
                    if let store = lastStore { try? apply(row, to: object, from: store, firing: fill) }
                }
            }
            // Checked as the object is taken: a plain cast of a class, with no metadata
            // search (`compactMap` over a second array ran unspecialized here).
            if object is T { objects.append(consume object) }
        }
        for keyPath in request.relationshipKeyPathsForPrefetching {
            prefetch(objects, path: keyPath.split(separator: ".").map(String.init))
        }
        return objects
    }

    /// Loads the objects at the end of each step of `path` for all `objects` at once: to-one
    /// targets and to-many members are filled per store in one read transaction.
    func prefetch(_ objects: [ManagedObject], path: [String]) {
        guard let key = path.first, let coordinator = persistentStoreCoordinator else { return }
        var targets: [ObjectID] = []
        var seen: Set<ObjectID> = []
        var targetsOf: [(ManagedObject, [ObjectID])] = []
        for object in objects {
            guard let relationship = object.info.relationship(named: key) else { continue }
            let ids = relationship.kind == .toOne ? toOneTarget(object, relationship).map { [$0] } ?? [] : members(object, relationship)
            targetsOf.append((object, ids))
            for id in ids where seen.insert(id).inserted { targets.append(id) }
        }
        let related = targets.map { object(with: $0) }
        for (object, ids) in targetsOf { object.keepPrefetched(ids.map { self.object(with: $0) }) }
        var byStore: [ObjectIdentifier: (PersistentStore, [ManagedObject])] = [:]
        for object in related where object.isFaultState && !object.objectID.isTemporaryID {
            guard let store = try? coordinator.store(for: object.objectID) else { continue }
            byStore[ObjectIdentifier(store), default: (store, [])].1.append(object)
        }
        for (store, faults) in byStore.values { fill(faults, from: store) }
        prefetch(related, path: Array(path.dropFirst()))
    }

    /// The IDs of the objects that match `request`, without instantiating objects.
    /// Rows the search answers by key alone are not read.
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ObjectID] {
        var ids = request
        ids.includesPropertyValues = false
        return try execute(ids).entries.map(\.id)
    }

    /// The number of objects `request` would return. Rows the search answers by key alone
    /// are not read.
    public func count(for request: FetchRequest) throws -> Int {
        var counting = request
        counting.sortDescriptors = []
        counting.includesPropertyValues = false
        return try execute(counting).entries.count
    }

    /// The plan of each store's part of `request`, and the rows it examined when run. A
    /// dictionary request read from stored columns ends with its value step
    /// (`FetchStatistics.valuePath`: `DICTIONARIES (…) FROM STORED COLUMNS IN PLACE, NO OBJECTS`).
    public func explain(_ request: FetchRequest) throws -> [FetchStatistics] {
        if request.resultType == .dictionaries, let info = model?.info(named: request.entityName) {
            let shaping = try DictionaryFetch(request, info: info)
            if shaping.readsStoredColumnsOnly(info) {
                let run = try columnDictionaries(shaping)
                return Self.withValuePath(run.statistics, "DICTIONARIES", shaping.properties.map(\.keyPath), fromObjects: run.fromObjects,
                                          inPlace: run.inPlace)
            }
        }
        return try execute(request).statistics
    }

    /// Runs `request` (see `ContextFetch`); each entry carries the values of the sort key
    /// paths, then of `extraKeyPaths`.
    func execute(_ request: FetchRequest, extraKeyPaths: [String] = [],
                 onProgress: ((Int) throws -> Void)? = nil) throws -> (entries: [FetchedRow], statistics: [FetchStatistics]) {
        try ContextFetch.rows(of: request, in: self, extraKeyPaths: extraKeyPaths, onProgress: onProgress)
    }

    /// The stores a request reads: those holding the entity, narrowed to `affectedStores`.
    func searchedStores(_ request: FetchRequest, _ info: EntityInfo, _ coordinator: PersistentStoreCoordinator) -> [PersistentStore] {
        let stores = coordinator.persistentStores, affected = request.affectedStores
        func searched(_ store: PersistentStore) -> Bool { store.holds(info) && (affected.map { $0.contains { $0 === store } } ?? true) }
        // Usually every store is searched (one store, no affected stores set): no new array.
        return stores.allSatisfy(searched) ? stores : stores.filter(searched)
    }
}
