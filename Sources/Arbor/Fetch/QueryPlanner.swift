import ArborEngine
import Foundation

/// How a fetch reads a store: a scan of the entity's rows, or key ranges of one index (then
/// the rows of the entries found). The whole predicate is still evaluated on every row read, so
/// an access path only has to cover the answer, never to be exact.
struct QueryPlan: CustomStringConvertible {
    enum Access {
        case scan
        case index(EntityInfo.Index, [KeyRange])
        /// An OR whose every branch has an index: the union of their searches.
        case union([QueryPlan])
    }

    let entity: EntityInfo
    let access: Access
    /// What the index ranges come from, for `description` (formatted only when asked).
    let usedConditions: [ConditionLabel]
    /// Conditions checked on each index entry's key before its row is read (position in the
    /// key → condition): a geo box's latitude filtered inside the (longitude, latitude) index.
    var keyFilters: [KeyFilter] = []
    /// What must still be evaluated on each row read: the whole predicate, or what is left
    /// after the conjuncts the index range and key filters answer exactly.
    var residual: Residual = .whole
    /// An ordered walk of the range that stops at the limit (`ORDER BY name LIMIT 5`).
    var ordering: String?

    enum Residual {
        case whole
        case part(ObjectPredicate?)
    }

    var description: String {
        switch access {
        case .scan: return "SCAN \(entity.rowTree)"
        case .union(let branches):
            return "MULTI-INDEX OR: " + branches.map(\.description).joined(separator: " ∪ ")
        case .index(let index, let ranges):
            return "SEARCH \(index.tree) (\(usedConditions.map(\.description).joined(separator: " AND ")))"
                + (ranges.count > 1 ? " × \(ranges.count) ranges" : "") + (ordering.map { " " + $0 } ?? "")
        }
    }
}

/// Positions of an index's columns, as bits: which columns a range answers exactly. Positions
/// from 64 on are never recorded (a key filter then repeats the range: slower, still right).
struct KeyPositions {
    private var bits: UInt64 = 0

    mutating func insert(_ position: Int) {
        if position >= 0 && position < 64 { bits |= 1 << UInt64(position) }
    }

    mutating func remove(_ position: Int) {
        if position >= 0 && position < 64 { bits &= ~(1 << UInt64(position)) }
    }

    func contains(_ position: Int) -> Bool {
        position >= 0 && position < 64 && bits & (1 << UInt64(position)) != 0
    }

    /// The same columns counted `count` columns further right (a key with more leading columns).
    func shifted(by count: Int) -> KeyPositions {
        var result = KeyPositions()
        if count >= 0 && count < 64 { result.bits = bits << UInt64(count) }
        return result
    }
}

/// The source of an index bound, formatted only for `explain` and logs.
enum ConditionLabel: CustomStringConvertible {
    case predicate(ObjectPredicate)
    case text(String)

    var description: String {
        switch self {
        case .predicate(let predicate): return PredicateFormatter.format(predicate)
        case .text(let text): return text
        }
    }
}

enum QueryPlanner {
    /// A condition on one stored column, usable as an index bound.
    enum Condition {
        case equal(TupleValue)
        case oneOf([TupleValue])
        case range(lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?)
        case prefix(String)
        /// `==[cd]` / `BEGINSWITH[cd]` on a string column: usable by normalized indexes only.
        case foldedEqual(String)
        case foldedPrefix(String)
    }

    static let maximumRanges = 256

    /// The column conditions of a predicate's conjuncts, each with its column's slot and its
    /// conjunct: a flat list, as a predicate states a handful (a dictionary of arrays cost
    /// three allocations for a geo box).
    struct ColumnConditions {
        private(set) var entries: [(slot: Int, condition: Condition, label: ConditionLabel)] = []

        init(capacity: Int = 0) { entries.reserveCapacity(capacity) }

        mutating func append(slot: Int, condition: Condition, label: ConditionLabel) {
            entries.append((slot, condition, label))
        }

        /// Whether some condition bounds the column at `slot`.
        func contains(slot: Int) -> Bool { entries.contains { $0.slot == slot } }
    }

    static func plan(_ predicate: ObjectPredicate?, for info: EntityInfo, store: PersistentStore) -> QueryPlan {
        guard let predicate else { return QueryPlan(entity: info, access: .scan, usedConditions: []) }
        // Each conjunct's column condition is worked out once and shared by every step below.
        let parts = conjuncts(predicate)
        let stated = statedConditions(parts, info: info, store: store)
        let conditions = columnConditions(parts, stated)
        var best: (score: Int, index: EntityInfo.Index, ranges: [KeyRange], used: [ConditionLabel], exact: KeyPositions)?
        for index in info.indexes {
            guard let (score, ranges, used, exact) = ranges(for: index, conditions) else { continue }
            if score > (best?.score ?? 0) { best = (score, index, ranges, used, exact) }
        }
        guard let best else {
            // No index for the whole: an OR among the conjuncts whose every branch has one is a
            // union of index searches (rows found twice are read once).
            for case .or(let branches) in parts {
                let plans = branches.map { QueryPlanner.plan($0, for: info, store: store) }
                if plans.allSatisfy({ if case .index = $0.access { return true } else { return false } }) {
                    return QueryPlan(entity: info, access: .union(plans), usedConditions: [])
                }
            }
            return QueryPlan(entity: info, access: .scan, usedConditions: [])
        }
        var plan = QueryPlan(entity: info, access: .index(best.index, best.ranges), usedConditions: best.used)
        plan.keyFilters = keyFilters(for: best.index, conditions, skipping: best.exact)
        if !best.index.isNormalized {
            plan.residual = .part(residual(parts, stated, answeredBy: best.index, info: info))
        }
        return plan
    }

    /// Properties that conditions of `predicate` could bound, for an index hint: equality
    /// columns first (in predicate order), then the first range column. Worked out only when a
    /// fetch read many more rows than matched.
    static func conditionKeys(_ predicate: ObjectPredicate?, for info: EntityInfo, store: PersistentStore) -> [String] {
        guard let predicate else { return [] }
        let parts = conjuncts(predicate)
        var equalities: [String] = [], ranges: [String] = []
        for (conjunct, condition) in zip(parts, statedConditions(parts, info: info, store: store)) {
            guard case .comparison(let comparison) = conjunct, let (_, condition) = condition,
                  let name = keyName(comparison) else { continue }
            switch condition {
            case .equal, .oneOf, .foldedEqual: if !equalities.contains(name) { equalities.append(name) }
            default: if !ranges.contains(name) { ranges.append(name) }
            }
        }
        return equalities + ranges.filter { !equalities.contains($0) }.prefix(1)
    }

    /// The column condition each of `parts` states (nil where it states none), in order.
    static func statedConditions(_ parts: [ObjectPredicate], info: EntityInfo, store: PersistentStore) -> [(Int, Condition)?] {
        parts.map { conjunct in
            guard case .comparison(let comparison) = conjunct else { return nil }
            return condition(comparison, info: info, store: store)
        }
    }

    /// The column conditions that conjuncts `parts` state (`stated`), by column slot, each
    /// labelled with its conjunct.
    static func columnConditions(_ parts: [ObjectPredicate], _ stated: [(Int, Condition)?]) -> ColumnConditions {
        var conditions = ColumnConditions(capacity: stated.count)
        for (conjunct, condition) in zip(parts, stated) {
            guard let (slot, condition) = condition else { continue }
            conditions.append(slot: slot, condition: condition, label: .predicate(conjunct))
        }
        return conditions
    }

    /// What rows must still evaluate when `index` serves the search: the conjuncts it does not
    /// answer exactly (nil: none).
    ///
    /// A conjunct is answered exactly when every entry that passes the range and key filters
    /// of `index` meets it, so rows need not evaluate it: a comparison of a numeric, date, bool
    /// or string column of the index with constants of the column's own kind, where tuple
    /// order and predicate order agree exactly. (Without options, strings compare by Unicode
    /// scalars: the order of their UTF-8 bytes, which the tuple encoding keeps; a scalar prefix
    /// is a byte prefix.)
    static func residual(_ parts: [ObjectPredicate], _ stated: [(Int, Condition)?], answeredBy index: EntityInfo.Index,
                         info: EntityInfo) -> ObjectPredicate? {
        var rest: [ObjectPredicate] = []
        for (conjunct, condition) in zip(parts, stated) {
            if let (slot, condition) = condition, case .comparison(let comparison) = conjunct,
               isExact(comparison, condition, info: info), index.slots.contains(slot) { continue }
            rest.append(conjunct)
        }
        return rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest))
    }

    /// The column condition `conjunct` states when tuple order decides it exactly as the
    /// predicate does (see `residual`): then checking the condition on a column's
    /// value, in a key or in a row, is evaluating the conjunct.
    static func exactCondition(_ conjunct: ObjectPredicate, info: EntityInfo, store: PersistentStore) -> (Int, Condition)? {
        guard case .comparison(let comparison) = conjunct,
              let (slot, condition) = condition(comparison, info: info, store: store),
              isExact(comparison, condition, info: info) else { return nil }
        return (slot, condition)
    }

    /// Whether `condition`, stated by `comparison`, decides it exactly (see `exactCondition`).
    static func isExact(_ comparison: Comparison, _ condition: Condition, info: EntityInfo) -> Bool {
        guard comparison.options.isEmpty, let attribute = info.attribute(named: keyName(comparison) ?? "") else { return false }
        switch condition {
        case .equal, .oneOf, .range, .prefix: break
        default: return false
        }
        func exact(_ expression: PredicateExpression) -> Bool {
            switch (expression, attribute.description.type) {
            case (.constant(.int), .int16), (.constant(.int), .int32), (.constant(.int), .int64): return true
            case (.constant(.double(let v)), .double): return !v.isNaN
            case (.constant(.int(let v)), .double): return v.magnitude <= 1 << 53
            case (.constant(.date), .date), (.constant(.bool), .bool), (.constant(.string), .string): return true
            case (.list(let items), _): return !items.isEmpty && items.allSatisfy(exact)
            default: return false
            }
        }
        return isKeyPath(comparison.left) ? exact(comparison.right) : exact(comparison.left)
    }

    static func keyName(_ comparison: Comparison) -> String? {
        if case .keyPath(let path) = comparison.left, path.count == 1 { return path[0] }
        if case .keyPath(let path) = comparison.right, path.count == 1 { return path[0] }
        return nil
    }

    /// The conditions an index entry's key can answer by itself.
    static func keyFilters(for index: EntityInfo.Index, _ conditions: ColumnConditions,
                           skipping exact: KeyPositions = KeyPositions()) -> [KeyFilter] {
        var filters: [KeyFilter] = []
        for (position, slot) in index.slots.enumerated() where !exact.contains(position) {
            for entry in conditions.entries where entry.slot == slot {
                let condition = entry.condition
                switch condition {
                case .foldedEqual(let value) where index.isNormalized: filters.append(KeyFilter(position: position, condition: .equal(.string(value))))
                case .foldedPrefix(let value) where index.isNormalized: filters.append(KeyFilter(position: position, condition: .prefix(value)))
                case .foldedEqual, .foldedPrefix: continue
                default: if !index.isNormalized { filters.append(KeyFilter(position: position, condition: condition)) }
                }
            }
        }
        return filters
    }

    /// Whether a value lies within optional (bound, inclusive) limits, given its order
    /// relative to a bound (negative: below it).
    @inline(__always)
    static func within<Bound>(_ lower: (Bound, Bool)?, _ upper: (Bound, Bool)?, order: (Bound) -> Int) -> Bool {
        if let (bound, inclusive) = lower {
            let relation = order(bound)
            if relation < 0 || (relation == 0 && !inclusive) { return false }
        }
        if let (bound, inclusive) = upper {
            let relation = order(bound)
            if relation > 0 || (relation == 0 && !inclusive) { return false }
        }
        return true
    }

    /// Whether a key component meets a condition (tuple order is the index order).
    static func matches(_ value: TupleValue, _ condition: Condition) -> Bool {
        switch condition {
        case .equal(let expected): return TupleKey.compare(value, expected) == 0
        case .oneOf(let values): return values.contains { TupleKey.compare(value, $0) == 0 }
        case .range(let lower, let upper):
            if isNull(value) { return false }
            return within(lower, upper) { TupleKey.compare(value, $0) }
        case .prefix(let prefix):
            guard case .string(let text) = value else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case .foldedEqual, .foldedPrefix: return true
        }
    }

    static func conjuncts(_ predicate: ObjectPredicate) -> [ObjectPredicate] {
        guard case .and(let parts) = predicate else { return [predicate] }
        // The usual AND of comparisons needs no flattening (and no new array).
        if !parts.contains(where: { if case .and = $0 { return true } else { return false } }) { return parts }
        return parts.flatMap(conjuncts)
    }

    /// The column condition a comparison states, when it compares a stored column of the
    /// entity with constants.
    static func condition(_ comparison: Comparison, info: EntityInfo, store: PersistentStore) -> (Int, Condition)? {
        guard comparison.modifier == .direct else { return nil }
        var op = comparison.op
        var keyExpression = comparison.left, constant = comparison.right
        if case .keyPath = comparison.right, !isKeyPath(comparison.left) {
            swap(&keyExpression, &constant)
            switch op {
            case .less: op = .greater
            case .lessOrEqual: op = .greaterOrEqual
            case .greater: op = .less
            case .greaterOrEqual: op = .lessOrEqual
            case .equal, .notEqual: break
            default: return nil
            }
        }
        guard case .keyPath(let path) = keyExpression, path.count == 1 else { return nil }
        let slot: Int
        let type: AttributeType?
        var destinationRoot: UInt16?
        if let attribute = info.attribute(named: path[0]) {
            slot = attribute.slot
            type = attribute.description.type
        } else if let relationship = info.relationship(named: path[0]), relationship.kind == .toOne {
            slot = relationship.slot
            type = nil
            destinationRoot = store.model.info(named: relationship.destinationRoot)?.code
        } else {
            return nil
        }
        func tuple(_ expression: PredicateExpression) -> TupleValue? {
            switch expression {
            case .constant(let value): return type.flatMap { tupleValue(value, for: $0, keys: store.keys) }
            case .object(let id):
                guard type == nil, id.storeIdentifier == store.identifier, id.info.rootCode == destinationRoot else { return nil }
                return store.keys.integer(id.primaryKey)
            default: return nil
            }
        }
        let caseFree = comparison.options.isEmpty || type == nil
        if type == .string, comparison.options == IndexKeys.normalization, case .constant(.string(let text)) = constant {
            switch op {
            case .equal: return (slot, .foldedEqual(ValueOrder.fold(text, IndexKeys.normalization)))
            case .beginsWith: return (slot, .foldedPrefix(ValueOrder.fold(text, IndexKeys.normalization)))
            default: return nil
            }
        }
        switch op {
        case .equal:
            guard caseFree, let value = tuple(constant) else { return nil }
            return (slot, .equal(value))
        case .in:
            guard caseFree, case .list(let items) = constant, !items.isEmpty, items.count <= maximumRanges else { return nil }
            let values = items.compactMap(tuple)
            return values.count == items.count ? (slot, .oneOf(values)) : nil
        case .less, .lessOrEqual:
            guard caseFree, let value = tuple(constant), !isNull(value) else { return nil }
            return (slot, .range(lower: nil, upper: (value, op == .lessOrEqual)))
        case .greater, .greaterOrEqual:
            guard caseFree, let value = tuple(constant), !isNull(value) else { return nil }
            return (slot, .range(lower: (value, op == .greaterOrEqual), upper: nil))
        case .between:
            guard caseFree, case .list(let bounds) = constant, bounds.count == 2,
                  let lower = tuple(bounds[0]), let upper = tuple(bounds[1]), !isNull(lower), !isNull(upper) else { return nil }
            return (slot, .range(lower: (lower, true), upper: (upper, true)))
        case .beginsWith:
            guard comparison.options.isEmpty, type == .string, case .constant(.string(let prefix)) = constant else { return nil }
            return (slot, .prefix(prefix))
        default:
            return nil
        }
    }

    static func isKeyPath(_ expression: PredicateExpression) -> Bool {
        if case .keyPath = expression { return true } else { return false }
    }

    static func isNull(_ value: TupleValue) -> Bool { if case .null = value { return true } else { return false } }

    /// The tuple component an attribute of `type` stores for `value` in a store with `keys`
    /// (see IndexKeys.tupleValue); nil when the value cannot be stored in that attribute exactly.
    static func tupleValue(_ value: AttributeValue, for type: AttributeType, keys: IndexKeys) -> TupleValue? {
        switch (value, type) {
        case (.null, _): return .null
        case (.int(let v), .int16), (.int(let v), .int32), (.int(let v), .int64): return keys.integer(v)
        case (.double(let v), .int16), (.double(let v), .int32), (.double(let v), .int64):
            guard let exact = Int64(exactly: v) else { return nil }
            return keys.integer(exact)
        case (.int(let v), .double), (.int(let v), .float): return .double(Double(v))
        case (.double(let v), .double), (.double(let v), .float): return v.isNaN ? nil : .double(v + 0)
        case (.float(let v), .double), (.float(let v), .float): return v.isNaN ? nil : .double(Double(v) + 0)
        case (.bool(let v), .bool): return .bool(v)
        case (.string(let v), .string): return .string(v)
        case (.url(let v), .url): return .string(v.absoluteString)
        case (.date(let v), .date): return .date(v.timeIntervalSinceReferenceDate + 0)
        case (.data(let v), .data): return .bytes(Array(v))
        case (.uuid(let v), .uuid): return .uuid(withUnsafeBytes(of: v.uuid) { Array($0) })
        default: return nil
        }
    }

    /// Key ranges of `index` that cover the rows meeting `conditions`, with a score (higher is
    /// more selective); nil when the index's first column has no condition.
    /// Also returns the key positions whose every condition the ranges encode exactly (a
    /// key filter there would only repeat the range).
    static func ranges(for index: EntityInfo.Index, _ conditions: ColumnConditions)
        -> (Int, [KeyRange], [ConditionLabel], exact: KeyPositions)? {
        // Most indexes of an entity are not led by a bounded column: ruled out before any work.
        guard let first = index.slots.first, conditions.contains(slot: first) else { return nil }
        var prefixes: [[TupleValue]] = [[]]
        var score = 0
        var used: [ConditionLabel] = []
        var exact = KeyPositions()
        for (position, slot) in index.slots.enumerated() {
            // The column's conditions, and those this index can serve (`usable`); an equality
            // or a list of values serves before any range.
            var all = 0, usable = 0
            var equal: (value: TupleValue, label: ConditionLabel)?
            var oneOf: (values: [TupleValue], label: ConditionLabel)?
            for entry in conditions.entries where entry.slot == slot {
                all += 1
                guard let option = Self.usable(entry.condition, by: index) else { continue }
                usable += 1
                switch option {
                case .equal(let value): if equal == nil { equal = (value, entry.label) }
                case .oneOf(let values): if oneOf == nil { oneOf = (values, entry.label) }
                default: break
                }
            }
            guard usable > 0 else { break }
            if let (value, label) = equal {
                if index.isForeignKey, isNull(value) { return nil }  // nil references have no entries
                for position in prefixes.indices { prefixes[position].append(value) }
                score += 4
                used.append(label)
                if all == 1 { exact.insert(position) }
                continue
            }
            if let (values, label) = oneOf, prefixes.count * values.count <= maximumRanges {
                if index.isForeignKey, values.contains(where: isNull) { return nil }
                prefixes = prefixes.flatMap { prefix in values.map { prefix + [$0] } }
                score += 3
                used.append(label)
                if all == 1 { exact.insert(position) }
                continue
            }
            // A range or prefix on this column ends the usable part of the index.
            var lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?
            var stringPrefix: String?
            var lowers = 0, uppers = 0, rangeCount = 0, prefixCount = 0
            for entry in conditions.entries where entry.slot == slot {
                switch Self.usable(entry.condition, by: index) {
                case .range(let low, let high):
                    if let low { lower = low; lowers += 1 }
                    if let high { upper = high; uppers += 1 }
                    rangeCount += 1
                    used.append(entry.label)
                case .prefix(let value):
                    stringPrefix = value
                    prefixCount += 1
                    used.append(entry.label)
                default: break
                }
            }
            // Every condition of the column is encoded in the range, none replaced by another
            // (`x >= a AND x <= b`, as a departure window states it; not `x > a AND x > b`):
            // the range answers them exactly, and no key filter need repeat them.
            let encodesAll = usable == all && rangeCount + prefixCount == all
                && lowers <= 1 && uppers <= 1 && (prefixCount == 0 || all == 1)
            if encodesAll { exact.insert(position) }
            if let stringPrefix {
                let ranges = prefixes.map { KeyRange.prefix(TupleKey.encode($0) + encodedStringPrefix(stringPrefix)) }
                return (score + 2, ranges, used, exact)
            }
            if lower != nil || upper != nil {
                return (score + 2, prefixes.map { rangeFor(prefix: $0, lower: lower, upper: upper) }, used, exact)
            }
            exact.remove(position)
            break
        }
        guard score > 0 else { return nil }
        return (score, prefixes.map { KeyRange.prefix(TupleKey.encode($0)) }, used, exact)
    }

    /// `condition` as `index` can serve it, or nil: a normalized index serves folded
    /// conditions on its string columns (and raw ones on other columns); a plain index serves
    /// raw conditions only.
    @inline(__always)
    static func usable(_ condition: Condition, by index: EntityInfo.Index) -> Condition? {
        switch condition {
        case .foldedEqual(let value): return index.isNormalized ? .equal(.string(value)) : nil
        case .foldedPrefix(let value): return index.isNormalized ? .prefix(value) : nil
        case .equal(.string), .oneOf, .range, .prefix: return index.isNormalized ? nil : condition
        default: return condition
        }
    }

    /// The encoding of a string component without its terminator: every key whose string
    /// starts with `prefix` starts with these bytes.
    static func encodedStringPrefix(_ prefix: String) -> [UInt8] {
        Array(TupleKey.encode([.string(prefix)]).dropLast(2))
    }

    static func rangeFor(prefix: [TupleValue], lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?) -> KeyRange {
        let base = TupleKey.encode(prefix)
        // The tuple encoding is the concatenation of its components'.
        func extended(_ value: TupleValue) -> [UInt8] {
            var key = base
            key.reserveCapacity(base.count + 16)  // one allocation, not growth from empty
            TupleKey.append(value, descending: false, to: &key)
            return key
        }
        var range = KeyRange()
        if let (value, inclusive) = lower {
            let key = extended(value)
            // Keys extend the tuple with more components: "> v" starts after every extension of v.
            range.lower = inclusive ? KeyRange.Bound(key, inclusive: true) : successor(key).map { KeyRange.Bound($0, inclusive: true) }
            if !inclusive, range.lower == nil { range.lower = KeyRange.Bound(key, inclusive: false) }
        } else if !base.isEmpty {
            range.lower = KeyRange.Bound(base, inclusive: true)
        }
        if let (value, inclusive) = upper {
            let key = extended(value)
            range.upper = inclusive ? successor(key).map { KeyRange.Bound($0, inclusive: false) } : KeyRange.Bound(key, inclusive: false)
        } else if !base.isEmpty {
            range.upper = successor(base).map { KeyRange.Bound($0, inclusive: false) }
        }
        return range
    }

    /// The smallest byte string greater than every string starting with `bytes`.
    static func successor(_ bytes: [UInt8]) -> [UInt8]? {
        var result = bytes
        while let last = result.last {
            if last < 0xFF {
                result[result.count - 1] = last + 1
                return result
            }
            result.removeLast()
        }
        return nil
    }
}
