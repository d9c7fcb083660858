import ArborEngine
import Foundation

extension PersistentStore {
    /// Writes a context's changes in one engine transaction, up to the commit: the returned
    /// `PreparedSave` holds the store's write lock until it is committed or aborted.
    ///
    /// Checks optimistic locking (each updated or deleted row still has the version the context
    /// read) and uniqueness constraints; assigns primary keys and order keys; maintains every
    /// index and join entry; bumps the version of each written row.
    /// - Throws: `ValidationError` listing every uniqueness violation, `StoreError.conflicts`
    ///   listing every changed row, `.readOnlyStore`, or engine errors; nothing is written then.
    func prepareSave(_ request: SaveRequest) throws -> PreparedSave {
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
    let store: PersistentStore
    let tx: WriteTransaction
    let deleted: [RowKey]
    let result: SaveResult

    init(store: PersistentStore, tx: WriteTransaction, deleted: [RowKey], result: SaveResult) {
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

/// The work of one save transaction (see `PersistentStore.save`).
final class SaveWriter {
    struct OrderKey: Hashable {
        var slot: Int
        var member: Int64
    }

    struct OwnerKey: Hashable {
        var tree: String
        var owner: Int64
    }

    let store: PersistentStore
    let tx: WriteTransaction
    var permanent: [ObjectID: ObjectID] = [:]
    var counters: [String: Int64] = [:]
    var orderAssignments: [OrderKey: Int64] = [:]
    var appendCursors: [OwnerKey: Int64] = [:]
    var written: [ObjectID: StoredRow] = [:]
    /// Off for a batch insert without unique indexes: nobody reads the rows back (the row cache
    /// holds no new row, and only uniqueness checks look at them).
    var keepsWrittenRows = true
    var vanished: [ObjectID] = []
    var policy: MergePolicy = .error
    /// Index and foreign-key entries to remove and add, per tree, applied in key order by
    /// `flushIndexWrites`: each leaf is then modified once, in sequence, however randomly the
    /// rows of the save hit the index (a large import would otherwise revisit every leaf again
    /// and again after the transaction spilled it).
    /// Keyed by the index description (hashing its identity, not its tree's name, per row).
    var indexDeletes: [ObjectIdentifier: (tree: String, keys: [[UInt8]])] = [:]
    var indexPuts: [ObjectIdentifier: (tree: String, entries: [([UInt8], [UInt8])])] = [:]
    var deleted: [RowKey] = []
    var failures: [ValidationFailure] = []
    var conflicts: [SaveConflict] = []

    init(store: PersistentStore, tx: WriteTransaction) {
        self.store = store
        self.tx = tx
    }

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
        for insert in request.inserts { if let id = permanent[insert.id] { pending.insert(RowKey(id)) } }
        for update in request.updates { try writeUpdate(update) }
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

    /// The permanent ID of `id`; records a failure for a temporary ID not inserted by this save.
    private func resolve(_ id: ObjectID, from owner: ObjectID, key: @autoclosure () -> String) -> ObjectID? {
        if !id.isTemporaryID { return id }
        if let assigned = permanent[id] { return assigned }
        failures.append(ValidationFailure(objectID: owner, entity: owner.entityName, key: key(), kind: .danglingReference(id)))
        return nil
    }

    private func columns(of write: SaveRequest.RowWrite, id: ObjectID) -> [ColumnValue] {
        let info = id.info
        var result = [ColumnValue](repeating: .null, count: info.columnCount)
        for (slot, column) in write.columns.enumerated() where slot < result.count {
            switch column {
            case .value(let value): result[slot] = .value(value)
            case .reference(let target):
                // The relationship's name is looked up only to report a dangling reference.
                if let resolved = resolve(target, from: id,
                                          key: info.relationships.first { $0.slot == slot && $0.kind == .toOne }?.description.name ?? "#\(slot)") {
                    result[slot] = .reference(code: resolved.info.code, key: resolved.primaryKey)
                }
            }
        }
        return result
    }

    // MARK: Rows

    private func readCurrent(_ id: ObjectID, expected: UInt64?) throws -> StoredRow? {
        let row = try store.readRow(tx, id)
        if let expected, row?.version != expected {
            conflicts.append(SaveConflict(objectID: id, expectedVersion: expected, storedVersion: row?.version))
        }
        return row
    }

    private func writeUpdate(_ update: SaveRequest.RowWrite) throws {
        let stored = try store.readRow(tx, update.id)
        guard let expected = update.expectedVersion, stored?.version != expected, policy != .error else {
            // No conflict (or no policy): the plain optimistic-locking check.
            guard let old = try readCurrent(update.id, expected: update.expectedVersion) else {
                if update.expectedVersion == nil {
                    conflicts.append(SaveConflict(objectID: update.id, expectedVersion: 0, storedVersion: nil))
                }
                return
            }
            try writeRow(update.id, columns: columns(of: update, id: update.id), old: old)
            return
        }
        // A conflict the merge policy resolves here, under the write lock, so no other writer
        // can slip in between resolving and writing.
        guard let stored else {
            vanished.append(update.id)  // deleted by another writer: the store wins
            return
        }
        let mine = columns(of: update, id: update.id)
        var merged = stored.columns.values
        switch policy {
        case .error, .overwrite:
            merged = mine
        case .objectTrumps:
            for slot in update.changedSlots where slot < merged.count && slot < mine.count { merged[slot] = mine[slot] }
        case .storeTrumps:
            // Keep a change only where the other writer left the value as this context read it.
            let read = update.readColumns.map { columns(of: SaveRequest.RowWrite(id: update.id, columns: $0), id: update.id) } ?? []
            for slot in update.changedSlots where slot < merged.count && slot < mine.count && slot < read.count && merged[slot] == read[slot] {
                merged[slot] = mine[slot]
            }
        case .rollback:
            written[update.id] = stored  // unchanged; the context takes the stored row
            return
        }
        try writeRow(update.id, columns: merged, old: stored)
    }

    private func writeInsert(_ insert: SaveRequest.RowWrite) throws {
        guard let id = permanent[insert.id] else { return }
        try writeRow(id, columns: columns(of: insert, id: id), old: nil)
    }

    /// Writes one row: order columns, every index entry that changed, version + 1.
    /// `columns` is consumed: a caller that hands over its only reference lets the order
    /// column be filled in place instead of in a copy.
    func writeRow(_ id: ObjectID, columns: consuming [ColumnValue], old: StoredRow?) throws {
        let info = id.info
        for relationship in info.relationships where relationship.kind == .toOne {
            guard let orderSlot = relationship.orderSlot, let tree = relationship.foreignKeyTree else { continue }
            guard case .reference(_, let owner) = columns[relationship.slot] else {
                columns[orderSlot] = .null
                continue
            }
            if let assigned = orderAssignments[OrderKey(slot: orderSlot, member: id.primaryKey)] {
                columns[orderSlot] = .value(.int(assigned))
            } else if let old, old.columns[relationship.slot] == columns[relationship.slot], !old.columns[orderSlot].isNull {
                columns[orderSlot] = old.columns[orderSlot]
            } else {
                columns[orderSlot] = .value(.int(try nextAppendOrder(tree: tree, owner: owner)))
            }
        }
        for index in info.indexes {
            let oldKey = old.flatMap { store.keys.indexKey(index, columns: $0.columns, key: id.primaryKey) }
            let newKey = store.keys.indexKey(index, columns: columns, key: id.primaryKey)
            guard oldKey != newKey else { continue }
            if let oldKey { indexDeletes[ObjectIdentifier(index), default: (index.tree, [])].keys.append(oldKey) }
            if let newKey {
                indexPuts[ObjectIdentifier(index), default: (index.tree, [])].entries.append((newKey, store.keys.entryValue(info.code, root: info.rootCode)))
            }
        }
        let (nextVersion, overflow) = (old?.version ?? 0).addingReportingOverflow(1)
        let row = StoredRow(entityCode: info.code, version: overflow ? 1 : nextVersion, columns: columns)
        try tx.tree(info.rowTree).put(store.keys.rowKey(id.primaryKey), RowCodec.encode(row))
        if keepsWrittenRows { written[id] = row }
    }

    private func deleteRow(_ delete: SaveRequest.RowDelete) throws {
        guard let old = try readCurrent(delete.id, expected: delete.expectedVersion) else { return }
        let id = delete.id
        guard let info = store.model.infosByCode[old.entityCode] else { return }
        for index in info.indexes {
            if let key = store.keys.indexKey(index, columns: old.columns, key: id.primaryKey) { _ = try tx.tree(index.tree).delete(key) }
        }
        _ = try tx.tree(info.rowTree).delete(store.keys.rowKey(id.primaryKey))
        for relationship in info.relationships where relationship.kind == .manyToMany {
            guard let joinTree = relationship.joinTree,
                  let inverse = store.model.info(named: relationship.destinationName)?.relationship(named: relationship.description.inverse)
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

    /// Applies the deferred index changes, each tree's in key order (keys end with the row's
    /// primary key, so no key is both removed and added).
    func flushIndexWrites() throws {
        // Every delete before any put: a tree may collect entries under several descriptions
        // (an index inherited by sub-entities), and a row's moved entry must end up present.
        for (name, keys) in indexDeletes.values {
            let tree = try tx.tree(name)
            for key in keys.sorted(by: Self.precedes) { _ = try tree.delete(key) }
        }
        for (name, entries) in indexPuts.values {
            let tree = try tx.tree(name)
            for (key, value) in entries.sorted(by: { Self.precedes($0.0, $1.0) }) { try tree.put(key, value) }
        }
        indexDeletes = [:]
        indexPuts = [:]
    }

    /// Byte order of keys, by `memcmp` (the generic `lexicographicallyPrecedes` compares
    /// element by element).
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                let common = min(a.count, b.count)
                if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                    let order = memcmp(pa, pb, common)
                    if order != 0 { return order < 0 }
                }
                return a.count < b.count
            }
        }
    }

    // MARK: Order

    private func nextAppendOrder(tree: String, owner: Int64) throws -> Int64 {
        let key = OwnerKey(tree: tree, owner: owner)
        let last: Int64
        // One hash of the key when the owner has a cursor (every row after an owner's first).
        let cursorIndex = appendCursors.index(forKey: key)
        if let cursorIndex {
            last = appendCursors.values[cursorIndex]
        } else {
            var found: Int64 = 0
            try tx.tree(tree).forEach(in: .prefix(store.keys.ownerPrefix(owner)), reverse: true) { key, _ in
                found = IndexKeys.orderComponent(key) ?? 0
                return false
            }
            last = found
        }
        let (next, overflow) = last.addingReportingOverflow(IndexKeys.orderStep)
        guard !overflow else { throw StoreError.corruptStore(path: store.path, detail: "order keys of \(tree)/\(owner) are exhausted") }
        if let cursorIndex { appendCursors.values[cursorIndex] = next } else { appendCursors[key] = next }
        return next
    }

    /// Assigns strictly increasing order keys to an ordered list, keeping each member's stored
    /// key when it still fits, so a reorder rewrites only the rows that moved.
    private func assignOrder(_ list: SaveRequest.OrderedList) throws {
        guard let owner = resolve(list.owner, from: list.owner, key: list.relationship),
              let relationship = owner.info.relationship(named: list.relationship),
              let inverse = store.model.info(named: relationship.destinationName)?.relationship(named: relationship.description.inverse),
              let tree = inverse.foreignKeyTree, let orderSlot = inverse.orderSlot else { return }
        var existing: [Int64: Int64] = [:]
        var highest: Int64 = 0
        try tx.tree(tree).forEach(in: .prefix(store.keys.ownerPrefix(owner.primaryKey))) { key, _ in
            if let member = IndexKeys.trailingKey(key), let order = IndexKeys.orderComponent(key) {
                existing[member] = order
                highest = max(highest, order)
            }
            return true
        }
        var previous: Int64?
        for member in list.members {
            guard let id = resolve(member, from: owner, key: list.relationship) else { continue }
            let order: Int64
            if let current = existing[id.primaryKey], previous.map({ current > $0 }) ?? true {
                order = current
            } else {
                let (next, overflow) = (previous ?? 0).addingReportingOverflow(IndexKeys.orderStep)
                guard !overflow else { throw StoreError.corruptStore(path: store.path, detail: "order keys exhausted") }
                order = next
            }
            orderAssignments[OrderKey(slot: orderSlot, member: id.primaryKey)] = order
            previous = order
        }
        appendCursors[OwnerKey(tree: tree, owner: owner.primaryKey)] = max(previous ?? 0, highest)
    }

    /// Gives members appended to an ordered relationship order keys after the stored ones, in
    /// the order they were appended.
    private func assignAppendedOrder(_ append: SaveRequest.OrderedAppend) throws {
        guard let owner = resolve(append.owner, from: append.owner, key: append.relationship),
              let relationship = owner.info.relationship(named: append.relationship),
              let inverse = store.model.info(named: relationship.destinationName)?.relationship(named: relationship.description.inverse),
              let tree = inverse.foreignKeyTree, let orderSlot = inverse.orderSlot else { return }
        for member in append.members {
            guard let id = resolve(member, from: owner, key: append.relationship) else { continue }
            let key = OrderKey(slot: orderSlot, member: id.primaryKey)
            if orderAssignments[key] == nil { orderAssignments[key] = try nextAppendOrder(tree: tree, owner: owner.primaryKey) }
        }
    }

    /// Rewrites members whose order key changed but that the save did not otherwise write.
    private func touchReorderedRows(_ lists: [SaveRequest.OrderedList], skipping pending: Set<RowKey>) throws {
        for list in lists {
            for member in list.members {
                guard let id = member.isTemporaryID ? permanent[member] : member, !pending.contains(RowKey(id)),
                      written[id] == nil, let old = try store.readRow(tx, id) else { continue }
                guard let info = store.model.infosByCode[old.entityCode] else { continue }
                let changed = info.relationships.contains { relationship in
                    guard let slot = relationship.orderSlot,
                          let assigned = orderAssignments[OrderKey(slot: slot, member: id.primaryKey)] else { return false }
                    return old.columns[slot] != .value(.int(assigned))
                }
                if changed { try writeRow(ObjectID(info: info, store: store.identifier, key: id.primaryKey), columns: old.columns.values, old: old) }
            }
        }
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
        for member in change.added {
            guard let id = resolve(member, from: owner, key: change.relationship), present.insert(id.primaryKey).inserted else { continue }
            var order: Int64 = 0
            if ordered {
                last += IndexKeys.orderStep
                order = last
            }
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

    func checkUniqueness() throws {
        for (id, row) in written {
            for index in id.info.indexes where index.isUnique {
                guard let prefix = store.keys.uniquePrefix(index, columns: row.columns) else { continue }
                var other: ObjectID?
                try tx.tree(index.tree).forEach(in: .prefix(prefix)) { key, value in
                    guard let pk = IndexKeys.trailingKey(key), pk != id.primaryKey else { return true }
                    let code = store.keys.entryCode(from: value, root: id.info.rootCode) ?? id.info.code
                    if let info = store.model.infosByCode[code] { other = ObjectID(info: info, store: store.identifier, key: pk) }
                    return false
                }
                if let other {
                    let temporary = Dictionary(permanent.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
                    let other = temporary[other] ?? other
                    failures.append(ValidationFailure(objectID: temporary[id] ?? id, entity: id.entityName, key: index.properties.joined(separator: ","),
                                                      kind: .uniqueConstraint(properties: index.properties, conflictingObject: other)))
                }
            }
        }
    }
}
