import Foundation

/// The seam under the object layer: everything contexts, fetches, batch requests and the
/// results controller ask of a store, whatever holds its rows.
///
/// Two implementations: `BTreeStore` (a file of copy-on-write B+trees, read through a query
/// planner) and `InMemoryStore` (rows in memory, fetched by evaluating the predicate on each,
/// as Core Data's `NSInMemoryStoreType`). Both give the same answers; the differential tests
/// run the same operations on each.
///
/// Every read is one consistent snapshot of the store; `prepareSave` takes the store's writer
/// lock until its `PreparedStoreSave` is committed or aborted (the first phase of a save across
/// stores). Errors are `StoreError`s (and, for writes, `ValidationError`s) naming what and where.
protocol StoreStorage: AnyObject, Sendable {
    /// The cache of rows loaded objects keep, shared by the store's readers; nil when the
    /// storage holds decoded rows already (nothing to cache).
    var objectRowCache: RowCache? { get }
    /// Rows read, cache hits and faults fired since the store opened or was last reset.
    var statistics: StoreStatistics { get }
    func resetStatistics()

    // MARK: Reading

    /// The row of `id`, no older than `maxAge` seconds when served from a cache (nil: any
    /// age); nil when there is no such row.
    /// - Complexity: O(1) or O(log n).
    func row(for id: ObjectID, maxAge: TimeInterval?) throws -> StoredRow?

    /// The rows of `ids` in one snapshot, in the order of `ids` (nil where a row is missing).
    func rows(for ids: [ObjectID], maxAge: TimeInterval?) throws -> [StoredRow?]

    /// The members of a to-many `relationship` of `owner`, in order for ordered relationships.
    func members(of relationship: EntityInfo.Relationship, owner: ObjectID) throws -> [ObjectID]

    /// The rows `query` matches, with the values of its key paths, and what the search did.
    func fetch(_ query: StoreQuery) throws -> (rows: [FetchedRow], statistics: FetchStatistics)

    /// The rows `query` matches, in the order `fetch` would return them: for each, `slots` is
    /// loaded with its columns and `visit` called with its ID; no row is kept. The value path
    /// (`fetchValues`, dictionary results): `query` has no key paths and no sort.
    /// - Throws: what `fetch` throws; what `visit` throws, which ends the visit.
    /// - Complexity: as `fetch`, decoding only the columns of `slots`.
    func visitMatches(_ query: StoreQuery, loading slots: RowSlots, _ visit: (ObjectID) throws -> Void) throws -> FetchStatistics

    /// Calls `body` with the primary key and entity code of every row of `info` (and its
    /// sub-entities when asked), in primary-key order, without decoding rows.
    func forEachKey(_ info: EntityInfo, includesSubentities: Bool, _ body: (Int64, UInt16) throws -> Void) throws

    /// For the to-one `relationship` of `entity`: each owner (the relationship's target) with
    /// the number of rows of `entity` (or its sub-entities) that point at it, in owner order.
    func countsByOwner(_ relationship: EntityInfo.Relationship, of entity: EntityInfo) throws -> [(owner: Int64, count: Int)]

    /// The number of rows in `info`'s hierarchy: an upper bound on what a fetch examines.
    func estimatedCount(_ info: EntityInfo) throws -> Int

    /// A number that changes with every commit (the snapshot a new reader would see).
    func dataVersion() throws -> UInt64

    /// Reads in the order of an index, for the results controller's sections; nil when the
    /// storage keeps no indexes (the controller then sorts a fetch's results).
    var indexOrder: (any IndexOrderReading)? { get }

    // MARK: Writing

    /// Writes a context's changes up to the commit, holding the store's writer lock.
    /// - Throws: `ValidationError` (uniqueness, dangling references), `StoreError.conflicts`
    ///   (optimistic locking), `.readOnlyStore`; nothing is written then.
    func prepareSave(_ request: SaveRequest) throws -> any PreparedStoreSave

    /// Runs a batch insert of objects of `info` in one transaction (see `BatchInsertRequest`).
    func batchInsert(_ info: EntityInfo, _ request: BatchInsertRequest) throws -> BatchInsertResult
    /// Runs a batch update of objects of `info` in one transaction (see `BatchUpdateRequest`).
    func batchUpdate(_ info: EntityInfo, _ request: BatchUpdateRequest) throws -> BatchUpdateResult
    /// Runs a batch delete of objects of `info` in one transaction (see `BatchDeleteRequest`).
    func batchDelete(_ info: EntityInfo, _ request: BatchDeleteRequest) throws -> BatchDeleteResult

    /// The derived attributes ("Entity.attribute") a migration added or changed and whose values
    /// are still to be computed (by the coordinator, through a context: `computePendingDerivations`).
    func pendingDerivations() throws -> [String]
    /// Notes that the pending derived attributes are computed.
    func clearPendingDerivations() throws
}

extension StoreStorage {
    /// `visitMatches` through `fetch`, for a storage that holds decoded rows.
    func visitMatches(_ query: StoreQuery, loading slots: RowSlots, _ visit: (ObjectID) throws -> Void) throws -> FetchStatistics {
        let (rows, statistics) = try fetch(query)
        for entry in rows {
            guard let row = entry.row else { continue }
            slots.load(row.columns)
            defer { slots.endRow() }
            try visit(entry.id)
        }
        return statistics
    }
}

/// What a store fetch is asked: the rows of `entity` (and its sub-entities when asked) that
/// satisfy `predicate`, with the values of `keyPaths` (sort keys first).
struct StoreQuery {
    var entity: EntityInfo
    /// The predicate, with a prepared request's values kept apart (see `BoundPredicate`).
    var boundPredicate: BoundPredicate
    /// The whole predicate, its values substituted: read it once per use.
    var predicate: ObjectPredicate? { boundPredicate.predicate }
    var includesSubentities = true
    var keyPaths: [[String]] = []
    /// The request's sort and how many rows it keeps (offset + limit): a storage may stop once
    /// it has those rows in that order (the context still sorts and cuts).
    var sortDescriptors: [ObjectSortDescriptor] = []
    var rowLimit: Int?
    /// Whether rows are wanted (false: IDs or a count; a row the search answers by key alone
    /// is then not read, and its `FetchedRow` has no row).
    var needsRows = true
    /// Called every 256 rows examined with the count so far; throwing cancels the fetch.
    var onProgress: ((Int) throws -> Void)?
    /// For a request bound from a `PreparedFetchRequest`: where a storage may keep the plan it
    /// chose, to reuse it for the next binding.
    var prepared: PreparedPlanKey?
}

/// A save written into a store but not committed: the store's writer lock is held until
/// `commit` or `abort`.
protocol PreparedStoreSave: AnyObject {
    /// The permanent IDs of inserted objects and the rows as now stored.
    var result: SaveResult { get }
    /// Makes the save durable and visible to readers.
    func commit() throws
    /// Drops the save and releases the writer lock.
    func abort()
}

/// Reads of a store's indexes in key order, for the results controller's sectioned results.
protocol IndexOrderReading {
    /// Calls `body` for each row of one of `codes` that points at `owner` through the to-one
    /// `relationship`: an opaque sort key (the rows' order under `orderedBy`, compared as bytes;
    /// empty without it), the row's primary key and entity code. `orderedBy` must be an index
    /// on (relationship, attribute).
    func forEachMember(through relationship: EntityInfo.Relationship, owner: Int64, orderedBy index: EntityInfo.Index?,
                       codes: Set<UInt16>, root: UInt16, _ body: ([UInt8], Int64, UInt16) throws -> Void) throws

    /// Calls `body` for each entry of the single-attribute `index` whose row is of one of
    /// `codes`, in the index's order: the attribute's value (strings and integers; other types
    /// give `.null`), its opaque sort key, the primary key and the entity code.
    func forEachEntry(of index: EntityInfo.Index, codes: Set<UInt16>, root: UInt16,
                      _ body: (AttributeValue, [UInt8], Int64, UInt16) throws -> Void) throws
}
