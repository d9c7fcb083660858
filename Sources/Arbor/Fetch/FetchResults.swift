import ArborEngine
import Foundation

/// The objects a fetch returns (Core Data's fetch result array): a random-access collection,
/// use it on the context's queue like the objects in it.
///
/// Without a `fetchBatchSize`, every object is made by the fetch. With one, only the matching
/// rows' keys are kept — the count is known at once — and objects are materialized a batch at a
/// time around the position accessed; at most `maximumBatches` batches stay materialized (least
/// recently used first out), so iterating millions of objects keeps memory bounded.
public final class FetchResults<Element: ManagedObject>: RandomAccessCollection {
    typealias CompactID = CompactObjectID

    public let startIndex = 0
    public var endIndex: Int { loaded?.count ?? ids.count }
    /// Objects materialized at once (the whole result when the request had no batch size).
    public let batchSize: Int
    /// How many batches stay materialized.
    public let maximumBatches: Int

    /// Every object, when the fetch made them all: indexed without a batch lookup. Each is an
    /// `Element` (kept as `ManagedObject`s: the fetch's loop then appends to an array of a
    /// concrete type, where an array of a generic element type took an unspecialized call a row).
    @usableFromInline let loaded: [ManagedObject]?
    let ids: CompactObjectIDList
    let stores: [PersistentStore]
    let unsaved: [ObjectID]
    let model: ManagedObjectModel
    let context: ManagedObjectContext
    /// Whether a batch's objects are filled with their rows as it is materialized.
    let fillsBatches: Bool
    /// Relationship key paths whose objects each batch loads with it.
    let prefetchPaths: [[String]]
    private var batches: [Int: [ManagedObject]] = [:]
    private var recentBatches: [Int] = []
    /// The most recently used batch, also in `batches`: consecutive accesses skip the lookup.
    private var lastBatch: (index: Int, objects: [ManagedObject])?
    /// Batches materialized so far (for tests and tuning).
    public private(set) var batchesLoaded = 0

    /// A batched result over `ids`.
    init(ids: CompactObjectIDList, stores: [PersistentStore], unsaved: [ObjectID], model: ManagedObjectModel,
         context: ManagedObjectContext, batchSize: Int, maximumBatches: Int = 4, fillsBatches: Bool = true, prefetchPaths: [[String]] = []) {
        loaded = nil
        self.ids = ids
        self.stores = stores
        self.unsaved = unsaved
        self.model = model
        self.context = context
        self.batchSize = Swift.max(batchSize, 1)
        self.maximumBatches = Swift.max(maximumBatches, 1)
        self.fillsBatches = fillsBatches
        self.prefetchPaths = prefetchPaths
    }

    /// A result whose objects are all made.
    /// - Precondition: every one of `objects` is an `Element`.
    @usableFromInline
    init(objects: [ManagedObject], context: ManagedObjectContext) {
        loaded = objects
        ids = CompactObjectIDList()
        stores = []
        unsaved = []
        model = context.model ?? ManagedObjectModel.empty
        self.context = context
        batchSize = Swift.max(objects.count, 1)
        maximumBatches = 1
        fillsBatches = false
        prefetchPaths = []
    }

    /// The ID at `position`, without materializing anything.
    public func objectID(at position: Int) -> ObjectID {
        if let loaded { return loaded[position].objectID }
        return ids[position].objectID(stores: stores, unsaved: unsaved, model: model)
    }

    @inlinable
    public subscript(position: Int) -> Element {
        if let loaded { return unsafeDowncast(loaded[position], to: Element.self) }
        return batched(position)
    }

    /// The object at `position` of a batched result.
    @usableFromInline
    func batched(_ position: Int) -> Element {
        let batch = position / batchSize
        let objects = materialize(batch)
        let object = objects[position - batch * batchSize]
        // Objects of other classes cannot be in a typed result: the request's entity decides.
        return object as? Element ?? Element(ObjectConstruction(id: object.objectID, context: context))
    }

    /// The objects of batch `batch`, read with one snapshot and one lookup per row not cached.
    private func materialize(_ batch: Int) -> [ManagedObject] {
        if let lastBatch, lastBatch.index == batch { return lastBatch.objects }
        let objects = loadBatch(batch)
        lastBatch = (batch, objects)
        return objects
    }

    private func loadBatch(_ batch: Int) -> [ManagedObject] {
        if let objects = batches[batch] {
            if recentBatches.last != batch {
                recentBatches.removeAll { $0 == batch }
                recentBatches.append(batch)
            }
            return objects
        }
        let range = (batch * batchSize)..<Swift.min((batch + 1) * batchSize, ids.count)
        let objects = range.map { context.object(with: objectID(at: $0)) }
        if fillsBatches {
            var byStore: [Int: [ManagedObject]] = [:]
            for (offset, object) in objects.enumerated() where object.isFaultState && ids[range.lowerBound + offset].store >= 0 {
                byStore[Int(ids[range.lowerBound + offset].store), default: []].append(object)
            }
            for (index, faults) in byStore { context.fill(faults, from: stores[index]) }
        }
        for path in prefetchPaths { context.prefetch(objects, path: path) }
        batches[batch] = objects
        recentBatches.append(batch)
        batchesLoaded += 1
        while recentBatches.count > maximumBatches {
            batches[recentBatches.removeFirst()] = nil
        }
        return objects
    }
}

extension ManagedObjectContext {
    /// Loads the rows of several faults in one read transaction; rows that are gone leave
    /// their object a fault (reading it then reports `objectNotFound`).
    func fill(_ faults: [ManagedObject], from store: PersistentStore) {
        if parent != nil {
            // A child's objects take their parent's state, which may differ from the rows.
            for object in faults { fulfillQuietly(object) }
            return
        }
        let maxAge: TimeInterval? = stalenessInterval < 0 ? nil : stalenessInterval
        for object in faults { retainCachedRow(object, in: store) }
        do {
            let rows = try store.storage.rows(for: faults.map(\.objectID), maxAge: maxAge)
            for (object, row) in zip(faults, rows) {
                guard let row else { continue }
                try apply(row, to: object, from: store)
                object.awakeFromFetch()
            }
        } catch {
            lastFaultError = error
        }
    }

    /// `fetch(_:as:)`, by its earlier name.
    public func fetchResults<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> FetchResults<T> {
        try fetch(request, as: type)
    }

    /// `request` as a batched collection (`fetchBatchSize` above 0): only the matching rows'
    /// keys are kept until a batch is accessed.
    @usableFromInline
    func batchedResults<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> FetchResults<T> {
        guard let coordinator = persistentStoreCoordinator, let model else { throw ContextError.noPersistentStore }
        let stores = coordinator.persistentStores
        var ids = CompactObjectIDList()
        var unsaved: [ObjectID] = []
        let simple = request.sortDescriptors.isEmpty && !request.hasPredicate && request.fetchOffset == 0 && request.fetchLimit == 0
            && (!request.includesPendingChanges || changed.isEmpty) && inheritedPendingIDs().isEmpty
        if simple, let info = model.info(named: request.entityName) {
            // Keys only, straight from the row trees: no object or row is kept per result.
            for (index, store) in stores.enumerated() where store.holds(info) && (request.affectedStores.map { $0.contains { $0 === store } } ?? true) {
                try store.storage.forEachKey(info, includesSubentities: request.includesSubentities) { key, code in
                    ids.append(.init(key: key, code: code, store: Int32(index)))
                }
            }
        } else {
            for entry in try execute(request).entries {
                if entry.id.isTemporaryID {
                    ids.append(.init(key: Int64(unsaved.count), code: entry.id.info.code, store: -1))
                    unsaved.append(entry.id)
                } else if let index = stores.firstIndex(where: { $0.identifier == entry.id.storeIdentifier }) {
                    ids.append(.init(key: entry.id.primaryKey, code: entry.id.info.code, store: Int32(index)))
                }
            }
        }
        return FetchResults(ids: ids, stores: stores, unsaved: unsaved, model: model, context: self, batchSize: request.fetchBatchSize,
                            fillsBatches: request.includesPropertyValues,
                            prefetchPaths: request.relationshipKeyPathsForPrefetching.map { $0.split(separator: ".").map(String.init) })
    }
}
