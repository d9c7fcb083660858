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

    let store: BTreeStore
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

    init(store: BTreeStore, tx: WriteTransaction, info: EntityInfo, index: EntityInfo.Index?, rule: BatchInsertRequest.ConflictRule) {
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
        // Objects with equal values form a group (numbered in key order); each group's stored
        // row, if any, is found by one cursor seeking the groups in key order.
        let (groups, groupCount) = Self.groups(of: prefixes)
        let stored = try storedEntries(index, prefixes, groups: groups, groupCount: groupCount)
        // Where each group went in this chunk; the objects whose values go to a stored row,
        // merged once the rows are read (in key order, by one cursor).
        var seen = [Target?](repeating: nil, count: groupCount)
        var merges: [(object: Int, into: ObjectID)] = []
        var updated: [ObjectID: Int] = [:]
        for (position, object) in chunk.enumerated() {
            guard let group = groups[position] else {  // a nil value conflicts with nothing
                insert(object)
                continue
            }
            if let earlier = seen[group] {
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
            if let existing = stored[group] {
                // A stored object of another entity of the hierarchy has other columns: it can
                // be given way to, not updated.
                guard rule == .ignore || existing.info.code == info.code else {
                    failures.append(ValidationFailure(objectID: nil, entity: info.name, key: index.properties.joined(separator: ","),
                                                      kind: .uniqueConstraint(properties: index.properties, conflictingObject: existing), batchIndex: object.batchIndex))
                    targets.append(.existing(existing))
                    continue
                }
                seen[group] = .existing(existing)
                targets.append(.existing(existing))
                if rule == .ignore {
                    ignoredCount += 1
                } else {
                    if updated[existing] == nil { updated[existing] = updated.count }
                    merges.append((position, existing))
                }
                continue
            }
            seen[group] = .inserted(inserts.count)
            insert(object)
        }
        if !updated.isEmpty {
            // The stored rows, in the order first met.
            // (A hierarchy's rows have distinct keys: the key names the row.)
            var rows = [StoredRow?](repeating: nil, count: updated.count)
            var orderByKey: [Int64: Int] = [:]
            for (id, order) in updated { orderByKey[id.primaryKey] = order }
            try store.visitRows(tx, tree: info.rowTree, sortedKeys: orderByKey.keys.sorted()) { key, bytes in
                if let order = orderByKey[key] { rows[order] = try RowCodec.decode(bytes, tree: info.rowTree, key: key) }
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

    /// The group of each prefix (nil for none): equal prefixes share one, numbered in
    /// ascending key order.
    static func groups(of prefixes: [[UInt8]?]) -> (groups: [Int?], count: Int) {
        var present: [(prefix: [UInt8], position: Int)] = []
        present.reserveCapacity(prefixes.count)
        for (position, prefix) in prefixes.enumerated() {
            if let prefix { present.append((prefix, position)) }
        }
        present.sort { a, b in
            let order = compareBytes(a.prefix, b.prefix)
            return order != 0 ? order < 0 : a.position < b.position
        }
        var groups = [Int?](repeating: nil, count: prefixes.count)
        var count = 0
        for place in present.indices {
            if place > 0 && present[place - 1].prefix == present[place].prefix {
                groups[present[place].position] = count - 1
            } else {
                groups[present[place].position] = count
                count += 1
            }
        }
        return (groups, count)
    }

    /// The stored object of each group (nil where none has the group's values): one cursor
    /// seeking the groups' prefixes in key order.
    private func storedEntries(_ index: EntityInfo.Index, _ prefixes: [[UInt8]?], groups: [Int?], groupCount: Int) throws -> [ObjectID?] {
        var prefixOfGroup = [[UInt8]](repeating: [], count: groupCount)
        for (position, group) in groups.enumerated() {
            if let group, let prefix = prefixes[position] { prefixOfGroup[group] = prefix }
        }
        var found = [ObjectID?](repeating: nil, count: groupCount)
        let cursor = try tx.tree(index.tree).makeCursor()
        for (group, prefix) in prefixOfGroup.enumerated() {
            // The first entry at or after the values: theirs when it starts with them.
            guard try cursor.seek(prefix) else { break }
            guard let pk = cursor.withKey({ key in key.starts(with: prefix) ? IndexKeys.trailingKey(key) : nil }) ?? nil else { continue }
            guard let code = try cursor.withValue({ store.keys.entryCode(from: $0, root: info.rootCode) }) ?? nil else {
                throw StoreError.corruptRow(location: index.tree, detail: "malformed index entry")
            }
            found[group] = try store.objectID(code: code, key: pk, location: index.tree)
        }
        return found
    }
}
