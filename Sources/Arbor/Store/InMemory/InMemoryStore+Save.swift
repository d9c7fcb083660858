import ArborEngine
import Foundation

extension InMemoryStore {
    /// Applies `request` to a copy of the state under the writer lock; the copy replaces the
    /// state when the save commits. The rules are a file store's (`SaveWriter`): primary keys
    /// per hierarchy, optimistic locking with the request's merge policy, order keys of
    /// ordered relationships, join lists, unique values.
    func prepareSave(_ request: SaveRequest) throws -> any PreparedStoreSave {
        guard !isReadOnly else { throw StoreError.readOnlyStore(path: name) }
        writerLock.wait()
        do {
            let writer = InMemorySaveWriter(store: self, base: snapshot(), policy: request.mergePolicy)
            let result = try writer.run(request)
            return InMemorySave(store: self, state: writer.state, result: result)
        } catch {
            writerLock.signal()
            throw error
        }
    }
}

/// A save applied to a copy of an in-memory store's state, holding its writer lock.
final class InMemorySave: PreparedStoreSave {
    let store: InMemoryStore
    private var state: InMemoryStore.State
    let result: SaveResult
    private var finished = false

    init(store: InMemoryStore, state: InMemoryStore.State, result: SaveResult) {
        self.store = store
        self.state = state
        self.result = result
    }

    func commit() throws {
        guard !finished else { return }
        finished = true
        state.version += 1
        let committed = state
        store.state.withLock { $0 = committed }
        store.writerLock.signal()
    }

    func abort() {
        guard !finished else { return }
        finished = true
        store.writerLock.signal()
    }

    deinit { abort() }
}

/// The work of one in-memory save: the rules of `SaveRequestWriter` on a `State` instead of trees.
final class InMemorySaveWriter: SaveRequestWriter {
    let store: InMemoryStore
    /// The state before the save (order keys are read from it, as a file store reads its
    /// index trees before the save's entries are applied).
    let base: InMemoryStore.State
    var state: InMemoryStore.State
    let policy: MergePolicy
    var permanent: [ObjectID: ObjectID] = [:]
    var written: [ObjectID: StoredRow] = [:]
    var orderAssignments: [MemberOrderKey: Int64] = [:]
    var appendCursors: [OwnerOrderKey: Int64] = [:]
    var vanished: [ObjectID] = []
    var failures: [ValidationFailure] = []
    var conflicts: [SaveConflict] = []
    private var uniqueChecks: [(index: EntityInfo.Index, id: ObjectID)] = []

    init(store: InMemoryStore, base: InMemoryStore.State, policy: MergePolicy) {
        self.store = store
        self.base = base
        state = base
        self.policy = policy
    }

    var model: ManagedObjectModel { store.model }
    var storeIdentifier: UUID { store.identifier }
    var storeName: String { store.name }

    func run(_ request: SaveRequest) throws -> SaveResult {
        try assignPrimaryKeys(request.inserts)
        for delete in request.deletes { deleteRow(delete) }
        for list in request.orderedLists { try assignOrder(list) }
        for append in request.orderedAppends { try assignAppendedOrder(append) }
        var pending: Set<RowKey> = []
        for update in request.updates { pending.insert(RowKey(update.id)) }
        for insert in request.inserts { if let id = insertedID(insert) { pending.insert(RowKey(id)) } }
        for update in request.updates { try writeUpdate(update, stored: currentRow(update.id)) }
        for insert in request.inserts { try writeInsert(insert) }
        try touchReorderedRows(request.orderedLists, skipping: pending)
        for change in request.joinChanges { applyJoinChange(change) }
        checkUniqueness()
        if !conflicts.isEmpty { throw StoreError.conflicts(conflicts) }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
        return SaveResult(permanentIDs: permanent, writtenRows: written, vanished: vanished)
    }

    func currentRow(_ id: ObjectID) -> StoredRow? {
        guard let row = state.rows[id.info.rootCode]?[id.primaryKey], let info = store.model.infosByCode[row.entityCode],
              id.info.includes(info) else { return nil }
        return row
    }

    private func assignPrimaryKeys(_ inserts: [SaveRequest.RowWrite]) throws {
        for insert in inserts {
            let root = insert.id.info.rootCode
            let last = state.lastKeys[root] ?? 0
            guard insert.id.isTemporaryID else {
                checkRestoredKey(insert.id, last: last)
                continue
            }
            guard last < Int64.max else {
                throw StoreError.corruptStore(path: store.name, detail: "primary keys of \(insert.id.info.rootName) are exhausted")
            }
            state.lastKeys[root] = last + 1
            permanent[insert.id] = ObjectID(info: insert.id.info, store: store.identifier, key: last + 1)
        }
    }

    // MARK: Rows

    /// Writes one row: order columns, version + 1, the referrers of its to-one relationships.
    func writeRow(_ id: ObjectID, columns: consuming [ColumnValue], old: StoredRow?, changed: SlotMask?) throws {
        let info = id.info
        try fillOrderColumns(id, &columns, old: old)
        for index in info.indexes where index.isUnique {
            guard let new = uniqueValue(index, columns) else { continue }
            if let old, uniqueValue(index, old.columns.values) == new { continue }
            uniqueChecks.append((index, id))
        }
        let (nextVersion, overflow) = (old?.version ?? 0).addingReportingOverflow(1)
        let row = StoredRow(entityCode: info.code, version: overflow ? 1 : nextVersion, columns: columns)
        if let old {
            unlinkReferences(of: id.primaryKey, columns: old.columns.values, info: info)
            forgetUniqueValues(of: id.primaryKey, columns: old.columns.values, info: info)
        }
        state.rows[info.rootCode, default: [:]][id.primaryKey] = row
        linkReferences(of: id.primaryKey, columns: row.columns.values, info: info)
        noteUniqueValues(of: id.primaryKey, columns: row.columns.values, info: info)
        written[id] = row
    }

    private func linkReferences(of key: Int64, columns: [ColumnValue], info: EntityInfo) {
        for relationship in info.relationships where relationship.kind == .toOne {
            guard let tree = relationship.foreignKeyTree, case .reference(_, let owner) = columns[relationship.slot] else { continue }
            state.referrers[tree, default: [:]][owner, default: []].insert(key)
        }
    }

    private func unlinkReferences(of key: Int64, columns: [ColumnValue], info: EntityInfo) {
        for relationship in info.relationships where relationship.kind == .toOne {
            guard let tree = relationship.foreignKeyTree, case .reference(_, let owner) = columns[relationship.slot] else { continue }
            state.referrers[tree]?[owner]?.remove(key)
            if state.referrers[tree]?[owner]?.isEmpty == true { state.referrers[tree]?[owner] = nil }
        }
    }

    private func deleteRow(_ delete: SaveRequest.RowDelete) {
        let id = delete.id
        guard let old = checkedVersion(currentRow(id), of: id, expected: delete.expectedVersion),
              let info = store.model.infosByCode[old.entityCode] else { return }
        unlinkReferences(of: id.primaryKey, columns: old.columns.values, info: info)
        forgetUniqueValues(of: id.primaryKey, columns: old.columns.values, info: info)
        state.rows[info.rootCode]?[id.primaryKey] = nil
        for relationship in info.relationships where relationship.kind == .manyToMany {
            guard let tree = relationship.joinTree,
                  let inverse = store.model.inverse(of: relationship)
            else { continue }
            let mine = InMemoryStore.JoinSide(tree: tree, side: relationship.joinSide)
            let theirs = InMemoryStore.JoinSide(tree: tree, side: inverse.joinSide)
            for member in state.joins[mine]?[id.primaryKey] ?? [] {
                state.joins[theirs]?[member.key]?.removeAll { $0.key == id.primaryKey }
            }
            state.joins[mine]?[id.primaryKey] = nil
        }
    }

    // MARK: Order

    func storedOrders(tree: String, owner: Int64) -> [Int64: Int64] {
        guard let (slot, root) = store.orderColumns[tree] else { return [:] }
        var orders: [Int64: Int64] = [:]
        for key in base.referrers[tree]?[owner] ?? [] {
            guard let row = base.rows[root]?[key], slot < row.columns.count, case .value(.int(let order)) = row.columns[slot] else { continue }
            orders[key] = order
        }
        return orders
    }

    func highestStoredOrder(tree: String, owner: Int64) -> Int64 {
        storedOrders(tree: tree, owner: owner).values.max() ?? 0
    }

    // MARK: Joins

    private func applyJoinChange(_ change: SaveRequest.JoinChange) {
        guard let owner = resolve(change.owner, from: change.owner, key: change.relationship),
              let relationship = owner.info.relationship(named: change.relationship),
              let tree = relationship.joinTree else { return }
        let side = InMemoryStore.JoinSide(tree: tree, side: relationship.joinSide)
        let ordered = relationship.description.isOrdered
        var list = state.joins[side]?[owner.primaryKey] ?? []
        if let members = change.members {
            list = []
            for (position, member) in members.enumerated() {
                guard let id = resolve(member, from: owner, key: change.relationship) else { continue }
                let order = ordered ? Int64(position + 1) * IndexKeys.orderStep : 0
                let entry = InMemoryStore.JoinMember(order: order, key: id.primaryKey, code: id.info.code)
                if !list.contains(entry) { list.append(entry) }
            }
        } else {
            let removed = Set(change.removed.compactMap { $0.isTemporaryID ? permanent[$0]?.primaryKey : $0.primaryKey })
            list.removeAll { removed.contains($0.key) }
            var last = list.map(\.order).max() ?? 0
            var present = Set(list.map(\.key))
            for (id, order) in joinAdditions(change, owner: owner, ordered: ordered, present: &present, last: &last) {
                list.append(InMemoryStore.JoinMember(order: order, key: id.primaryKey, code: id.info.code))
            }
        }
        list.sort { ($0.order, $0.key) < ($1.order, $1.key) }
        state.joins[side, default: [:]][owner.primaryKey] = list.isEmpty ? nil : list
    }

    // MARK: Uniqueness

    /// The values of `index` in `columns`, encoded as a file store's unique index compares
    /// them; nil when a value is missing (nil never conflicts).
    private func uniqueValue(_ index: EntityInfo.Index, _ columns: [ColumnValue]) -> [UInt8]? {
        guard index.slots.allSatisfy({ $0 < columns.count && !columns[$0].isNull }) else { return nil }
        return store.keys.indexKey(index, columns: columns, key: 0)
    }

    private func noteUniqueValues(of key: Int64, columns: [ColumnValue], info: EntityInfo) {
        for index in info.indexes where index.isUnique {
            guard let value = uniqueValue(index, columns) else { continue }
            state.uniqueValues[index.tree, default: [:]][value, default: []].insert(key)
        }
    }

    private func forgetUniqueValues(of key: Int64, columns: [ColumnValue], info: EntityInfo) {
        for index in info.indexes where index.isUnique {
            guard let value = uniqueValue(index, columns) else { continue }
            state.uniqueValues[index.tree]?[value]?.remove(key)
            if state.uniqueValues[index.tree]?[value]?.isEmpty == true { state.uniqueValues[index.tree]?[value] = nil }
        }
    }

    /// Each row that took values of a unique index conflicts with another row of the index's
    /// entities holding the same values (the one with the smallest key is named).
    /// - Complexity: O(values written), one lookup each in the unique-value map.
    private func checkUniqueness() {
        guard !uniqueChecks.isEmpty else { return }
        let temporary = Dictionary(permanent.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        for (index, id) in uniqueChecks {
            guard let row = state.rows[id.info.rootCode]?[id.primaryKey], let value = uniqueValue(index, row.columns.values),
                  let otherKey = state.uniqueValues[index.tree]?[value]?.filter({ $0 != id.primaryKey }).min(),
                  let otherRow = state.rows[id.info.rootCode]?[otherKey], let otherInfo = store.model.infosByCode[otherRow.entityCode]
            else { continue }
            let other = ObjectID(info: otherInfo, store: store.identifier, key: otherKey)
            failures.append(ValidationFailure(objectID: temporary[id] ?? id, entity: id.entityName, key: index.properties.joined(separator: ","),
                                              kind: .uniqueConstraint(properties: index.properties, conflictingObject: temporary[other] ?? other)))
        }
    }
}
