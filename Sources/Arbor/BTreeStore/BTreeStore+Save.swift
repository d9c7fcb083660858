import ArborEngine
import Foundation

extension BTreeStore {
    /// Writes a context's changes in one engine transaction, up to the commit: the returned
    /// `PreparedSave` holds the store's write lock until it is committed or aborted.
    ///
    /// Checks optimistic locking (each updated or deleted row still has the version the context
    /// read) and uniqueness constraints; assigns primary keys and order keys; maintains every
    /// index and join entry; bumps the version of each written row.
    /// - Throws: `ValidationError` listing every uniqueness violation, `StoreError.conflicts`
    ///   listing every changed row, `.readOnlyStore`, or engine errors; nothing is written then.
    func prepareSave(_ request: SaveRequest) throws -> any PreparedStoreSave {
        guard !isReadOnly else { throw StoreError.readOnlyStore(path: path) }
        do {
            let tx = try database.beginWrite()
            do {
                let writer = SaveWriter(store: self, tx: tx)
                let result = try writer.run(request)
                return PreparedSave(store: self, tx: tx, deleted: writer.deleted, result: result)
            } catch {
                tx.abort()
                throw error
            }
        } catch { throw storeError(error, path: path) }
    }
}

/// A save written to a store's transaction but not yet committed (the first phase of a save
/// across stores).
final class PreparedSave {
    let store: BTreeStore
    let tx: WriteTransaction
    let deleted: [RowKey]
    let result: SaveResult

    init(store: BTreeStore, tx: WriteTransaction, deleted: [RowKey], result: SaveResult) {
        self.store = store
        self.tx = tx
        self.deleted = deleted
        self.result = result
    }

    /// Makes the save durable and updates the store's row cache.
    func commit() throws {
        do { try tx.commit() } catch { throw storeError(error, path: store.path) }
        store.rowCache.apply(written: result.writtenRows.map { (RowKey($0.key), $0.value) }, deleted: deleted,
                             snapshot: tx.transactionID)
    }

    func abort() { tx.abort() }
}

/// The work of one save transaction (see `BTreeStore.save`).
final class SaveWriter: SaveRequestWriter {
    let store: BTreeStore
    let tx: WriteTransaction
    // The state below is touched for every row a save or batch request writes. A writer serves
    // one save on one thread, and no access to it outlives a call: exempt from the runtime's
    // exclusivity check (about a hundred instructions per access), as the engine's nodes are.
    @exclusivity(unchecked) var permanent: [ObjectID: ObjectID] = [:]
    var counters: [String: Int64] = [:]
    var orderAssignments: [MemberOrderKey: Int64] = [:]
    var appendCursors: [OwnerOrderKey: Int64] = [:]
    @exclusivity(unchecked) var written: [ObjectID: StoredRow] = [:]
    /// Off for batch requests: nobody reads the rows back (a save's rows go to the row cache).
    var keepsWrittenRows = true
    var vanished: [ObjectID] = []
    var policy: MergePolicy = .error
    /// Index and foreign-key entries to remove and add, per tree, applied by `flushIndexWrites`
    /// a leaf at a time (`Tree.apply`): each leaf is then modified once, however randomly the
    /// rows of the save hit the index (a large import would otherwise revisit every leaf again
    /// and again after the transaction spilled it).
    /// Keyed by the index description (hashing its identity, not its tree's name, per row).
    /// Removals and additions stay in the order made (the last change to a key wins): a row
    /// inserted by one chunk of a batch and updated by a later one keeps only its new entry.
    @exclusivity(unchecked) var indexChanges: [ObjectIdentifier: (index: EntityInfo.Index, changes: TreeChanges)] = [:]
    /// The same for words and substrings indexes: their entries' changes gathered per term,
    /// applied to posting blocks (`PostingTree`).
    @exclusivity(unchecked) var textChanges: [ObjectIdentifier: (index: EntityInfo.Index, changes: PostingChanges)] = [:]
    /// Set by a batch insert: the terms of its new rows' texts are made on a second thread and
    /// joined to `textChanges` before those are applied (see `TextTermWorker`).
    var textTermWorker: TextTermWorker?
    /// The indexes of the entity last patched that its changed slots move (one batch update
    /// patches with the same slots throughout).
    @exclusivity(unchecked) var patchedIndexes: (info: EntityInfo, changed: SlotMask, indexes: [EntityInfo.Index])?
    /// Buffers for the keys and rows `writeRow` builds, reused from row to row.
    @exclusivity(unchecked) var oldKeyBuffer: [UInt8] = []
    @exclusivity(unchecked) var newKeyBuffer: [UInt8] = []
    /// A unique index whose new entries are known to be unique already: a batch insert's
    /// conflict constraint, whose values were looked up before the rows were written.
    var resolvedUniqueIndex: EntityInfo.Index?
    /// Entries this writer added to unique indexes, for `checkUniqueness`.
    @exclusivity(unchecked) var uniqueEntries: [ObjectIdentifier: (index: EntityInfo.Index, entries: [(key: [UInt8], id: ObjectID)])] = [:]
    /// With `defersRowWrites`: rows to write, per row tree, applied with the index entries.
    @exclusivity(unchecked) var rowWrites: [String: TreeChanges] = [:]
    /// Rows are collected and written by `flushIndexWrites` (a batch request, which reads no
    /// row it wrote) instead of at once (a save, which may read a row it wrote).
    var defersRowWrites = false
    var deleted: [RowKey] = []
    var failures: [ValidationFailure] = []
    var conflicts: [SaveConflict] = []

    init(store: BTreeStore, tx: WriteTransaction) {
        self.store = store
        self.tx = tx
    }

    var model: ManagedObjectModel { store.model }
    var storeIdentifier: UUID { store.identifier }
    var storeName: String { store.path }

    func currentRow(_ id: ObjectID) throws -> StoredRow? { try store.readRow(tx, id) }

    func run(_ request: SaveRequest) throws -> SaveResult {
        // Per-request state; primary-key counters and append cursors carry over, so a batch
        // insert runs chunk after chunk through one writer.
        permanent = [:]
        written = [:]
        orderAssignments = [:]
        vanished = []
        policy = request.mergePolicy
        try assignPrimaryKeys(request.inserts)
        for delete in request.deletes { try deleteRow(delete) }
        for list in request.orderedLists { try assignOrder(list) }
        for append in request.orderedAppends { try assignAppendedOrder(append) }
        var pending: Set<RowKey> = []
        for update in request.updates { pending.insert(RowKey(update.id)) }
        for insert in request.inserts { if let id = insertedID(insert) { pending.insert(RowKey(id)) } }
        // The stored rows of the updates, read in key order by one cursor per row tree.
        let storedRows = try store.readRows(tx, request.updates.map(\.id))
        for (update, stored) in zip(request.updates, storedRows) { try writeUpdate(update, stored: stored) }
        for insert in request.inserts { try writeInsert(insert) }
        try touchReorderedRows(request.orderedLists, skipping: pending)
        for change in request.joinChanges { try applyJoinChange(change) }
        try flushIndexWrites()
        try checkUniqueness()
        if !conflicts.isEmpty { throw StoreError.conflicts(conflicts) }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
        try storeCounters()
        return SaveResult(permanentIDs: permanent, writtenRows: written, vanished: vanished)
    }

    // MARK: Keys and references

    private func assignPrimaryKeys(_ inserts: [SaveRequest.RowWrite]) throws {
        // The counter of the hierarchy being numbered, kept in locals while consecutive inserts
        // share it (an import inserts thousands in a row): one dictionary access per run.
        var root: String?
        var last: Int64 = 0
        for insert in inserts {
            let insertRoot = insert.id.info.rootName
            if insertRoot != root {
                if let root { counters[root] = last }
                last = try lastPrimaryKey(root: insertRoot)
                root = insertRoot
            }
            guard insert.id.isTemporaryID else {
                checkRestoredKey(insert.id, last: last)
                continue
            }
            guard last < Int64.max else {
                throw StoreError.corruptStore(path: store.path, detail: "primary keys of \(insertRoot) are exhausted")
            }
            last += 1
            permanent[insert.id] = ObjectID(info: insert.id.info, store: store.identifier, key: last)
        }
        if let root { counters[root] = last }
    }

    /// The last primary key used in the hierarchy rooted at `root`: this writer's counter, or
    /// the one stored in the metadata tree (0 when none is).
    func lastPrimaryKey(root: String) throws -> Int64 {
        if let counter = counters[root] { return counter }
        guard let bytes = try tx.tree(StoreLayout.metadataTree).get(StoreMetadata.primaryKeyKey(root: root)) else { return 0 }
        guard bytes.count == 8 else {
            throw StoreError.corruptStore(path: store.path, detail: "primary-key counter of \(root) is \(bytes.count) bytes")
        }
        return bytes.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// Stores every primary-key counter this writer advanced.
    func storeCounters() throws {
        let metadata = try tx.tree(StoreLayout.metadataTree)
        for (root, last) in counters {
            try metadata.put(StoreMetadata.primaryKeyKey(root: root), withUnsafeBytes(of: last.littleEndian) { Array($0) })
        }
    }

    // MARK: Rows

    /// Writes one row: order columns, every index entry that changed, version + 1.
    /// `columns` is consumed: a caller that hands over its only reference lets the order
    /// column be filled in place instead of in a copy.
    /// `changed`: the slots that may differ from `old` (nil: any); indexes on none of them
    /// keep their entries without their keys being built.
    func writeRow(_ id: ObjectID, columns: consuming [ColumnValue], old: StoredRow?, changed: SlotMask? = nil) throws {
        let info = id.info
        try fillOrderColumns(id, &columns, old: old)
        let keys = store.keys
        for index in info.indexes {
            if let changed, old != nil, !index.slots.contains(where: changed.contains), !(index.orderSlot.map(changed.contains) ?? false) { continue }
            moveIndexEntry(index, of: id, from: old?.columns, to: columns)
        }
        let (nextVersion, overflow) = (old?.version ?? 0).addingReportingOverflow(1)
        let row = StoredRow(entityCode: info.code, version: overflow ? 1 : nextVersion, columns: columns)
        if defersRowWrites {
            oldKeyBuffer.removeAll(keepingCapacity: true)
            keys.appendRowKey(id.primaryKey, to: &oldKeyBuffer)
            newKeyBuffer.removeAll(keepingCapacity: true)
            RowCodec.encode(row, appendingTo: &newKeyBuffer)
            oldKeyBuffer.withUnsafeBytes { key in
                newKeyBuffer.withUnsafeBytes { rowWrites[info.rowTree, default: TreeChanges()].put(key: key, value: $0) }
            }
        } else {
            try tx.tree(info.rowTree).put(keys.rowKey(id.primaryKey), RowCodec.encode(row))
        }
        if keepsWrittenRows { written[id] = row }
    }

    private func deleteRow(_ delete: SaveRequest.RowDelete) throws {
        guard let old = checkedVersion(try store.readRow(tx, delete.id), of: delete.id, expected: delete.expectedVersion) else { return }
        let id = delete.id
        guard let info = store.model.infosByCode[old.entityCode] else { return }
        for index in info.indexes {
            // A text index's entries live in posting blocks, rewritten when the save flushes.
            if index.isText {
                removeTextEntries(index, of: id, columns: old.columns)
                continue
            }
            if let key = store.keys.indexKey(index, columns: old.columns, key: id.primaryKey) { _ = try tx.tree(index.tree).delete(key) }
        }
        _ = try tx.tree(info.rowTree).delete(store.keys.rowKey(id.primaryKey))
        for relationship in info.relationships where relationship.kind == .manyToMany {
            guard let joinTree = relationship.joinTree,
                  let inverse = store.model.inverse(of: relationship)
            else { continue }
            let tree = try tx.tree(joinTree)
            let entries = try tree.entries(in: .prefix(store.keys.joinPrefix(side: relationship.joinSide, owner: id.primaryKey)))
            for (key, _) in entries {
                _ = try tree.delete(key)
                guard let member = IndexKeys.trailingKey(key) else { continue }
                try removeJoinEntries(tree: tree, side: inverse.joinSide, owner: member, members: [id.primaryKey])
            }
        }
        deleted.append(RowKey(id))
    }

    /// Applies the deferred rows and index changes, a tree at a time, each in key order (see
    /// `Tree.apply`).
    func flushIndexWrites() throws {
        try flushRows()
        try flushIndexes()
    }

    /// Writes the deferred rows (see `defersRowWrites`).
    func flushRows() throws {
        // Trees in name order: the same changes always allocate the same pages.
        for (name, changes) in rowWrites.sorted(by: { $0.key < $1.key }) { try tx.tree(name).apply(changes) }
        rowWrites = [:]
    }

    /// Whether the index and foreign-key changes collected and not yet applied have reached
    /// `BTreeStore.indexChangeBudget` changes or `indexByteBudget` bytes (a buffer of
    /// changes stays far below the 2 GiB its offsets can address), counting those a batch
    /// insert's second thread made (`TextTermWorker`).
    var indexChangesAreDue: Bool {
        var (count, bytes) = textTermWorker?.madeSize ?? (0, 0)
        for (_, changes) in indexChanges.values {
            count += changes.count
            bytes += changes.byteCount
        }
        for (_, changes) in textChanges.values {
            count += changes.count
            bytes += changes.byteCount
        }
        return count >= BTreeStore.indexChangeBudget || bytes >= BTreeStore.indexByteBudget
    }

    /// Applies the collected index and foreign-key changes (of the indexes `only` accepts).
    func flushIndexes(only: (EntityInfo.Index) -> Bool = { _ in true }) throws {
        if let worker = textTermWorker, worker.hasPending(for: only) { joinTextTerms() }
        // A tree may collect entries under several descriptions (an index inherited by
        // sub-entities); each row's entries are under its own entity's, so they concatenate.
        var byTree: [String: TreeChanges] = [:]
        for (key, (index, changes)) in indexChanges where only(index) {
            indexChanges[key] = nil
            if byTree[index.tree] == nil { byTree[index.tree] = changes } else { byTree[index.tree]?.append(contentsOf: changes) }
        }
        var textByTree: [String: PostingChanges] = [:]
        for (key, (index, changes)) in textChanges where only(index) {
            textChanges[key] = nil
            if textByTree[index.tree] == nil { textByTree[index.tree] = changes } else { textByTree[index.tree]?.append(contentsOf: changes) }
        }
        for (name, changes) in byTree.sorted(by: { $0.key < $1.key }) { try tx.tree(name).apply(changes) }
        for (name, changes) in textByTree.sorted(by: { $0.key < $1.key }) {
            try PostingTree(tree: try tx.tree(name), keys: store.keys).apply(changes)
        }
    }

    // MARK: Order

    func storedOrders(tree: String, owner: Int64) throws -> [Int64: Int64] {
        var existing: [Int64: Int64] = [:]
        try tx.tree(tree).forEach(in: .prefix(store.keys.ownerPrefix(owner))) { key, _ in
            if let member = IndexKeys.trailingKey(key), let order = IndexKeys.orderComponent(key) { existing[member] = order }
            return true
        }
        return existing
    }

    /// The owner's last entry, read backwards: one descent.
    func highestStoredOrder(tree: String, owner: Int64) throws -> Int64 {
        var found: Int64 = 0
        try tx.tree(tree).forEach(in: .prefix(store.keys.ownerPrefix(owner)), reverse: true) { key, _ in
            found = IndexKeys.orderComponent(key) ?? 0
            return false
        }
        return found
    }

    // MARK: Joins

    private func applyJoinChange(_ change: SaveRequest.JoinChange) throws {
        guard let owner = resolve(change.owner, from: change.owner, key: change.relationship),
              let relationship = owner.info.relationship(named: change.relationship),
              let joinTree = relationship.joinTree else { return }
        let tree = try tx.tree(joinTree)
        let side = relationship.joinSide
        let ordered = relationship.description.isOrdered
        let prefix = store.keys.joinPrefix(side: side, owner: owner.primaryKey)
        if let members = change.members {
            for (key, _) in try tree.entries(in: .prefix(prefix)) { _ = try tree.delete(key) }
            for (position, member) in members.enumerated() {
                guard let id = resolve(member, from: owner, key: change.relationship) else { continue }
                let order = ordered ? Int64(position + 1) * IndexKeys.orderStep : 0
                try tree.put(store.keys.joinKey(side: side, owner: owner.primaryKey, order: order, member: id.primaryKey),
                             IndexKeys.codeValue(id.info.code))
            }
            return
        }
        let removed = Set(change.removed.compactMap { $0.isTemporaryID ? permanent[$0]?.primaryKey : $0.primaryKey })
        if !removed.isEmpty { try removeJoinEntries(tree: tree, side: side, owner: owner.primaryKey, members: removed) }
        var last: Int64 = 0
        var present: Set<Int64> = []
        try tree.forEach(in: .prefix(prefix)) { key, _ in
            if let member = IndexKeys.trailingKey(key) { present.insert(member) }
            last = max(last, IndexKeys.orderComponent(key) ?? 0)
            return true
        }
        for (id, order) in joinAdditions(change, owner: owner, ordered: ordered, present: &present, last: &last) {
            try tree.put(store.keys.joinKey(side: side, owner: owner.primaryKey, order: order, member: id.primaryKey),
                         IndexKeys.codeValue(id.info.code))
        }
    }

    private func removeJoinEntries(tree: Tree, side: UInt8, owner: Int64, members: Set<Int64>) throws {
        var doomed: [[UInt8]] = []
        try tree.forEach(in: .prefix(store.keys.joinPrefix(side: side, owner: owner))) { key, _ in
            if let member = IndexKeys.trailingKey(key), members.contains(member) { doomed.append(key) }
            return true
        }
        for key in doomed { _ = try tree.delete(key) }
    }

    // MARK: Uniqueness

    /// Checks the unique indexes for the entries this writer added (`uniqueEntries`, after they
    /// are applied): an entry whose values another row's entry shares is a failure, reported
    /// for the row that took the values. One cursor per index walks the new entries' values in
    /// key order.
    /// - Complexity: O(k log n) for k new entries, less where they lie close together.
    func checkUniqueness() throws {
        for (index, entries) in uniqueEntries.values {
            let tree = try tx.tree(index.tree)
            let cursor = try tree.makeCursor()
            // In key order, so the cursor moves forward (positions sorted: no entry is copied).
            let order = entries.indices.sorted { compareBytes(entries[$0].key, entries[$1].key) < 0 }
            for position in order {
                let (key, id) = entries[position]
                guard let start = key.withUnsafeBytes({ TupleKey.lastComponentStart(in: $0) }) else { continue }
                var other: ObjectID?
                // The entries with these values, in key order (by primary key): another row's
                // is the first, or the one after this row's.
                let prefix = key[..<start]
                var positioned = try cursor.seek(Array(prefix))
                var steps = 0
                while positioned && steps < 2 {
                    steps += 1
                    guard let pk = cursor.withKey({ entry in entry.starts(with: prefix) ? IndexKeys.trailingKey(entry) : nil }) ?? nil else { break }
                    if pk != id.primaryKey {
                        let code = try cursor.withValue { store.keys.entryCode(from: $0, root: id.info.rootCode) } ?? nil
                        if let info = store.model.infosByCode[code ?? id.info.code] { other = ObjectID(info: info, store: store.identifier, key: pk) }
                        break
                    }
                    positioned = try cursor.next()
                }
                if let other {
                    let temporary = Dictionary(permanent.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
                    let other = temporary[other] ?? other
                    failures.append(ValidationFailure(objectID: temporary[id] ?? id, entity: id.entityName, key: index.properties.joined(separator: ","),
                                                      kind: .uniqueConstraint(properties: index.properties, conflictingObject: other)))
                }
            }
        }
        uniqueEntries = [:]
    }
}

/// Column slots as bits, for telling which of a row's index entries a write can change. Slots
/// from 64 on are always taken as included (a wider entity only checks more indexes).
struct SlotMask: Equatable {
    private var bits: UInt64 = 0

    init() {}

    init<S: Sequence>(_ slots: S) where S.Element == Int {
        for slot in slots { insert(slot) }
    }

    mutating func insert(_ slot: Int) {
        if slot >= 0 && slot < 64 { bits |= 1 << UInt64(slot) }
    }

    func contains(_ slot: Int) -> Bool { slot >= 64 || (slot >= 0 && bits & (1 << UInt64(slot)) != 0) }
}
