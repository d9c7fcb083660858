import Foundation
import Logging

/// One fetch of a context, from the request to the rows it returns:
///
/// 1. **Check** the predicate and the sort and extra key paths against the entity.
/// 2. **Ask each store** that holds the entity with a `StoreQuery`. With unsaved changes that a
///    predicate through relationships could see, the store narrows by the object's own columns
///    only and the whole predicate is evaluated here on the objects.
/// 3. **Reconcile with unsaved changes**, this context's and (for a child) its ancestors':
///    changed objects' stored rows are replaced by their current state, deleted ones dropped,
///    matching inserted ones added.
/// 4. **Sort, then page** (offset and limit).
///
/// Without unsaved changes and with one store, the store's answer is final and it may stop
/// after offset + limit rows.
///
/// Made once per fetch on the path of every small fetch: it does not copy the request (each
/// step borrows it) and cannot be copied itself.
struct ContextFetch: ~Copyable {
    /// `Set<ObjectID>` in a type of its own. A non-copyable struct destroys a set field through
    /// the set's run-time metadata, and a process's first use of that metadata searches every
    /// loaded conformance for `ObjectID: Hashable`: about 400k instructions, a tenth of a fresh
    /// process's first fetch. This type's metadata is static.
    struct InheritedIDs {
        let ids: Set<ObjectID>
    }

    let context: ManagedObjectContext
    let coordinator: PersistentStoreCoordinator
    let info: EntityInfo
    /// The sort key paths, then the extra ones, split at dots.
    let keyPaths: [[String]]
    /// IDs the context's ancestors changed (empty for a root context).
    let inherited: InheritedIDs
    /// Whether unsaved changes take part.
    let pending: Bool

    /// The rows of `request` in `context`, each with the values of the sort key paths, then of
    /// `extraKeyPaths`; and each store's plan and counts.
    /// - Throws: `ContextError.noPersistentStore`, `ContextError.unknownEntity`,
    ///   `ObjectPredicateError` (unknown key, type mismatch); store errors; errors evaluating
    ///   the predicate on changed objects; what `onProgress` throws (it is told the rows
    ///   examined as a store goes).
    static func rows(of request: FetchRequest, in context: ManagedObjectContext, extraKeyPaths: [String],
                     onProgress: ((Int) throws -> Void)?) throws -> (entries: [FetchedRow], statistics: [FetchStatistics]) {
        try ContextFetch(context, request, extraKeyPaths: extraKeyPaths).run(request, onProgress: onProgress)
    }

    /// The value path: for each row `request` matches, in the order `rows(of:)` would give
    /// it after offset and limit, `slots` is loaded from its stored columns and `visit` called
    /// with its ID and store; no row is kept. nil, with nothing read, when unsaved changes take
    /// part or the request sorts (values must then come through `rows(of:)`).
    /// - Throws: what `rows(of:)` throws; what `visit` throws.
    static func visitStoredRows(of request: FetchRequest, in context: ManagedObjectContext, loading slots: RowSlots,
                                _ visit: (ObjectID, PersistentStore) throws -> Void) throws -> [FetchStatistics]? {
        guard request.sortDescriptors.isEmpty else { return nil }
        let fetch = try ContextFetch(context, request, extraKeyPaths: [])
        guard !fetch.pending else { return nil }
        return try fetch.visit(request, slots, visit)
    }

    private init(_ context: ManagedObjectContext, _ request: FetchRequest, extraKeyPaths: [String]) throws {
        guard let coordinator = context.persistentStoreCoordinator, let model = context.model else { throw ContextError.noPersistentStore }
        // A prepared request's entity was found when it was prepared (for this model).
        let prepared = request.prepared.flatMap { $0.model === model ? $0.info : nil }
        guard let info = prepared ?? model.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        // A prepared request's predicate and sorts were checked when it was prepared, and its
        // bound values when they were bound.
        if request.prepared == nil, let predicate = request.predicate { try PredicateChecker(model: model).check(predicate, entity: info) }
        let sorts = request.sortDescriptors
        let keyPaths = sorts.isEmpty && extraKeyPaths.isEmpty ? []
            : (sorts.map(\.keyPath) + extraKeyPaths).map { $0.split(separator: ".").map(String.init) }
        if request.prepared == nil || !extraKeyPaths.isEmpty {
            for path in keyPaths { try PredicateChecker(model: model).checkPath(path, from: info, allowToMany: false) }
        }
        self.context = context
        self.coordinator = coordinator
        self.info = info
        self.keyPaths = keyPaths
        inherited = InheritedIDs(ids: context.inheritedPendingIDs())
        pending = (request.includesPendingChanges && !context.changed.isEmpty) || !inherited.ids.isEmpty
    }

    private func run(_ request: FetchRequest, onProgress: ((Int) throws -> Void)?) throws -> (entries: [FetchedRow], statistics: [FetchStatistics]) {
        let started = ArborLog.logsFetches ? ContinuousClock.now : nil
        // Only with pending changes: reading a prepared request's predicate substitutes its values.
        let predicate = pending ? request.predicate : nil
        let followsRelationships = predicate.map { $0.followsRelationships(info) } ?? false
        var (entries, statistics) = try readStores(request, ownColumnsOnly: followsRelationships, onProgress: onProgress)
        if followsRelationships, let predicate { try evaluateOnObjects(predicate, &entries) }
        if pending { try mergePendingChanges(request, into: &entries) }
        let descriptors = request.sortDescriptors
        if !descriptors.isEmpty {
            // Sorting positions moves integers, not rows (a row's copy retains its arrays).
            let order = entries.withUnsafeBufferPointer { rows in
                rows.indices.sorted { Self.precedes(rows[$0], rows[$1], descriptors) }
            }
            entries = order.map { entries[$0] }
        }
        let page = DictionaryFetch.paged(entries, request)
        log(request, statistics, returned: page.count, since: started)
        return (page, statistics)
    }

    /// `visitStoredRows` once it applies: each store in turn visits its matches; the first
    /// `fetchOffset` are passed over and the visit stops at `fetchLimit`.
    private func visit(_ request: FetchRequest, _ slots: RowSlots,
                       _ body: (ObjectID, PersistentStore) throws -> Void) throws -> [FetchStatistics] {
        let started = ArborLog.logsFetches ? ContinuousClock.now : nil
        var query = StoreQuery(entity: info, boundPredicate: request.boundPredicate, includesSubentities: request.includesSubentities,
                               needsRows: true, prepared: request.prepared)
        let offset = max(request.fetchOffset, 0)
        let limit = request.fetchLimit > 0 ? request.fetchLimit : nil
        var matched = 0, returned = 0
        var statistics: [FetchStatistics] = []
        for store in context.searchedStores(request, info, coordinator) {
            if let limit {
                if returned >= limit { break }
                // The rows this store may stop after: those still to pass over, then the rest of the page.
                query.rowLimit = offset + limit - matched
            }
            statistics.append(try store.storage.visitMatches(query, loading: slots) { id in
                matched += 1
                guard matched > offset, limit.map({ returned < $0 }) ?? true else { return }
                returned += 1
                try body(id, store)
            })
        }
        log(request, statistics, returned: returned, since: started)
        return statistics
    }

    /// Every searched store's rows, one store after another.
    private func readStores(_ request: FetchRequest, ownColumnsOnly: Bool, onProgress: ((Int) throws -> Void)?) throws -> ([FetchedRow], [FetchStatistics]) {
        let stores = context.searchedStores(request, info, coordinator)
        var query = StoreQuery(entity: info,
                               boundPredicate: ownColumnsOnly ? BoundPredicate(request.predicate?.ownColumnConjuncts(info)) : request.boundPredicate,
                               includesSubentities: request.includesSubentities,
                               keyPaths: keyPaths, sortDescriptors: request.sortDescriptors,
                               needsRows: request.includesPropertyValues && request.resultType != .objectIDs && request.resultType != .count,
                               onProgress: onProgress, prepared: ownColumnsOnly ? nil : request.prepared)
        // One store's rows are the answer (no pending change to merge, no other store's rows to
        // interleave): it may stop once it has offset + limit of them in order.
        if request.fetchLimit > 0, !pending, stores.count == 1 {
            query.rowLimit = max(request.fetchOffset, 0) + request.fetchLimit
        }
        var entries: [FetchedRow] = []
        var statistics: [FetchStatistics] = []
        for store in stores {
            let (rows, stats) = try store.storage.fetch(query)
            // One store (the common case) hands its array over instead of copying it.
            if entries.isEmpty { entries = rows } else { entries.append(contentsOf: rows) }
            statistics.append(stats)
        }
        return (entries, statistics)
    }

    /// Keeps the stored rows whose objects match `predicate` as the context sees them (their
    /// relationships may lead to changed objects). Changed objects are left for
    /// `mergePendingChanges`.
    private func evaluateOnObjects(_ predicate: ObjectPredicate, _ entries: inout [FetchedRow]) throws {
        let context = self.context, inherited = self.inherited.ids
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: context))
        entries = try entries.filter { entry in
            guard context.changed[entry.id] == nil, !inherited.contains(entry.id) else { return true }
            let object = context.object(with: entry.id)
            if object.isFaultState {
                if context.parent != nil {
                    guard context.fulfillQuietly(object) else { return false }
                } else if let row = entry.row, let store = try? context.store(for: entry.id) {
                    try context.apply(row, to: object, from: store)
                }
            }
            return try evaluator.evaluate(predicate, ObjectSubject(object: object, context: context))
        }
    }

    /// Replaces stored rows of changed objects by their in-memory state, drops deleted ones and
    /// adds matching inserted ones.
    /// This context's changes count when the request includes pending changes; its ancestors'
    /// always do (their current state comes through the parent).
    private func mergePendingChanges(_ request: FetchRequest, into entries: inout [FetchedRow]) throws {
        let context = self.context, inherited = self.inherited.ids
        let own = request.includesPendingChanges, changed = context.changed
        let mine = own ? Array(changed.values) : []
        entries.removeAll { (own && changed[$0.id] != nil) || inherited.contains($0.id) }
        var candidates = mine
        for id in inherited where !own || changed[id] == nil {
            let object = context.object(with: id)
            // Deleted in an ancestor, or gone: not a result.
            guard object.insertedFlag || (try? context.fulfill(object)) != nil else { continue }
            candidates.append(object)
        }
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: context))
        let predicate = request.predicate  // read once: a prepared request's values are substituted on each read
        for object in candidates where !object.deletedFlag {
            let matchesEntity = request.includesSubentities ? info.includes(object.info) : object.info === info
            guard matchesEntity else { continue }
            let subject = ObjectSubject(object: object, context: context)
            if let predicate, try !evaluator.evaluate(predicate, subject) { continue }
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

    /// Logs the fetch at `.debug` (`started`: when it started; nil when fetches are not logged).
    private func log(_ request: FetchRequest, _ statistics: [FetchStatistics], returned: Int, since started: ContinuousClock.Instant?) {
        guard let started else { return }
        let logger = ArborLog.fetches
        guard logger.logLevel <= .debug else { return }
        let plans = statistics.map { "\($0.plan): \($0.counts)" + ($0.suggestion.map { "; \($0)" } ?? "") }
        logger.debug("fetch \(request.entityName) where \(request.predicate.map(PredicateFormatter.summary) ?? "TRUEPREDICATE"): \(plans.joined(separator: " | ")); returned \(returned) in \(ContinuousClock.now - started)")
    }
}
