import ArborEngine
import Foundation

/// The B-tree store's side of the seam (`StoreStorage`): reads in one snapshot each, through
/// the row cache where a row may be cached.
extension BTreeStore {
    var objectRowCache: RowCache? { rowCache }

    /// Cached rows first; the others in one snapshot, in key order (`visitRows`), then cached.
    func rows(for ids: [ObjectID], maxAge: TimeInterval?) throws -> [StoredRow?] {
        var rows = rowCache.lookup(ids.map(RowKey.init), maxAge: maxAge)
        let missing = rows.indices.filter { rows[$0] == nil }
        guard !missing.isEmpty else { return rows }
        do {
            try reading { tx in
                rowCache.observe(snapshot: tx.snapshotID)
                var found: [(RowKey, StoredRow)] = []
                for (position, row) in zip(missing, try readRows(tx, missing.map { ids[$0] })) {
                    guard let row else { continue }
                    rows[position] = row
                    found.append((RowKey(ids[position]), row))
                }
                rowCache.store(found, snapshot: tx.snapshotID)
            }
        } catch { throw storeError(error, path: path) }
        return rows
    }

    /// Plans and runs `query` (see `QueryPlanner+Order` for how a limit shortens the walk).
    func fetch(_ query: StoreQuery) throws -> (rows: [FetchedRow], statistics: FetchStatistics) {
        try fetchRows(query)
    }

    /// Calls `body` with the primary key and entity code of every row of `info` (and its
    /// sub-entities), reading only each row's header.
    /// - Complexity: O(rows), no allocation per row.
    func forEachKey(_ info: EntityInfo, includesSubentities: Bool, _ body: (Int64, UInt16) throws -> Void) throws {
        do {
            try reading { tx in
                try tx.tree(info.rowTree).forEachUnsafe { key, value in
                    // Row keys are the 9-byte tuple of an int64; the entity code is in the header.
                    guard let (pk, end) = TupleKey.integer(in: key, at: 0), end == key.count, let code = RowCodec.entityCode(ofRow: value) else {
                        throw StoreError.corruptRow(location: info.rowTree, detail: "malformed row key or header")
                    }
                    let matches = includesSubentities ? info.descendantCodes.contains(code) : code == info.code
                    if matches { try body(pk, code) }
                    return true
                }
            }
        } catch { throw storeError(error, path: path) }
    }

    /// From the relationship's foreign-key index alone (no row is read).
    func countsByOwner(_ relationship: EntityInfo.Relationship, of entity: EntityInfo) throws -> [(owner: Int64, count: Int)] {
        guard let tree = relationship.foreignKeyTree else { return [] }
        return try countByOwner(tree: tree, entity: entity)
    }

    func dataVersion() throws -> UInt64 {
        do { return try reading { $0.snapshotID } } catch { throw storeError(error, path: path) }
    }

    var indexOrder: (any IndexOrderReading)? { self }

    func pendingDerivations() throws -> [String] {
        do { return try StoreMigration.pendingDerivations(database) } catch { throw storeError(error, path: path) }
    }

    func clearPendingDerivations() throws {
        do { try StoreMigration.clearPendingDerivations(database) } catch { throw storeError(error, path: path) }
    }

    func batchInsert(_ info: EntityInfo, _ request: BatchInsertRequest) throws -> BatchInsertResult {
        try batchInsert(info, request, chunkSize: Self.batchChunk)
    }
}

extension PreparedSave: PreparedStoreSave {}
