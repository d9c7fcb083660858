import ArborEngine

/// A probe of a compound index of the destination led by the inverse foreign key (for
/// `SUBQUERY(stopTimes, $x, $x.departureTime BETWEEN …)`, an index on (stop, departureTime)):
/// the owner's key followed by the ranges the conditions give on the next columns. A class:
/// every candidate's probe takes it, and a copy of a reference is one retain.
final class MemberProbePlan {
    let index: EntityInfo.Index
    let destination: EntityInfo
    /// Ranges over the key after the owner's component; each probe puts the owner's in front.
    let tailRanges: [KeyRange]
    /// Conditions the ranges leave open, checked on each entry's key.
    let keyFilters: [KeyFilter]
    /// What the key cannot answer exactly, evaluated on the member's row; nil when nothing is
    /// left (the window of a (stop, departureTime) index): the first entry is the answer.
    let residual: ObjectPredicate?

    init?(_ relationship: EntityInfo.Relationship, predicate: ObjectPredicate, store: BTreeStore) {
        guard relationship.kind == .oneToMany, let destination = store.model.info(named: relationship.destinationName),
              let inverse = destination.inverse(of: relationship),
              let index = destination.indexes.first(where: { $0.slots.count >= 2 && $0.slots[0] == inverse.slot && !$0.isForeignKey && !$0.isText })
        else { return nil }
        let parts = QueryPlanner.conjuncts(predicate)
        let stated = QueryPlanner.statedConditions(parts, info: destination, store: store)
        let conditions = QueryPlanner.columnConditions(parts, stated)
        // A condition on the foreign key itself would share the owner's column: not planned.
        guard !conditions.contains(slot: inverse.slot) else { return nil }
        // The columns after the owner's as an index of their own: the owner's component has a
        // fixed width, so a range over the rest of the key prefixed by it is a range of the index.
        let tail = EntityInfo.Index(name: index.name, tree: index.tree, slots: Array(index.slots.dropFirst()),
                                    properties: Array(index.properties.dropFirst()), isUnique: false,
                                    isNormalized: index.isNormalized, orderSlot: nil, isForeignKey: false)
        guard let (_, ranges, _, tailExact) = QueryPlanner.ranges(for: tail, conditions) else { return nil }
        self.index = index
        self.destination = destination
        self.tailRanges = ranges
        keyFilters = QueryPlanner.keyFilters(for: index, conditions, skipping: tailExact.shifted(by: 1))
        residual = QueryPlanner.residual(parts, stated, answeredBy: index)
    }

    /// Bytes of the current probe's bounds, rebuilt for each candidate in place so that a
    /// probe allocates nothing. Unchecked: a plan serves one fetch on one thread, and a checked
    /// access costs about as much as the allocation it saves.
    @exclusivity(unchecked) private var scratch: [UInt8] = []

    /// Calls `body` with the bounds of `tail` within the entries of the owner `owner` (its
    /// component encoded with `keys`, put in front of each of `tail`'s bounds; without an upper
    /// bound, the end of the owner's entries). The bytes are valid only during the call.
    @inline(__always)
    func withBounds<R>(_ tail: KeyRange, owner: Int64, keys: IndexKeys,
                       _ body: (_ lower: UnsafeRawBufferPointer, _ lowerInclusive: Bool,
                                _ upper: UnsafeRawBufferPointer?, _ upperInclusive: Bool) throws -> R) rethrows -> R {
        var bytes: [UInt8] = []
        swap(&bytes, &scratch)
        defer { swap(&bytes, &scratch) }
        bytes.removeAll(keepingCapacity: true)
        TupleKey.append(keys.integer(owner), descending: false, to: &bytes)
        let ownerEnd = bytes.count
        bytes.append(contentsOf: tail.lower?.key ?? [])
        let lowerEnd = bytes.count
        var upperInclusive = false, hasUpper = true
        if let upper = tail.upper {
            for offset in 0..<ownerEnd { bytes.append(bytes[offset]) }
            bytes.append(contentsOf: upper.key)
            upperInclusive = upper.inclusive
        } else if let end = QueryPlanner.successor(Array(bytes[..<ownerEnd])) {
            bytes.append(contentsOf: end)
        } else {
            hasUpper = false
        }
        return try bytes.withUnsafeBytes { all in
            try body(UnsafeRawBufferPointer(rebasing: all[..<lowerEnd]), tail.lower?.inclusive ?? true,
                     hasUpper ? UnsafeRawBufferPointer(rebasing: all[lowerEnd...]) : nil, upperInclusive)
        }
    }
}

/// The members of one owner's one-to-many relationship, searched inside one read transaction.
struct OwnerMembers {
    /// The owner's primary key.
    let owner: Int64
    let store: BTreeStore
    let tx: Transaction

    /// Whether some member passes `filter` (rows it cannot filter are evaluated with
    /// `predicate`), reading members through the foreign-key index until one does (false
    /// when the relationship has none: `MemberCheck` plans this only when it has).
    /// O(log n) per member read, stopping at the first that passes: members whose rows are in
    /// memory first (in foreign-key order), then the others.
    func anyMember(_ relationship: EntityInfo.Relationship, passes filter: RowFilter, else predicate: ObjectPredicate,
                   evaluator: inout PredicateEvaluator) throws -> Bool {
        guard relationship.kind == .oneToMany, let destination = store.model.info(named: relationship.destinationName),
              let inverse = destination.inverse(of: relationship),
              let foreignKeys = inverse.foreignKeyTree else { return false }
        let rowTree = try tx.tree(destination.rowTree)
        /// Whether `member`'s row meets the whole predicate (for rows the filter cannot tell).
        func meetsWhole(_ member: Int64, code: UInt16) throws -> Bool {
            let id = try store.objectID(code: code, key: member, location: foreignKeys)
            guard let row = try store.readRow(tx, id) else { return false }
            let subject = RowSubject(subjectID: id, entity: store.model.infosByCode[row.entityCode] ?? id.info, row: row, store: store, tx: tx)
            return try evaluator.evaluate(predicate, subject)
        }
        let ownerPrefix = store.keys.ownerPrefix(owner)
        // Every entry in the range starts with the owner's component: the walk to the member's
        // key (the last component) starts after it.
        let ownerLength = ownerPrefix.count
        // One member meeting the condition is the answer, whichever it is: members whose rows
        // are in memory and that the filter decides go first, then those it cannot decide, and
        // the others (each a file read) only if none of those meets it. Members of one owner
        // are scattered over the table, so most of them are usually not in memory.
        // The walk's state is a class: variables captured by the per-entry closure would each
        // cost a run-time exclusivity check per access.
        let walk = MemberWalk()
        // Counted once (the statistics take a lock).
        defer { store.rowCache.noteRowsRead(walk.read) }
        try tx.tree(foreignKeys).forEachUnsafe(in: .prefix(ownerPrefix)) { key, value in
            guard let start = TupleKey.lastComponentStart(in: key, from: ownerLength),
                  let code = store.keys.entryCode(from: value, root: destination.rootCode) else {
                throw StoreError.corruptRow(location: foreignKeys, detail: "malformed relationship entry")
            }
            /// The member's primary key, decoded only where it is needed: most members are
            /// decided by their row, found under the entry's own bytes.
            func member() throws -> Int64 {
                guard let member = IndexKeys.integer(in: key, at: start) else {
                    throw StoreError.corruptRow(location: foreignKeys, detail: "malformed relationship entry")
                }
                return member
            }
            // The destination's own code needs no lookup (the common case); another must be in the model.
            if code != destination.code { _ = try store.objectID(code: code, key: try member(), location: foreignKeys) }
            // The member's row key ends the entry (one store, one key format). The filter reads
            // the row where it lies in its page (no copy).
            let lookup = try rowTree.withValueInMemory(forKey: UnsafeRawBufferPointer(rebasing: key[start...])) { try filter.matches($0) }
            switch lookup {
            case .found(let verdict?):
                walk.read += 1
                walk.found = verdict
            case .found(nil): walk.undecided.append((try member(), code))
            // Not found under the entry's own bytes: looked up again below by the row key
            // encoded as the row tree encodes it (and skipped if missing, as reading the
            // members one by one does).
            case .notInMemory, .absent: walk.elsewhere.append((try member(), code))
            }
            return !walk.found
        }
        if walk.found { return true }
        for (member, code) in walk.undecided {
            walk.read += 1
            if try meetsWhole(member, code: code) { return true }
        }
        guard !walk.elsewhere.isEmpty else { return false }
        // Point lookups, which find their leaf through the row tree's leaf directory when it
        // has one (one search, where a descent searches each branch level).
        var key: [UInt8] = []  // one buffer for every member's key
        for (member, code) in walk.elsewhere {
            key.removeAll(keepingCapacity: true)
            store.keys.appendRowKey(member, to: &key)
            guard let verdict = try rowTree.withValue(key, { try filter.matches($0) }) else { continue }
            walk.read += 1
            if try verdict ?? meetsWhole(member, code: code) { return true }
        }
        return false
    }

    /// Whether an entry of the plan's index under the owner's key passes the plan's ranges
    /// and key filters and its row meets the residual predicate. O(log n + entries visited).
    func probeExists(_ plan: MemberProbePlan, evaluator: inout PredicateEvaluator) throws -> Bool {
        let entries = try tx.tree(plan.index.tree)
        if plan.keyFilters.isEmpty && plan.residual == nil {
            // The ranges answer the conditions exactly (a (stop, departureTime) index for a
            // departure window): any entry in them is the answer, found in one descent each.
            // Locals for the closures: capturing `self` would copy the subject (a retain per part).
            let keys = store.keys, entities = store.model.infosByCode, root = plan.destination.rootCode
            let owner = self.owner
            func isEntry(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
                guard let code = keys.entryCode(from: value, root: root), entities[code] != nil else {
                    throw StoreError.corruptRow(location: plan.index.tree, detail: "malformed entry")
                }
                return true
            }
            for tail in plan.tailRanges {
                // Bounds composed in the plan's buffer: nothing allocated per candidate.
                let found = try plan.withBounds(tail, owner: owner, keys: keys) { lower, lowerInclusive, upper, upperInclusive in
                    try entries.withFirstEntry(from: lower, inclusive: lowerInclusive, to: upper, inclusive: upperInclusive, isEntry)
                }
                if found == true { return true }
            }
            return false
        }
        let ownerPrefix = store.keys.ownerPrefix(owner)
        let rows = try tx.tree(plan.destination.rowTree).makeCursor()
        var read = 0
        defer { store.rowCache.noteRowsRead(read) }
        for tail in plan.tailRanges {
            var found = false
            let range = plan.withBounds(tail, owner: owner, keys: store.keys) { lower, lowerInclusive, upper, upperInclusive in
                KeyRange(lower: .init(Array(lower), inclusive: lowerInclusive), upper: upper.map { .init(Array($0), inclusive: upperInclusive) })
            }
            try entries.forEachUnsafe(in: range) { key, value in
                guard let code = store.keys.entryCode(from: value, root: plan.destination.rootCode),
                      let info = store.model.infosByCode[code] else {
                    throw StoreError.corruptRow(location: plan.index.tree, detail: "malformed entry")
                }
                for filter in plan.keyFilters where try !filter.matches(key) { return true }
                guard let residual = plan.residual else {
                    found = true
                    return false
                }
                // The member's key ends the entry: parsed only when its row is read, walking
                // from past the owner's component (every entry in the range starts with it).
                guard let start = TupleKey.lastComponentStart(in: key, from: ownerPrefix.count), let pk = IndexKeys.integer(in: key, at: start) else {
                    throw StoreError.corruptRow(location: plan.index.tree, detail: "malformed entry")
                }
                guard let row = try store.withRow(rows, pk, endingEntry: key, at: start, {
                    try RowCodec.decode($0, tree: plan.destination.rowTree, key: pk)
                }) else {
                    throw StoreError.corruptRow(location: plan.index.tree, detail: "entry for missing row \(pk)")
                }
                read += 1
                let member = RowSubject(subjectID: ObjectID(info: info, store: store.identifier, key: pk), entity: info, row: row,
                                        store: store, tx: tx)
                found = try evaluator.evaluate(residual, member)
                return !found
            }
            if found { return true }
        }
        return false
    }
}

/// What `anyMember`'s walk over the foreign-key entries has found so far. Unchecked: one walk
/// uses it, on one thread, and its accesses never overlap.
private final class MemberWalk {
    /// A member the filter passed.
    @exclusivity(unchecked) var found = false
    /// Member rows read.
    @exclusivity(unchecked) var read = 0
    /// Members in memory whose rows the filter cannot decide: the whole predicate decides.
    @exclusivity(unchecked) var undecided: [(member: Int64, code: UInt16)] = []
    /// Members whose rows are not in memory.
    @exclusivity(unchecked) var elsewhere: [(member: Int64, code: UInt16)] = []
}
