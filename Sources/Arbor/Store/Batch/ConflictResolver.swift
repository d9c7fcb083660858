import ArborEngine

/// Sorts the objects of one chunk of a batch insert into new rows and updates of stored ones,
/// by their values for one uniqueness constraint: the stored entries of all the chunk's values
/// are found by one pass of a cursor over the constraint's index (in key order, as an IN list
/// is), and objects with the same values as an earlier one of the chunk go to the same row.
/// (Earlier chunks are written before the next is resolved, so their rows are found stored.)
struct ConflictResolver {
    /// Where an object of the chunk went.
    enum Target {
        /// The `position`-th new row of the chunk.
        case inserted(Int)
        /// A stored object (updated, or given way to).
        case existing(ObjectID)
    }

    struct Update {
        let id: ObjectID
        let old: StoredRow
        var columns: [ColumnValue]
        /// The request object whose values it took last.
        var batchIndex: Int
    }

    let store: PersistentStore
    let tx: WriteTransaction
    let info: EntityInfo
    /// The constraint's unique index; nil with `.error` (conflicts are the uniqueness check's).
    let index: EntityInfo.Index?
    let rule: BatchInsertRequest.ConflictRule

    /// The chunk's new rows, in request order.
    private(set) var inserts: [CompletedObject] = []
    /// Stored rows the chunk updates, each once.
    private(set) var updates: [Update] = []
    /// The position in `updates` of each stored row's update.
    private var updatePositions: [ObjectID: Int] = [:]
    /// Per object of the chunk, in order.
    private(set) var targets: [Target] = []
    private(set) var ignoredCount = 0
    private(set) var failures: [ValidationFailure] = []

    init(store: PersistentStore, tx: WriteTransaction, info: EntityInfo, index: EntityInfo.Index?, rule: BatchInsertRequest.ConflictRule) {
        self.store = store
        self.tx = tx
        self.info = info
        self.index = index
        self.rule = rule
    }

    /// The unique index conflicts are found on: the one `conflictConstraint` names, or the
    /// entity's only one; nil with `.error`.
    /// - Throws: `ValidationError` when the entity has no such constraint, or several and the
    ///   request names none.
    static func constraint(of info: EntityInfo, _ request: BatchInsertRequest) throws -> EntityInfo.Index? {
        guard request.conflictRule != .error else { return nil }
        let unique = info.indexes.filter { $0.isUnique && !$0.isForeignKey }
        func fail(_ detail: String) -> ValidationError {
            ValidationError(failures: [ValidationFailure(objectID: nil, entity: info.name, key: request.conflictConstraint?.joined(separator: ",") ?? "",
                                                         kind: .invalidValue(detail))])
        }
        if let names = request.conflictConstraint {
            guard let index = unique.first(where: { Set($0.properties) == Set(names) && $0.properties.count == names.count }) else {
                throw fail("\(info.name) has no uniqueness constraint on (\(names.joined(separator: ", ")))")
            }
            return index
        }
        guard unique.count == 1 else {
            throw fail(unique.isEmpty ? "an upsert needs a uniqueness constraint, and \(info.name) has none"
                                      : "\(info.name) has \(unique.count) uniqueness constraints: name one with conflictConstraint")
        }
        return unique[0]
    }

    /// Resolves `chunk` (request positions from `firstIndex`).
    mutating func resolve(_ chunk: [CompletedObject], firstIndex: Int) throws {
        targets.reserveCapacity(chunk.count)
        guard let index else {
            // No conflict resolution: every object is new (and was checked as such).
            for object in chunk { insert(object) }
            return
        }
        let keys = store.keys
        let prefixes = chunk.map { keys.uniquePrefix(index, columns: $0.columns) }
        let stored = try storedEntries(index, prefixes.compactMap { $0 })
        // Where each constraint value went in this chunk; the objects whose values go to a
        // stored row, merged once the rows are read (in key order, by one cursor).
        var seen: [[UInt8]: Target] = [:]
        var merges: [(object: Int, into: ObjectID)] = []
        var updated: [ObjectID: Int] = [:]
        for (position, (object, prefix)) in zip(chunk, prefixes).enumerated() {
            guard let prefix else {  // a nil value conflicts with nothing
                insert(object)
                continue
            }
            if let earlier = seen[prefix] {
                targets.append(earlier)
                if rule == .ignore {
                    ignoredCount += 1
                } else if case .existing(let id) = earlier {
                    merges.append((position, id))
                } else {
                    merge(object, into: earlier)
                }
                continue
            }
            if let existing = stored[prefix] {
                // A stored object of another entity of the hierarchy has other columns: it can
                // be given way to, not updated.
                guard rule == .ignore || existing.info.code == info.code else {
                    failures.append(ValidationFailure(objectID: nil, entity: info.name, key: index.properties.joined(separator: ","),
                                                      kind: .uniqueConstraint(properties: index.properties, conflictingObject: existing), batchIndex: object.batchIndex))
                    targets.append(.existing(existing))
                    continue
                }
                seen[prefix] = .existing(existing)
                targets.append(.existing(existing))
                if rule == .ignore {
                    ignoredCount += 1
                } else {
                    if updated[existing] == nil { updated[existing] = updated.count }
                    merges.append((position, existing))
                }
                continue
            }
            seen[prefix] = .inserted(inserts.count)
            insert(object)
        }
        if !updated.isEmpty {
            // The stored rows, in the order first met.
            // (A hierarchy's rows have distinct keys: the key names the row.)
            var rows = [StoredRow?](repeating: nil, count: updated.count)
            var orderByKey: [Int64: Int] = [:]
            for (id, order) in updated { orderByKey[id.primaryKey] = order }
            try store.visitRows(tx, tree: info.rowTree, sortedKeys: orderByKey.keys.sorted()) { key, bytes in
                if let order = orderByKey[key] { rows[order] = try RowCodec.decode(bytes, context: "\(info.rowTree)/\(key)") }
                return true
            }
            for (id, order) in updated.sorted(by: { $0.value < $1.value }) {
                guard let old = rows[order] else {
                    throw StoreError.corruptRow(location: index.tree, detail: "entry for missing row \(id.primaryKey)")
                }
                updatePositions[id] = updates.count
                updates.append(Update(id: id, old: old, columns: old.columns.values, batchIndex: 0))
            }
            for (object, id) in merges { merge(chunk[object], into: .existing(id)) }
        }
        // A stored row updated to lose a required value is reported as that row.
        for update in updates {
            let object = CompletedObject(columns: update.columns, setSlots: [], batchIndex: update.batchIndex, reported: [])
            failures.append(contentsOf: object.missingValues(info, columns: update.columns, id: update.id))
        }
        for object in inserts { failures.append(contentsOf: object.missingValues(info, columns: object.columns, id: nil)) }
    }

    private mutating func insert(_ object: CompletedObject) {
        targets.append(.inserted(inserts.count))
        inserts.append(object)
    }

    /// Gives `target` the values `object` set.
    private mutating func merge(_ object: CompletedObject, into target: Target) {
        switch target {
        case .inserted(let position):
            for slot in object.setSlots { inserts[position].columns[slot] = object.columns[slot] }
            inserts[position].setSlots.append(contentsOf: object.setSlots)
        case .existing(let id):
            guard let position = updatePositions[id] else { return }
            for slot in object.setSlots where slot < updates[position].columns.count { updates[position].columns[slot] = object.columns[slot] }
            updates[position].batchIndex = object.batchIndex
        }
    }

    /// The stored entries of `index` whose leading components are each of `prefixes`, by
    /// prefix: one cursor over the sorted prefixes.
    private func storedEntries(_ index: EntityInfo.Index, _ prefixes: [[UInt8]]) throws -> [[UInt8]: ObjectID] {
        var found: [[UInt8]: ObjectID] = [:]
        var sorted = prefixes.sorted { compareBytes($0, $1) < 0 }
        sorted.removeDuplicates()
        let cursor = try tx.tree(index.tree).makeCursor()
        for prefix in sorted {
            // The first entry at or after the values: theirs when it starts with them.
            guard try cursor.seek(prefix) else { break }
            guard let pk = cursor.withKey({ key in key.starts(with: prefix) ? IndexKeys.trailingKey(key) : nil }) ?? nil else { continue }
            guard let code = try cursor.withValue({ store.keys.entryCode(from: $0, root: info.rootCode) }) ?? nil else {
                throw StoreError.corruptRow(location: index.tree, detail: "malformed index entry")
            }
            found[prefix] = try store.objectID(code: code, key: pk, location: index.tree)
        }
        return found
    }
}

extension Array where Element == [UInt8] {
    /// Removes repeats from a sorted array.
    mutating func removeDuplicates() {
        var unique: [[UInt8]] = []
        unique.reserveCapacity(count)
        for element in self where unique.last != element { unique.append(element) }
        self = unique
    }
}
