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

/// The work of one in-memory save: `SaveWriter`'s steps on a `State` instead of trees.
final class InMemorySaveWriter {
    let store: InMemoryStore
    /// The state before the save (order keys and stored members are read from it, as a file
    /// store reads its index trees before the save's entries are applied).
    let base: InMemoryStore.State
    var state: InMemoryStore.State
    let policy: MergePolicy
    private var permanent: [ObjectID: ObjectID] = [:]
    private var written: [ObjectID: StoredRow] = [:]
    private var orderAssignments: [OrderKey: Int64] = [:]
    private var appendCursors: [OwnerKey: Int64] = [:]
    private var uniqueChecks: [(index: EntityInfo.Index, id: ObjectID)] = []
    private var vanished: [ObjectID] = []
    private var failures: [ValidationFailure] = []
    private var conflicts: [SaveConflict] = []

    private struct OrderKey: Hashable {
        var slot: Int
        var member: Int64
    }

    private struct OwnerKey: Hashable {
        var tree: String
        var owner: Int64
    }

    init(store: InMemoryStore, base: InMemoryStore.State, policy: MergePolicy) {
        self.store = store
        self.base = base
        state = base
        self.policy = policy
    }

    func run(_ request: SaveRequest) throws -> SaveResult {
        try assignPrimaryKeys(request.inserts)
        for delete in request.deletes { deleteRow(delete) }
        for list in request.orderedLists { assignOrder(list) }
        for append in request.orderedAppends { assignAppendedOrder(append) }
        var pending: Set<ObjectID> = []
        for update in request.updates { pending.insert(update.id) }
        for insert in request.inserts { if let id = permanent[insert.id] { pending.insert(id) } }
        for update in request.updates { writeUpdate(update, stored: storedRow(update.id)) }
        for insert in request.inserts {
            guard let id = permanent[insert.id] else { continue }
            writeRow(id, columns: columns(of: insert, id: id), old: nil)
        }
        touchReorderedRows(request.orderedLists, skipping: pending)
        for change in request.joinChanges { applyJoinChange(change) }
        checkUniqueness()
        if !conflicts.isEmpty { throw StoreError.conflicts(conflicts) }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
        return SaveResult(permanentIDs: permanent, writtenRows: written, vanished: vanished)
    }

    /// The row of `id` as the save sees it now, when it is of `id`'s entity (or a sub-entity).
    private func storedRow(_ id: ObjectID) -> StoredRow? {
        guard let row = state.rows[id.info.rootCode]?[id.primaryKey], let info = store.model.infosByCode[row.entityCode],
              id.info.includes(info) else { return nil }
        return row
    }

    // MARK: Keys and references

    private func assignPrimaryKeys(_ inserts: [SaveRequest.RowWrite]) throws {
        for insert in inserts {
            let root = insert.id.info.rootCode
            let last = state.lastKeys[root] ?? 0
            guard last < Int64.max else {
                throw StoreError.corruptStore(path: store.name, detail: "primary keys of \(insert.id.info.rootName) are exhausted")
            }
            state.lastKeys[root] = last + 1
            permanent[insert.id] = ObjectID(info: insert.id.info, store: store.identifier, key: last + 1)
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
                if let resolved = resolve(target, from: id,
                                          key: info.relationships.first { $0.slot == slot && $0.kind == .toOne }?.description.name ?? "#\(slot)") {
                    result[slot] = .reference(code: resolved.info.code, key: resolved.primaryKey)
                }
            }
        }
        return result
    }

    // MARK: Rows

    private func checkedVersion(_ row: StoredRow?, of id: ObjectID, expected: UInt64?) -> StoredRow? {
        if let expected, row?.version != expected {
            conflicts.append(SaveConflict(objectID: id, expectedVersion: expected, storedVersion: row?.version))
        }
        return row
    }

    private func writeUpdate(_ update: SaveRequest.RowWrite, stored: StoredRow?) {
        guard let expected = update.expectedVersion, stored?.version != expected, policy != .error else {
            guard let old = checkedVersion(stored, of: update.id, expected: update.expectedVersion) else {
                if update.expectedVersion == nil {
                    conflicts.append(SaveConflict(objectID: update.id, expectedVersion: 0, storedVersion: nil))
                }
                return
            }
            writeRow(update.id, columns: columns(of: update, id: update.id), old: old)
            return
        }
        guard let stored else {
            vanished.append(update.id)  // deleted by another writer: the store wins
            return
        }
        let read = update.readColumns.map { columns(of: SaveRequest.RowWrite(id: update.id, columns: $0), id: update.id) } ?? []
        guard let merged = policy.mergedColumns(stored: stored.columns.values, mine: columns(of: update, id: update.id), read: read,
                                                changedSlots: update.changedSlots) else {
            written[update.id] = stored  // rollback: unchanged; the context takes the stored row
            return
        }
        writeRow(update.id, columns: merged, old: stored)
    }

    /// Writes one row: order columns, version + 1, the referrers of its to-one relationships.
    private func writeRow(_ id: ObjectID, columns: [ColumnValue], old: StoredRow?) {
        let info = id.info
        var columns = columns
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
                columns[orderSlot] = .value(.int(nextAppendOrder(tree: tree, owner: owner)))
            }
        }
        for index in info.indexes where index.isUnique {
            guard let new = uniqueValue(index, columns) else { continue }
            if let old, uniqueValue(index, old.columns.values) == new { continue }
            uniqueChecks.append((index, id))
        }
        let (nextVersion, overflow) = (old?.version ?? 0).addingReportingOverflow(1)
        let row = StoredRow(entityCode: info.code, version: overflow ? 1 : nextVersion, columns: columns)
        if let old { unlinkReferences(of: id.primaryKey, columns: old.columns.values, info: info) }
        state.rows[info.rootCode, default: [:]][id.primaryKey] = row
        linkReferences(of: id.primaryKey, columns: columns, info: info)
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
        guard let old = checkedVersion(storedRow(id), of: id, expected: delete.expectedVersion),
              let info = store.model.infosByCode[old.entityCode] else { return }
        unlinkReferences(of: id.primaryKey, columns: old.columns.values, info: info)
        state.rows[info.rootCode]?[id.primaryKey] = nil
        for relationship in info.relationships where relationship.kind == .manyToMany {
            guard let tree = relationship.joinTree,
                  let inverse = store.model.info(named: relationship.destinationName)?.relationship(named: relationship.description.inverse)
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

    /// The order keys stored (before this save) for the members of `owner` through the
    /// to-one relationship whose foreign-key tree is `tree`.
    private func storedOrders(tree: String, owner: Int64, orderSlot: Int, root: UInt16) -> [Int64: Int64] {
        var orders: [Int64: Int64] = [:]
        for key in base.referrers[tree]?[owner] ?? [] {
            guard let row = base.rows[root]?[key], orderSlot < row.columns.count, case .value(.int(let order)) = row.columns[orderSlot] else { continue }
            orders[key] = order
        }
        return orders
    }

    private func nextAppendOrder(tree: String, owner: Int64) -> Int64 {
        let key = OwnerKey(tree: tree, owner: owner)
        let last: Int64
        if let cursor = appendCursors[key] {
            last = cursor
        } else {
            // The highest stored order key of the owner's members, over every to-one relationship
            // with this foreign-key tree (one relationship, possibly inherited).
            var highest: Int64 = 0
            for info in store.model.infos {
                for relationship in info.relationships where relationship.foreignKeyTree == tree {
                    guard let slot = relationship.orderSlot else { continue }
                    highest = max(highest, storedOrders(tree: tree, owner: owner, orderSlot: slot, root: info.rootCode).values.max() ?? 0)
                }
            }
            last = highest
        }
        let next = last &+ IndexKeys.orderStep
        appendCursors[key] = next
        return next
    }

    private func orderedInverse(_ ownerID: ObjectID, _ name: String) -> (tree: String, slot: Int, root: UInt16)? {
        guard let relationship = ownerID.info.relationship(named: name),
              let destination = store.model.info(named: relationship.destinationName),
              let inverse = destination.relationship(named: relationship.description.inverse),
              let tree = inverse.foreignKeyTree, let slot = inverse.orderSlot else { return nil }
        return (tree, slot, destination.rootCode)
    }

    private func assignOrder(_ list: SaveRequest.OrderedList) {
        guard let owner = resolve(list.owner, from: list.owner, key: list.relationship),
              let (tree, orderSlot, root) = orderedInverse(owner, list.relationship) else { return }
        let existing = storedOrders(tree: tree, owner: owner.primaryKey, orderSlot: orderSlot, root: root)
        let highest = existing.values.max() ?? 0
        var previous: Int64?
        for member in list.members {
            guard let id = resolve(member, from: owner, key: list.relationship) else { continue }
            let order: Int64
            if let current = existing[id.primaryKey], previous.map({ current > $0 }) ?? true {
                order = current
            } else {
                order = (previous ?? 0) &+ IndexKeys.orderStep
            }
            orderAssignments[OrderKey(slot: orderSlot, member: id.primaryKey)] = order
            previous = order
        }
        appendCursors[OwnerKey(tree: tree, owner: owner.primaryKey)] = max(previous ?? 0, highest)
    }

    private func assignAppendedOrder(_ append: SaveRequest.OrderedAppend) {
        guard let owner = resolve(append.owner, from: append.owner, key: append.relationship),
              let (tree, orderSlot, _) = orderedInverse(owner, append.relationship) else { return }
        for member in append.members {
            guard let id = resolve(member, from: owner, key: append.relationship) else { continue }
            let key = OrderKey(slot: orderSlot, member: id.primaryKey)
            if orderAssignments[key] == nil { orderAssignments[key] = nextAppendOrder(tree: tree, owner: owner.primaryKey) }
        }
    }

    /// Rewrites members whose order key changed but that the save did not otherwise write.
    private func touchReorderedRows(_ lists: [SaveRequest.OrderedList], skipping pending: Set<ObjectID>) {
        for list in lists {
            for member in list.members {
                guard let id = member.isTemporaryID ? permanent[member] : member, !pending.contains(id), written[id] == nil,
                      let old = storedRow(id), let info = store.model.infosByCode[old.entityCode] else { continue }
                let changed = info.relationships.contains { relationship in
                    guard let slot = relationship.orderSlot,
                          let assigned = orderAssignments[OrderKey(slot: slot, member: id.primaryKey)] else { return false }
                    return old.columns[slot] != .value(.int(assigned))
                }
                if changed { writeRow(ObjectID(info: info, store: store.identifier, key: id.primaryKey), columns: old.columns.values, old: old) }
            }
        }
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
            for member in change.added {
                guard let id = resolve(member, from: owner, key: change.relationship), present.insert(id.primaryKey).inserted else { continue }
                var order: Int64 = 0
                if ordered {
                    last += IndexKeys.orderStep
                    order = last
                }
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

    /// Each row that took values of a unique index conflicts with another row of the index's
    /// entities holding the same values (the one with the smallest key is named).
    private func checkUniqueness() {
        guard !uniqueChecks.isEmpty else { return }
        let temporary = Dictionary(permanent.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        var holders: [String: [[UInt8]: [Int64]]] = [:]
        for (index, id) in uniqueChecks {
            guard let row = state.rows[id.info.rootCode]?[id.primaryKey], let value = uniqueValue(index, row.columns.values) else { continue }
            if holders[index.tree] == nil {
                var byValue: [[UInt8]: [Int64]] = [:]
                for (key, other) in state.rows[id.info.rootCode] ?? [:] {
                    guard let info = store.model.infosByCode[other.entityCode], info.indexes.contains(where: { $0.tree == index.tree }),
                          let otherValue = uniqueValue(index, other.columns.values) else { continue }
                    byValue[otherValue, default: []].append(key)
                }
                holders[index.tree] = byValue
            }
            guard let otherKey = holders[index.tree]?[value]?.filter({ $0 != id.primaryKey }).min(),
                  let otherRow = state.rows[id.info.rootCode]?[otherKey], let otherInfo = store.model.infosByCode[otherRow.entityCode] else { continue }
            let other = ObjectID(info: otherInfo, store: store.identifier, key: otherKey)
            failures.append(ValidationFailure(objectID: temporary[id] ?? id, entity: id.entityName, key: index.properties.joined(separator: ","),
                                              kind: .uniqueConstraint(properties: index.properties, conflictingObject: temporary[other] ?? other)))
        }
    }
}
