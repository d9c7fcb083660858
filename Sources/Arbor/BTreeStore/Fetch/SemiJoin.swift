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
              let inverse = destination.relationship(named: relationship.description.inverse),
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
        residual = QueryPlanner.residual(parts, stated, answeredBy: index, info: destination)
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

extension RowSubject {
    /// The store probes read (plans are made per store).
    var storeIdentity: ObjectIdentifier { ObjectIdentifier(store) }

    /// Through a compound index led by the inverse foreign key when one serves `predicate`
    /// (`probeExists`), else by filtering the members' row bytes (`anyMember`).
    func existsMember(through relationship: EntityInfo.Relationship, meeting predicate: ObjectPredicate,
                      access: inout PredicateEvaluator.SubqueryAccess?, evaluator: inout PredicateEvaluator) throws -> Bool? {
        if access?.store != storeIdentity {
            let probe = memberProbePlan(relationship, predicate: predicate)
            access = (storeIdentity, probe, probe == nil ? memberFilter(relationship, predicate: predicate) : nil)
        }
        if let plan = access?.probe { return try probeExists(plan, evaluator: &evaluator) }
        if let filter = access?.filter { return try anyMember(relationship, passes: filter, else: predicate, evaluator: &evaluator) }
        return nil
    }

    /// A filter on the row bytes of `relationship`'s members meeting `predicate`; nil when the
    /// predicate is not a conjunction of exact comparisons of their own attributes.
    func memberFilter(_ relationship: EntityInfo.Relationship, predicate: ObjectPredicate) -> RowFilter? {
        guard relationship.kind == .oneToMany, let destination = store.model.info(named: relationship.destinationName) else { return nil }
        return RowFilter(predicate, info: destination, store: store)
    }

    /// Whether some member passes `filter` (rows it cannot filter are evaluated with
    /// `predicate`), reading members through the foreign-key index until one does; nil when
    /// the relationship has no foreign-key index.
    /// O(log n) per member read, stopping at the first that passes: members whose rows are in
    /// memory first (in foreign-key order), then the others.
    func anyMember(_ relationship: EntityInfo.Relationship, passes filter: RowFilter, else predicate: ObjectPredicate,
                   evaluator: inout PredicateEvaluator) throws -> Bool? {
        guard relationship.kind == .oneToMany, let destination = store.model.info(named: relationship.destinationName),
              let inverse = destination.relationship(named: relationship.description.inverse),
              let foreignKeys = inverse.foreignKeyTree else { return nil }
        let rowTree = try tx.tree(destination.rowTree)
        /// Whether `member`'s row meets the whole predicate (for rows the filter cannot tell).
        func meetsWhole(_ member: Int64, code: UInt16) throws -> Bool {
            let id = try store.objectID(code: code, key: member, location: foreignKeys)
            guard let row = try store.readRow(tx, id) else { return false }
            let subject = RowSubject(subjectID: id, entity: store.model.infosByCode[row.entityCode] ?? id.info, row: row, store: store, tx: tx)
            return try evaluator.evaluate(predicate, subject)
        }
        let owner = store.keys.ownerPrefix(subjectID.primaryKey)
        // Every entry in the range starts with the owner's component: the walk to the member's
        // key (the last component) starts after it.
        let ownerLength = owner.count
        // One member meeting the condition is the answer, whichever it is: members whose rows
        // are in memory and that the filter decides go first, then those it cannot decide, and
        // the others (each a file read) only if none of those meets it. Members of one owner
        // are scattered over the table, so most of them are usually not in memory.
        // The walk's state is a class: variables captured by the per-entry closure would each
        // cost a run-time exclusivity check per access.
        let walk = MemberWalk()
        // Counted once (the statistics take a lock).
        defer { store.rowCache.noteRowsRead(walk.read) }
        try tx.tree(foreignKeys).forEachUnsafe(in: .prefix(owner)) { key, value in
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
        // Through one cursor: each descent shares what upper levels it can with the one before.
        let rows = try rowTree.makeCursor()
        for (member, code) in walk.elsewhere {
            let key = store.keys.rowKey(member)
            guard let verdict = try key.withUnsafeBytes({ try rows.withValue(forKey: $0) { try filter.matches($0) } }) else { continue }
            walk.read += 1
            if try verdict ?? meetsWhole(member, code: code) { return true }
        }
        return false
    }

    /// How to probe `relationship` for members meeting `predicate`, whatever the owner; nil
    /// when no index helps. Made once per fetch and used for every candidate.
    func memberProbePlan(_ relationship: EntityInfo.Relationship, predicate: ObjectPredicate) -> MemberProbePlan? {
        MemberProbePlan(relationship, predicate: predicate, store: store)
    }

    /// Whether an entry of the plan's index under this subject's key passes the plan's ranges
    /// and key filters and its row meets the residual predicate. O(log n + entries visited).
    func probeExists(_ plan: MemberProbePlan, evaluator: inout PredicateEvaluator) throws -> Bool {
        let entries = try tx.tree(plan.index.tree)
        if plan.keyFilters.isEmpty && plan.residual == nil {
            // The ranges answer the conditions exactly (a (stop, departureTime) index for a
            // departure window): any entry in them is the answer, found in one descent each.
            // Locals for the closures: capturing `self` would copy the subject (a retain per part).
            let keys = store.keys, entities = store.model.infosByCode, root = plan.destination.rootCode
            let owner = subjectID.primaryKey
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
        let owner = store.keys.ownerPrefix(subjectID.primaryKey)
        let rows = try tx.tree(plan.destination.rowTree).makeCursor()
        var read = 0
        defer { store.rowCache.noteRowsRead(read) }
        for tail in plan.tailRanges {
            var found = false
            let range = plan.withBounds(tail, owner: subjectID.primaryKey, keys: store.keys) { lower, lowerInclusive, upper, upperInclusive in
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
                guard let start = TupleKey.lastComponentStart(in: key, from: owner.count), let pk = IndexKeys.integer(in: key, at: start) else {
                    throw StoreError.corruptRow(location: plan.index.tree, detail: "malformed entry")
                }
                guard let row = try store.withRow(rows, pk, endingEntry: key, at: start, {
                    try RowCodec.decode($0, context: "\(plan.destination.rowTree)/\(pk)")
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

extension ObjectPredicate {
    /// The predicate with `$variable.path` replaced by `path` (evaluated on the member itself).
    func replacingVariable(_ variable: String) -> ObjectPredicate {
        switch self {
        case .true, .false: return self
        case .and(let parts): return .and(parts.map { $0.replacingVariable(variable) })
        case .or(let parts): return .or(parts.map { $0.replacingVariable(variable) })
        case .not(let part): return .not(part.replacingVariable(variable))
        case .comparison(var comparison):
            comparison.left = comparison.left.replacingVariable(variable)
            comparison.right = comparison.right.replacingVariable(variable)
            return .comparison(comparison)
        }
    }

    /// Whether the predicate still mentions `$variable` (then it cannot be evaluated on the
    /// member alone).
    func mentions(_ variable: String) -> Bool {
        switch self {
        case .true, .false: return false
        case .and(let parts), .or(let parts): return parts.contains { $0.mentions(variable) }
        case .not(let part): return part.mentions(variable)
        case .comparison(let comparison): return comparison.left.mentions(variable) || comparison.right.mentions(variable)
        }
    }

    /// Whether evaluating the predicate on an object of `info` reads none of the object's
    /// columns: every key path it follows from the object starts with a to-many relationship
    /// (whose members come from the relationship's index), as in
    /// `SUBQUERY(stopTimes, $x, $x.departureTime > %@).@count != 0`.
    func readsOnlyToMany(of info: EntityInfo) -> Bool {
        switch self {
        case .true, .false: return true
        case .and(let parts), .or(let parts): return parts.allSatisfy { $0.readsOnlyToMany(of: info) }
        case .not(let part): return part.readsOnlyToMany(of: info)
        case .comparison(let comparison):
            return comparison.left.readsOnlyToMany(of: info) && comparison.right.readsOnlyToMany(of: info)
        }
    }

    /// The same predicate with the parts of every AND ordered cheapest first: own attributes,
    /// then to-one paths, then string patterns, then to-many paths, aggregates and subqueries.
    func orderedByCost() -> ObjectPredicate {
        switch self {
        case .and(let parts): return .and(parts.map { $0.orderedByCost() }.enumerated()
                                            .sorted { ($0.element.cost, $0.offset) < ($1.element.cost, $1.offset) }.map(\.element))
        case .or(let parts): return .or(parts.map { $0.orderedByCost() })
        case .not(let part): return .not(part.orderedByCost())
        default: return self
        }
    }

    var cost: Int {
        switch self {
        case .true, .false: return 0
        case .and(let parts), .or(let parts): return parts.reduce(0) { $0 + $1.cost }
        case .not(let part): return part.cost
        case .comparison(let comparison):
            let operatorCost = [.like, .matches, .contains, .endsWith, .wordsBeginWith].contains(comparison.op) ? 4 : 1
            let quantifier = comparison.modifier == .direct ? 0 : 40
            return operatorCost + quantifier + comparison.left.cost + comparison.right.cost
        }
    }
}

extension PredicateExpression {
    /// See `ObjectPredicate.readsOnlyToMany(of:)`. A subquery's own predicate is evaluated on
    /// the members, so only its collection counts.
    func readsOnlyToMany(of info: EntityInfo) -> Bool {
        switch self {
        case .constant, .object, .variable, .variablePath: return true
        case .evaluatedObject: return false  // compared as a whole object: not worth the special case
        case .keyPath(let path):
            guard let first = path.first, let relationship = info.relationship(named: first) else { return false }
            return relationship.kind != .toOne
        case .list(let items): return items.allSatisfy { $0.readsOnlyToMany(of: info) }
        case .aggregate(_, let collection, _): return collection.readsOnlyToMany(of: info)
        case .subquery(let collection, _, _): return collection.readsOnlyToMany(of: info)
        }
    }

    func replacingVariable(_ variable: String) -> PredicateExpression {
        switch self {
        case .variablePath(let name, let path) where name == variable: return .keyPath(path)
        case .variable(let name) where name == variable: return .evaluatedObject
        case .list(let items): return .list(items.map { $0.replacingVariable(variable) })
        case .aggregate(let function, let collection, let key): return .aggregate(function, collection: collection.replacingVariable(variable), key: key)
        case .subquery(let collection, let inner, let predicate):
            guard inner != variable else { return .subquery(collection: collection.replacingVariable(variable), variable: inner, predicate: predicate) }
            return .subquery(collection: collection.replacingVariable(variable), variable: inner, predicate: predicate.replacingVariable(variable))
        default: return self
        }
    }

    func mentions(_ variable: String) -> Bool {
        switch self {
        case .variablePath(let name, _), .variable(let name): return name == variable
        case .list(let items): return items.contains { $0.mentions(variable) }
        case .aggregate(_, let collection, _): return collection.mentions(variable)
        case .subquery(let collection, let inner, let predicate):
            return collection.mentions(variable) || (inner != variable && predicate.mentions(variable))
        default: return false
        }
    }

    var cost: Int {
        switch self {
        case .constant, .object, .variable, .evaluatedObject: return 0
        case .list(let items): return items.reduce(0) { $0 + $1.cost }
        case .keyPath(let path), .variablePath(_, let path): return path.count <= 1 ? 0 : 5 * (path.count - 1)
        case .aggregate(_, let collection, _): return 50 + collection.cost
        case .subquery(let collection, _, let predicate): return 100 + collection.cost + predicate.cost
        }
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
