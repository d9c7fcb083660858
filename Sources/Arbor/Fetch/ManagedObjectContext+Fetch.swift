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
    public func fetch<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> FetchResults<T> {
        if request.fetchBatchSize > 0 { return try batchedResults(request, as: type) }
        return FetchResults(objects: try fetchObjects(request, as: type), context: self)
    }

    /// Every object of `request` at once.
    func fetchObjects(_ request: FetchRequest) throws -> [ManagedObject] {
        let (entries, _) = try execute(request)
        let fill = request.includesPropertyValues && (!request.returnsObjectsAsFaults || !request.relationshipKeyPathsForPrefetching.isEmpty)
        // Room for every object up front: the identity map would otherwise rehash as it grows.
        registered.reserveCapacity(forMore: entries.count)
        // Rows come store by store: the store of the previous entry is looked up once.
        // A loop, not `map`: a variable captured by the closure costs a run-time exclusivity
        // check at each access.
        var lastStore: PersistentStore?
        var objects: [ManagedObject] = []
        objects.reserveCapacity(entries.count)
        for entry in entries {
            let object = self.object(with: entry.id)
            if object.isFaultState, object.committedValues == nil {
                if fill, parent != nil {
                    fulfillQuietly(object)
                } else if parent == nil, let row = entry.row, !entry.id.isTemporaryID {
                    // Filled, or (a fault) holding the row it fires with, without a read: the
                    // row data a Core Data fetch leaves in its row cache.
                    if lastStore?.identifier != entry.id.storeIdentifier { lastStore = try? self.store(for: entry.id) }
                    if let store = lastStore { try? apply(row, to: object, from: store, firing: fill) }
                }
            }
            objects.append(object)
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
        for (object, ids) in targetsOf { object.prefetched.append(contentsOf: ids.map { self.object(with: $0) }) }
        var byStore: [ObjectIdentifier: (PersistentStore, [ManagedObject])] = [:]
        for object in related where object.isFaultState && !object.objectID.isTemporaryID {
            guard let store = try? coordinator.store(for: object.objectID) else { continue }
            byStore[ObjectIdentifier(store), default: (store, [])].1.append(object)
        }
        for (store, faults) in byStore.values { fill(faults, from: store) }
        prefetch(related, path: Array(path.dropFirst()))
    }

    /// `fetchObjects(_:)` as `T` (objects of other classes are skipped).
    func fetchObjects<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        // A plain loop over the concrete array: `compactMap` runs unspecialized here (T is
        // generic) and cost about 1,300 instructions an object in its iterator and metadata.
        let objects = try fetchObjects(request)
        var typed: [T] = []
        typed.reserveCapacity(objects.count)
        for object in objects {
            if let object = object as? T { typed.append(object) }
        }
        return typed
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

    /// The plan of each store's part of `request`, and the rows it examined when run.
    public func explain(_ request: FetchRequest) throws -> [FetchStatistics] {
        try execute(request).statistics
    }

    /// Runs `request`; each entry carries the values of the sort key paths, then of
    /// `extraKeyPaths`.
    func execute(_ request: FetchRequest, extraKeyPaths: [String] = [],
                 onProgress: ((Int) throws -> Void)? = nil) throws -> (entries: [FetchedRow], statistics: [FetchStatistics]) {
        guard let coordinator = persistentStoreCoordinator, let model else { throw ContextError.noPersistentStore }
        guard let info = model.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        let started = ContinuousClock.now
        if let predicate = request.predicate { try PredicateChecker(model: model).check(predicate, entity: info) }
        let keyPaths = (request.sortDescriptors.map(\.keyPath) + extraKeyPaths).map { $0.split(separator: ".").map(String.init) }
        for path in keyPaths { try PredicateChecker(model: model).checkPath(path, from: info, allowToMany: false) }
        var entries: [FetchedRow] = []
        var statistics: [FetchStatistics] = []
        // A stored row's relationships may lead to objects changed in this context: then the
        // store only narrows by the object's own columns and the whole predicate is evaluated
        // on the objects, so the answer is the one in-memory evaluation gives.
        // A child context sees its ancestors' unsaved changes as if they were stored.
        let inherited = inheritedPendingIDs()
        let pending = (request.includesPendingChanges && !changed.isEmpty) || !inherited.isEmpty
        // Asked only with pending changes (where it decides what the store is asked).
        let followsRelationships = pending && (request.predicate.map { $0.followsRelationships(info) } ?? false)
        let storePredicate = pending && followsRelationships ? request.predicate?.ownColumnConjuncts(info) : request.predicate
        let stores = searchedStores(request, info, coordinator)
        var query = StoreQuery(entity: info, predicate: storePredicate, includesSubentities: request.includesSubentities,
                               keyPaths: keyPaths, sortDescriptors: request.sortDescriptors,
                               needsRows: request.includesPropertyValues && request.resultType != .objectIDs && request.resultType != .count,
                               onProgress: onProgress)
        // One store's rows are the answer (no pending change to merge, no other store's rows to
        // interleave): it may stop once it has offset + limit of them in order.
        if request.fetchLimit > 0, !pending, stores.count == 1 {
            query.rowLimit = max(request.fetchOffset, 0) + request.fetchLimit
        }
        for store in stores {
            let (rows, stats) = try store.storage.fetch(query)
            // One store (the common case) hands its array over instead of copying it.
            if entries.isEmpty { entries = rows } else { entries.append(contentsOf: rows) }
            statistics.append(stats)
        }
        if pending && followsRelationships, let predicate = request.predicate {
            var evaluator = PredicateEvaluator(resolver: ContextResolver(context: self))
            entries = try entries.filter { entry in
                guard changed[entry.id] == nil, !inherited.contains(entry.id) else { return true }  // re-evaluated below
                let object = self.object(with: entry.id)
                if object.isFaultState {
                    if parent != nil {
                        guard fulfillQuietly(object) else { return false }
                    } else if let row = entry.row, let store = try? store(for: entry.id) {
                        try apply(row, to: object, from: store)
                    }
                }
                return try evaluator.evaluate(predicate, ObjectSubject(object: object, context: self))
            }
        }
        if pending {
            try mergePendingChanges(into: &entries, request: request, info: info, keyPaths: keyPaths,
                                    own: request.includesPendingChanges, inherited: inherited)
        }
        if !request.sortDescriptors.isEmpty {
            // Sorting positions moves integers, not rows (a row's copy retains its arrays).
            let order = entries.withUnsafeBufferPointer { rows in
                rows.indices.sorted { Self.precedes(rows[$0], rows[$1], request.sortDescriptors) }
            }
            entries = order.map { entries[$0] }
        }
        let start = min(max(request.fetchOffset, 0), entries.count)
        var end = entries.count
        if request.fetchLimit > 0 { end = min(end, start + request.fetchLimit) }
        let logger = ArborLog.fetches
        if logger.logLevel <= .debug {
            let plans = statistics.map { "\($0.plan): examined \($0.rowsExamined), matched \($0.rowsMatched)" + ($0.suggestion.map { "; \($0)" } ?? "") }
            logger.debug("fetch \(request.entityName) where \(request.predicate.map(PredicateFormatter.summary) ?? "TRUEPREDICATE"): \(plans.joined(separator: " | ")); returned \(end - start) in \(ContinuousClock.now - started)")
        }
        return (Array(entries[start..<end]), statistics)
    }

    /// The stores a request reads: those holding the entity, narrowed to `affectedStores`.
    func searchedStores(_ request: FetchRequest, _ info: EntityInfo, _ coordinator: PersistentStoreCoordinator) -> [PersistentStore] {
        coordinator.persistentStores.filter { store in
            store.holds(info) && (request.affectedStores.map { $0.contains { $0 === store } } ?? true)
        }
    }

    /// Replaces stored rows of changed objects by their in-memory state, drops deleted ones and
    /// adds matching inserted ones.
    /// `own`: this context's changes count; `inherited`: IDs its ancestors changed (their
    /// current state comes through the parent).
    private func mergePendingChanges(into entries: inout [FetchedRow], request: FetchRequest, info: EntityInfo,
                                     keyPaths: [[String]], own: Bool, inherited: Set<ObjectID>) throws {
        let mine = own ? Array(changed.values) : []
        entries.removeAll { (own && changed[$0.id] != nil) || inherited.contains($0.id) }
        var candidates = mine
        for id in inherited where !own || changed[id] == nil {
            let object = self.object(with: id)
            // Deleted in an ancestor, or gone: not a result.
            guard object.insertedFlag || (try? fulfill(object)) != nil else { continue }
            candidates.append(object)
        }
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: self))
        for object in candidates where !object.deletedFlag {
            let matchesEntity = request.includesSubentities ? info.includes(object.info) : object.info === info
            guard matchesEntity else { continue }
            let subject = ObjectSubject(object: object, context: self)
            if let predicate = request.predicate, try !evaluator.evaluate(predicate, subject) { continue }
            let values = try keyPaths.map { try evaluator.follow($0, from: .object(object.objectID), start: subject) }
            entries.append(FetchedRow(id: object.objectID, row: nil, values: values))
        }
    }

    /// Sort order: each descriptor in turn (nil first when ascending), then saved objects by
    /// primary key, then unsaved ones in creation order.
    static func precedes(_ a: FetchedRow, _ b: FetchedRow, _ descriptors: [ObjectSortDescriptor]) -> Bool {
        for (index, descriptor) in descriptors.enumerated() {
            let x = a.scalar(index), y = b.scalar(index)
            let order: ComparisonResult
            switch (x.isNull, y.isNull) {
            case (true, true): order = .orderedSame
            case (true, false): order = .orderedAscending
            case (false, true): order = .orderedDescending
            default: order = ValueOrder.compare(x, y, descriptor.options) ?? .orderedSame
            }
            if order == .orderedSame { continue }
            return descriptor.ascending ? order == .orderedAscending : order == .orderedDescending
        }
        return (a.id.isTemporaryID ? 1 : 0, a.id.primaryKey) < (b.id.isTemporaryID ? 1 : 0, b.id.primaryKey)
    }
}
