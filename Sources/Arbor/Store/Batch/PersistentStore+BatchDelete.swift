import ArborEngine
import Foundation

/// The rows a batch delete removes and what it does to the rows that stay, worked out from
/// the model's delete rules before anything is written.
struct DeletionPlan {
    let store: PersistentStore
    let tx: WriteTransaction
    /// Every row to delete (the named ones, then what cascades reach), in the order found.
    private(set) var doomed: [(id: ObjectID, row: StoredRow)] = []
    private var doomedKeys: Set<RowKey> = []
    /// Rows that stay with columns to clear (nullified to-one references), by row.
    private(set) var cleared: [RowKey: (id: ObjectID, slots: Set<Int>)] = [:]
    /// Rows that stay but lose a related object (their to-many lists, or cleared columns).
    private(set) var touched: [ObjectID] = []
    private(set) var failures: [ValidationFailure] = []

    init(store: PersistentStore, tx: WriteTransaction) {
        self.store = store
        self.tx = tx
    }

    func isDoomed(_ id: ObjectID) -> Bool { doomedKeys.contains(RowKey(id)) }

    /// Adds `named` and, through cascade rules, every row they reach (breadth first, each once):
    /// a level's rows are read together, in key order, one cursor per hierarchy.
    mutating func collect(_ named: [ObjectID]) throws {
        var level = named
        while !level.isEmpty {
            var fresh: [ObjectID] = []
            for id in level where !doomedKeys.contains(RowKey(id)) {
                doomedKeys.insert(RowKey(id))
                fresh.append(id)
            }
            var next: [ObjectID] = []
            for (id, row) in zip(fresh, try store.readRows(tx, fresh)) {
                guard let row else {
                    doomedKeys.remove(RowKey(id))
                    continue
                }
                doomed.append((id, row))
                for relationship in id.info.relationships where relationship.description.deleteRule == .cascade {
                    next.append(contentsOf: try related(id, row, relationship))
                }
            }
            level = next
        }
    }

    /// Applies the other rules to the rows that stay: deny refuses, nullify clears inverses.
    mutating func settle() throws {
        for (id, row) in doomed {
            for relationship in id.info.relationships {
                let rule = relationship.description.deleteRule
                guard rule != .cascade else { continue }
                let staying: [ObjectID]
                if relationship.kind == .toOne {
                    // Most often the related row goes too (a stop time's stop): no list made.
                    guard let target = try relatedByReference(id, row, relationship), !isDoomed(target) else { continue }
                    staying = [target]
                } else {
                    staying = try related(id, row, relationship).filter { !isDoomed($0) }
                    guard !staying.isEmpty else { continue }
                }
                touched.append(contentsOf: staying)
                if rule == .deny {
                    failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: relationship.description.name,
                                                      kind: .deleteDenied(count: staying.count)))
                    continue
                }
                guard rule == .nullify, let inverse = store.model.info(named: relationship.destinationName)?
                    .relationship(named: relationship.description.inverse), inverse.kind == .toOne else { continue }
                // The related rows' reference to the deleted one is a column of theirs: cleared.
                for other in staying {
                    guard let otherInverse = other.info.relationship(named: inverse.description.name) else { continue }
                    if !otherInverse.description.isOptional {
                        failures.append(ValidationFailure(objectID: other, entity: other.entityName, key: otherInverse.description.name, kind: .missingValue))
                    }
                    cleared[RowKey(other), default: (other, [])].slots.insert(otherInverse.slot)
                }
            }
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
}

extension PersistentStore {
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
                if !plan.failures.isEmpty { throw ValidationError(failures: Array(plan.failures.prefix(Self.batchFailureLimit))) }
                try write(plan, tx)
                try tx.commit()
                rowCache.applyBatch(changed: plan.doomed.map { RowKey($0.id) } + plan.touched.map(RowKey.init), snapshot: tx.transactionID)
            } catch {
                tx.abort()
                throw error
            }
        } catch { throw storeError(error, path: path) }
        let deleted = ObjectIDSet(plan.doomed.map(\.id))
        let updated = ObjectIDSet(plan.touched.filter { !plan.isDoomed($0) })
        return BatchDeleteResult(count: named.count, objectIDs: request.resultType == .objectIDs ? named : nil,
                                 changes: ObjectChanges(updated: updated, deleted: deleted))
    }

    /// Writes a settled plan: the cleared columns of rows that stay, then the deleted rows,
    /// their index and foreign-key entries and their join entries (each tree in key order).
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
        // Rows and join entries to remove, per tree.
        var treeDeletes: [String: TreeChanges] = [:]
        var joinDeletes: [String: [[UInt8]]] = [:]
        var key: [UInt8] = []  // reused from entry to entry
        for (id, row) in plan.doomed {
            guard let concrete = model.infosByCode[row.entityCode] else { continue }
            for index in concrete.indexes {
                key.removeAll(keepingCapacity: true)
                if keys.appendIndexKey(index, columns: row.columns, key: id.primaryKey, to: &key) {
                    key.withUnsafeBytes { writer.indexChanges[ObjectIdentifier(index), default: (index, TreeChanges())].changes.delete(key: $0) }
                }
            }
            key.removeAll(keepingCapacity: true)
            keys.appendRowKey(id.primaryKey, to: &key)
            key.withUnsafeBytes { treeDeletes[concrete.rowTree, default: TreeChanges()].delete(key: $0) }
            for relationship in concrete.relationships where relationship.kind == .manyToMany {
                guard let joinTree = relationship.joinTree,
                      let inverse = model.info(named: relationship.destinationName)?.relationship(named: relationship.description.inverse)
                else { continue }
                // Both directions: this row's entries, and its entry in each member's list.
                let tree = try tx.tree(joinTree)
                try tree.forEach(in: .prefix(keys.joinPrefix(side: relationship.joinSide, owner: id.primaryKey))) { key, _ in
                    joinDeletes[joinTree, default: []].append(key)
                    if let member = IndexKeys.trailingKey(key) {
                        try tree.forEach(in: .prefix(keys.joinPrefix(side: inverse.joinSide, owner: member))) { memberKey, _ in
                            if IndexKeys.trailingKey(memberKey) == id.primaryKey { joinDeletes[joinTree, default: []].append(memberKey) }
                            return true
                        }
                    }
                    return true
                }
            }
        }
        for (name, treeKeys) in joinDeletes {
            for key in treeKeys { treeDeletes[name, default: TreeChanges()].delete(key) }
        }
        for (name, changes) in treeDeletes.sorted(by: { $0.key < $1.key }) { try tx.tree(name).apply(changes) }
        try writer.flushIndexWrites()
    }
}
