import ArborEngine
import Foundation

/// The rows a batch delete removes and what it does to the rows that stay, worked out from
/// the model's delete rules before anything is written. Each doomed row is read once, in key
/// order with the rest of its cascade level, and what its removal takes — its row, index and
/// foreign-key entries — is gathered then, so no row is kept.
struct DeletionPlan {
    let store: BTreeStore
    let tx: WriteTransaction
    /// The rows to delete, by concrete entity: primary keys in the order found.
    private(set) var doomed: [ObjectIdentifier: (info: EntityInfo, keys: [Int64])] = [:]
    private(set) var doomedCount = 0
    private var doomedKeys: Set<RowKey> = []
    /// Rows, index entries and foreign-key entries to remove, per tree.
    private(set) var removals: [String: TreeChanges] = [:]
    /// Entries of words and substrings indexes to remove, per tree (see `PostingTree`).
    private(set) var textRemovals: [String: PostingChanges] = [:]
    /// To-one references of doomed rows under a rule other than cascade: the rule applies to
    /// the target unless it is doomed too.
    private var references: [(id: ObjectID, relationship: EntityInfo.Relationship, target: ObjectID)] = []
    /// Doomed rows with a to-many relationship under a rule other than cascade.
    private var owners: [(id: ObjectID, relationship: EntityInfo.Relationship)] = []
    /// Rows that stay with columns to clear (nullified to-one references), by row.
    private(set) var cleared: [RowKey: (id: ObjectID, slots: Set<Int>)] = [:]
    /// Rows that stay but lose a related object (their to-many lists, or cleared columns).
    private(set) var touched: [ObjectID] = []
    private(set) var failures: [ValidationFailure] = []

    init(store: BTreeStore, tx: WriteTransaction) {
        self.store = store
        self.tx = tx
    }

    func isDoomed(_ id: ObjectID) -> Bool { doomedKeys.contains(RowKey(id)) }

    /// Adds `named` and, through cascade rules, every row they reach (breadth first, each once):
    /// a level's rows are read together, in key order, one cursor per hierarchy.
    mutating func collect(_ named: [ObjectID]) throws {
        var level = named
        var key: [UInt8] = []  // reused from entry to entry
        while !level.isEmpty {
            var fresh: [ObjectID] = []
            for id in level where doomedKeys.insert(RowKey(id)).inserted { fresh.append(id) }
            var next: [ObjectID] = []
            for (id, row) in zip(fresh, try store.readRows(tx, fresh)) {
                guard let row else {
                    doomedKeys.remove(RowKey(id))
                    continue
                }
                let info = store.model.infosByCode[row.entityCode] ?? id.info
                doomed[ObjectIdentifier(info), default: (info, [])].keys.append(id.primaryKey)
                doomedCount += 1
                for index in info.indexes {
                    if index.isText {
                        if let text = IndexKeys.text(of: index, in: row.columns) {
                            textRemovals[index.tree, default: PostingChanges()].remove(text, kind: index.kind, key: id.primaryKey)
                        }
                        continue
                    }
                    key.removeAll(keepingCapacity: true)
                    if store.keys.appendIndexKey(index, columns: row.columns, key: id.primaryKey, to: &key) {
                        key.withUnsafeBytes { removals[index.tree, default: TreeChanges()].delete(key: $0) }
                    }
                }
                key.removeAll(keepingCapacity: true)
                store.keys.appendRowKey(id.primaryKey, to: &key)
                key.withUnsafeBytes { removals[info.rowTree, default: TreeChanges()].delete(key: $0) }
                for relationship in info.relationships {
                    if relationship.description.deleteRule == .cascade {
                        next.append(contentsOf: try related(id, row, relationship))
                    } else if relationship.kind == .toOne {
                        if let target = try relatedByReference(id, row, relationship) { references.append((id, relationship, target)) }
                    } else {
                        owners.append((id, relationship))
                    }
                }
            }
            level = next
        }
    }

    /// Applies the other rules to the rows that stay: deny refuses, nullify clears inverses.
    mutating func settle() throws {
        for (id, relationship, target) in references where !isDoomed(target) {
            apply(relationship.description.deleteRule, of: id, relationship, to: [target])
        }
        for (id, relationship) in owners {
            let staying = try store.members(tx, relationship, owner: id.primaryKey).filter { !isDoomed($0) }
            if !staying.isEmpty { apply(relationship.description.deleteRule, of: id, relationship, to: staying) }
        }
    }

    /// Rule `rule` of the doomed `id`'s `relationship` applied to the related rows that stay.
    private mutating func apply(_ rule: DeleteRule, of id: ObjectID, _ relationship: EntityInfo.Relationship, to staying: [ObjectID]) {
        touched.append(contentsOf: staying)
        if rule == .deny {
            failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: relationship.description.name,
                                              kind: .deleteDenied(count: staying.count)))
            return
        }
        guard rule == .nullify, let inverse = store.model.inverse(of: relationship), inverse.kind == .toOne else { return }
        // The related rows' reference to the deleted one is a column of theirs: cleared.
        for other in staying {
            guard let otherInverse = other.info.relationship(named: inverse.description.name) else { continue }
            if !otherInverse.description.isOptional {
                failures.append(ValidationFailure(objectID: other, entity: other.entityName, key: otherInverse.description.name, kind: .missingValue))
            }
            cleared[RowKey(other), default: (other, [])].slots.insert(otherInverse.slot)
        }
    }

    /// The objects related to the row of `id` through `relationship`, as stored.
    private func related(_ id: ObjectID, _ row: StoredRow, _ relationship: EntityInfo.Relationship) throws -> [ObjectID] {
        switch relationship.kind {
        case .toOne:
            return try relatedByReference(id, row, relationship).map { [$0] } ?? []
        case .oneToMany, .manyToMany:
            return try store.members(tx, relationship, owner: id.primaryKey)
        }
    }

    /// The object a to-one `relationship` of the row of `id` names, as stored.
    private func relatedByReference(_ id: ObjectID, _ row: StoredRow, _ relationship: EntityInfo.Relationship) throws -> ObjectID? {
        guard relationship.slot < row.columns.count, case .reference(let code, let key) = row.columns[relationship.slot] else { return nil }
        return try store.objectID(code: code, key: key, location: id.info.rowTree)
    }

    /// The doomed rows' IDs.
    func doomedIDs(store identifier: UUID) -> ObjectIDSet {
        var set = ObjectIDSet()
        for (info, keys) in doomed.values { set.append(store: identifier, info: info, keys: keys) }
        return set
    }
}

extension BTreeStore {
    func batchDelete(_ info: EntityInfo, _ request: BatchDeleteRequest) throws -> BatchDeleteResult {
        guard !isReadOnly else { throw StoreError.readOnlyStore(path: path) }
        var named: [ObjectID] = []
        var plan: DeletionPlan
        do {
            let tx = try database.beginWrite()
            do {
                switch request.source {
                case .predicate(let predicate):
                    for (key, code) in try matchingKeys(info, predicate: predicate, includesSubentities: request.includesSubentities, in: tx) {
                        named.append(try objectID(code: code, key: key, location: info.rowTree))
                    }
                    named.sort { $0.primaryKey < $1.primaryKey }
                case .objectIDs(let ids):
                    // Only stored rows, each once, of the entity the ID names.
                    var seen: Set<RowKey> = []
                    for id in ids where id.storeIdentifier == identifier && seen.insert(RowKey(id)).inserted {
                        if let row = try readRow(tx, id), row.entityCode == id.info.code { named.append(id) }
                    }
                }
                plan = DeletionPlan(store: self, tx: tx)
                try plan.collect(named)
                try plan.settle()
                if !plan.failures.isEmpty { throw ValidationError(failures: Array(plan.failures.prefix(BatchRequestLimits.failures))) }
                try write(plan, tx)
                try tx.commit()
                rowCache.applyBatch(changed: plan.doomedIDs(store: identifier), snapshot: tx.transactionID)
                rowCache.applyBatch(changed: plan.touched.map(RowKey.init), snapshot: tx.transactionID)
            } catch {
                tx.abort()
                throw error
            }
        } catch { throw storeError(error, path: path) }
        let deleted = plan.doomedIDs(store: identifier)
        let updated = ObjectIDSet(plan.touched.filter { !plan.isDoomed($0) })
        return BatchDeleteResult(count: named.count, objectIDs: request.resultType == .objectIDs ? named : nil,
                                 changes: ObjectChanges(updated: updated, deleted: deleted))
    }

    /// Writes a settled plan: the cleared columns of rows that stay, then the removals the plan
    /// gathered and the doomed rows' join entries (each tree in key order, trees in name order).
    private func write(_ plan: DeletionPlan, _ tx: WriteTransaction) throws {
        let writer = SaveWriter(store: self, tx: tx)
        writer.keepsWrittenRows = false
        // Rows that stay: read first (writing moves pages under a cursor), then written.
        var staying: [(ObjectID, StoredRow, [ColumnValue])] = []
        for (_, (id, slots)) in plan.cleared.sorted(by: { ($0.key.root, $0.key.key) < ($1.key.root, $1.key.key) }) {
            guard !plan.isDoomed(id), let row = try readRow(tx, id) else { continue }
            var columns = row.columns.values
            for slot in slots where slot < columns.count { columns[slot] = .null }
            staying.append((id, row, columns))
        }
        for (id, row, columns) in staying { try writer.writeRow(id, columns: columns, old: row) }
        var removals = plan.removals
        for (info, doomedKeys) in plan.doomed.values {
            for relationship in info.relationships where relationship.kind == .manyToMany {
                guard let joinTree = relationship.joinTree,
                      let inverse = model.inverse(of: relationship)
                else { continue }
                // Both directions: the row's entries, and its entry in each member's list.
                let tree = try tx.tree(joinTree)
                for owner in doomedKeys {
                    try tree.forEach(in: .prefix(keys.joinPrefix(side: relationship.joinSide, owner: owner))) { key, _ in
                        removals[joinTree, default: TreeChanges()].delete(key)
                        if let member = IndexKeys.trailingKey(key) {
                            try tree.forEach(in: .prefix(keys.joinPrefix(side: inverse.joinSide, owner: member))) { memberKey, _ in
                                if IndexKeys.trailingKey(memberKey) == owner { removals[joinTree, default: TreeChanges()].delete(memberKey) }
                                return true
                            }
                        }
                        return true
                    }
                }
            }
        }
        for (name, changes) in removals.sorted(by: { $0.key < $1.key }) { try tx.tree(name).apply(changes) }
        for (name, changes) in plan.textRemovals.sorted(by: { $0.key < $1.key }) {
            try PostingTree(tree: try tx.tree(name), keys: keys).apply(changes)
        }
        try writer.flushIndexWrites()
    }
}
