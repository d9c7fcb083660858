import Foundation

/// An order key assigned to a member row: the order column `slot` of row `member`.
struct MemberOrderKey: Hashable {
    var slot: Int
    var member: Int64
}

/// One owner's members through the to-one relationship whose foreign-key tree is `tree`.
struct OwnerOrderKey: Hashable {
    var tree: String
    var owner: Int64
}

/// The rules of applying a `SaveRequest` that do not depend on where rows are kept: temporary
/// IDs made permanent, optimistic locking and the merge policy, order keys of ordered
/// relationships. `SaveWriter` (a file store) and `InMemorySaveWriter` conform, so both stores
/// apply one set of rules; each supplies its rows and stored order keys.
protocol SaveRequestWriter: AnyObject {
    var model: ManagedObjectModel { get }
    var storeIdentifier: UUID { get }
    var policy: MergePolicy { get }
    /// Temporary ID → permanent ID of each object the request inserts.
    var permanent: [ObjectID: ObjectID] { get set }
    var written: [ObjectID: StoredRow] { get set }
    var vanished: [ObjectID] { get set }
    var failures: [ValidationFailure] { get set }
    var conflicts: [SaveConflict] { get set }
    var orderAssignments: [MemberOrderKey: Int64] { get set }
    /// The last order key given per owner (after its stored ones).
    var appendCursors: [OwnerOrderKey: Int64] { get set }
    /// Where errors say the store is.
    var storeName: String { get }

    /// The row of `id` as the save sees it now, when it is of `id`'s entity or a sub-entity.
    func currentRow(_ id: ObjectID) throws -> StoredRow?
    /// The order keys stored for `owner`'s members in `tree` before this save, by member key.
    func storedOrders(tree: String, owner: Int64) throws -> [Int64: Int64]
    /// The highest order key stored for `owner`'s members in `tree` before this save (0: none).
    func highestStoredOrder(tree: String, owner: Int64) throws -> Int64
    /// Writes one row (order columns filled by `fillOrderColumns`), version + 1.
    func writeRow(_ id: ObjectID, columns: consuming [ColumnValue], old: StoredRow?, changed: SlotMask?) throws
}

extension SaveRequestWriter {
    // MARK: IDs and columns

    /// The permanent ID of `id`; records a failure for a temporary ID not inserted by this save.
    func resolve(_ id: ObjectID, from owner: ObjectID, key: @autoclosure () -> String) -> ObjectID? {
        if !id.isTemporaryID { return id }
        if let assigned = permanent[id] { return assigned }
        failures.append(ValidationFailure(objectID: owner, entity: owner.entityName, key: key(), kind: .danglingReference(id)))
        return nil
    }

    /// The row `write` asks for, references resolved to stored rows.
    func columns(of write: SaveRequest.RowWrite, id: ObjectID) -> [ColumnValue] {
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

    // MARK: Versions

    /// `row`, the row of `id` as stored now (nil when gone), after noting a conflict when its
    /// version is not the `expected` one.
    func checkedVersion(_ row: StoredRow?, of id: ObjectID, expected: UInt64?) -> StoredRow? {
        if let expected, row?.version != expected {
            conflicts.append(SaveConflict(objectID: id, expectedVersion: expected, storedVersion: row?.version))
        }
        return row
    }

    /// Writes `update` over its row as stored now (`stored`, nil when the row is gone); a
    /// conflict is resolved here by the merge policy, under the store's writer lock, so no
    /// other writer can slip in between resolving and writing.
    func writeUpdate(_ update: SaveRequest.RowWrite, stored: StoredRow?) throws {
        guard let expected = update.expectedVersion, stored?.version != expected, policy != .error else {
            // No conflict (or no policy): the plain optimistic-locking check.
            guard let old = checkedVersion(stored, of: update.id, expected: update.expectedVersion) else {
                if update.expectedVersion == nil {
                    conflicts.append(SaveConflict(objectID: update.id, expectedVersion: 0, storedVersion: nil))
                }
                return
            }
            try writeRow(update.id, columns: columns(of: update, id: update.id), old: old, changed: nil)
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
        try writeRow(update.id, columns: merged, old: stored, changed: nil)
    }

    func writeInsert(_ insert: SaveRequest.RowWrite) throws {
        guard let id = insertedID(insert) else { return }
        if !insert.id.isTemporaryID, try currentRow(id) != nil {
            failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: "",
                                              kind: .invalidValue("its row exists: a restored object cannot be inserted again")))
            return
        }
        try writeRow(id, columns: columns(of: insert, id: id), old: nil, changed: nil)
    }

    /// The ID `insert` is written under: the permanent ID this save gave a temporary one, or
    /// the object's own ID for an object inserted again under it (a saved deletion undone).
    func insertedID(_ insert: SaveRequest.RowWrite) -> ObjectID? {
        insert.id.isTemporaryID ? permanent[insert.id] : insert.id
    }

    /// Records a failure unless `id`, inserted again under its own ID, is a key this store gave
    /// (its own store, a key not above the hierarchy's last key `last`).
    func checkRestoredKey(_ id: ObjectID, last: Int64) {
        guard id.storeIdentifier != storeIdentifier || id.primaryKey < 1 || id.primaryKey > last else { return }
        failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: "",
                                          kind: .invalidValue("not a key this store gave: it cannot be inserted under it")))
    }

    // MARK: Order

    /// Sets the order column of each ordered to-one relationship of row `id`: the key the
    /// request assigned, else the stored one while the owner is unchanged, else the next after
    /// the owner's last.
    func fillOrderColumns(_ id: ObjectID, _ columns: inout [ColumnValue], old: StoredRow?) throws {
        for relationship in id.info.relationships where relationship.kind == .toOne {
            guard let orderSlot = relationship.orderSlot, let tree = relationship.foreignKeyTree else { continue }
            guard case .reference(_, let owner) = columns[relationship.slot] else {
                columns[orderSlot] = .null
                continue
            }
            if let assigned = orderAssignments[MemberOrderKey(slot: orderSlot, member: id.primaryKey)] {
                columns[orderSlot] = .value(.int(assigned))
            } else if let old, old.columns[relationship.slot] == columns[relationship.slot], !old.columns[orderSlot].isNull {
                columns[orderSlot] = old.columns[orderSlot]
            } else {
                columns[orderSlot] = .value(.int(try nextAppendOrder(tree: tree, owner: owner)))
            }
        }
    }

    func nextAppendOrder(tree: String, owner: Int64) throws -> Int64 {
        let key = OwnerOrderKey(tree: tree, owner: owner)
        // One hash of the key when the owner has a cursor (every row after an owner's first).
        let cursorIndex = appendCursors.index(forKey: key)
        let last = try cursorIndex.map { appendCursors.values[$0] } ?? highestStoredOrder(tree: tree, owner: owner)
        let (next, overflow) = last.addingReportingOverflow(IndexKeys.orderStep)
        guard !overflow else { throw StoreError.corruptStore(path: storeName, detail: "order keys of \(tree)/\(owner) are exhausted") }
        if let cursorIndex { appendCursors.values[cursorIndex] = next } else { appendCursors[key] = next }
        return next
    }

    /// The members `change` adds to one side of a join that are not in it yet (`present`,
    /// updated), each with its order key: after `last` (updated) when the list is ordered, 0
    /// otherwise. Both stores append join members by this rule.
    func joinAdditions(_ change: SaveRequest.JoinChange, owner: ObjectID, ordered: Bool,
                       present: inout Set<Int64>, last: inout Int64) -> [(id: ObjectID, order: Int64)] {
        var additions: [(id: ObjectID, order: Int64)] = []
        for member in change.added {
            guard let id = resolve(member, from: owner, key: change.relationship), present.insert(id.primaryKey).inserted else { continue }
            if ordered { last += IndexKeys.orderStep }
            additions.append((id, ordered ? last : 0))
        }
        return additions
    }

    /// The owner's ordered relationship `name`: its inverse's foreign-key tree and order slot.
    private func orderedInverse(_ owner: ObjectID, _ name: String) -> (tree: String, slot: Int)? {
        guard let relationship = owner.info.relationship(named: name),
              let inverse = model.inverse(of: relationship),
              let tree = inverse.foreignKeyTree, let slot = inverse.orderSlot else { return nil }
        return (tree, slot)
    }

    /// Assigns strictly increasing order keys to an ordered list, keeping each member's stored
    /// key when it still fits, so a reorder rewrites only the rows that moved.
    func assignOrder(_ list: SaveRequest.OrderedList) throws {
        guard let owner = resolve(list.owner, from: list.owner, key: list.relationship),
              let (tree, orderSlot) = orderedInverse(owner, list.relationship) else { return }
        let existing = try storedOrders(tree: tree, owner: owner.primaryKey)
        let highest = existing.values.max() ?? 0
        var previous: Int64?
        for member in list.members {
            guard let id = resolve(member, from: owner, key: list.relationship) else { continue }
            let order: Int64
            if let current = existing[id.primaryKey], previous.map({ current > $0 }) ?? true {
                order = current
            } else {
                let (next, overflow) = (previous ?? 0).addingReportingOverflow(IndexKeys.orderStep)
                guard !overflow else { throw StoreError.corruptStore(path: storeName, detail: "order keys exhausted") }
                order = next
            }
            orderAssignments[MemberOrderKey(slot: orderSlot, member: id.primaryKey)] = order
            previous = order
        }
        appendCursors[OwnerOrderKey(tree: tree, owner: owner.primaryKey)] = max(previous ?? 0, highest)
    }

    /// Gives members appended to an ordered relationship order keys after the stored ones, in
    /// the order they were appended.
    func assignAppendedOrder(_ append: SaveRequest.OrderedAppend) throws {
        guard let owner = resolve(append.owner, from: append.owner, key: append.relationship),
              let (tree, orderSlot) = orderedInverse(owner, append.relationship) else { return }
        for member in append.members {
            guard let id = resolve(member, from: owner, key: append.relationship) else { continue }
            let key = MemberOrderKey(slot: orderSlot, member: id.primaryKey)
            if orderAssignments[key] == nil { orderAssignments[key] = try nextAppendOrder(tree: tree, owner: owner.primaryKey) }
        }
    }

    /// Rewrites members whose order key changed but that the save did not otherwise write.
    func touchReorderedRows(_ lists: [SaveRequest.OrderedList], skipping pending: Set<RowKey>) throws {
        for list in lists {
            for member in list.members {
                guard let id = member.isTemporaryID ? permanent[member] : member, !pending.contains(RowKey(id)),
                      written[id] == nil, let old = try currentRow(id), let info = model.infosByCode[old.entityCode] else { continue }
                let changed = info.relationships.contains { relationship in
                    guard let slot = relationship.orderSlot,
                          let assigned = orderAssignments[MemberOrderKey(slot: slot, member: id.primaryKey)] else { return false }
                    return old.columns[slot] != .value(.int(assigned))
                }
                if changed {
                    try writeRow(ObjectID(info: info, store: storeIdentifier, key: id.primaryKey), columns: old.columns.values, old: old, changed: nil)
                }
            }
        }
    }
}
