import ArborEngine

/// Which conjuncts a search of one index encodes in its key ranges, and where: chosen from the
/// kinds of the column conditions alone, before any value is encoded.
///
/// The leading columns take an equality each (one more key component for every range) or an
/// `IN` list (the ranges multiply: lists are sorted, so the products stay in key order, and
/// their ranges are disjoint since no component's encoding is a prefix of another's); the
/// column after them may take a range or a string prefix, which ends the usable part of the
/// index. A prepared request keeps the layout of its kept index (see `IndexPlanRecipe`):
/// bindings whose conditions have the same kinds give it again, so only `ranges(of:_:)` runs.
struct IndexLayout: Sendable {
    /// The conjunct (position in the predicate's parts) whose equality or list fixes each
    /// leading column, in key order.
    private(set) var leading: [Int] = []
    /// The conjuncts behind the range on the column after the leading ones: its lower bound,
    /// its upper bound, or its string prefix (which then replaces the bounds).
    private(set) var lower: Int?, upper: Int?, prefix: Int?
    /// Every conjunct the ranges come from, in the order `explain` names them.
    private(set) var used: [Int] = []
    /// How selective the search is: 4 for each equality, 3 for each list, 2 for a range.
    private(set) var score = 0
    /// The key positions whose every condition the ranges encode exactly (a key filter there
    /// would only repeat the range).
    private(set) var exact = KeyPositions()

    /// The layout of a search of `index` for `conditions`; nil when the index's first column
    /// has no condition it can serve (or only a list too long to search point by point).
    init?(_ index: EntityInfo.Index, _ conditions: QueryPlanner.ColumnConditions) {
        // Most indexes of an entity are not led by a bounded column: ruled out before any work.
        // A text index holds terms, not values (see `textSearch`).
        guard !index.isText, let first = index.slots.first, conditions.contains(slot: first) else { return nil }
        let entries = conditions.entries
        var searches = 1  // the ranges the leading columns make
        for (position, slot) in index.slots.enumerated() {
            // The column's conditions, and those this index can serve (`usable`); an equality
            // or a list of values serves before any range.
            var all = 0, usable = 0
            var equal: Int?, oneOf: (part: Int, count: Int)?
            for e in entries.indices where entries[e].slot == slot {
                all += 1
                guard let option = QueryPlanner.usable(entries[e].condition, by: index) else { continue }
                usable += 1
                switch option {
                case .equal: if equal == nil { equal = entries[e].part }
                case .oneOf(let values): if oneOf == nil { oneOf = (entries[e].part, values.count) }
                default: break
                }
            }
            guard usable > 0 else { break }
            if let part = equal {
                take(part, score: 4, position: position, onlyCondition: all == 1)
                continue
            }
            if let (part, count) = oneOf {
                let (product, overflow) = searches.multipliedReportingOverflow(by: count)
                if !overflow, product <= QueryPlanner.maximumRanges {
                    searches = product
                    take(part, score: 3, position: position, onlyCondition: all == 1)
                    continue
                }
            }
            var lowers = 0, uppers = 0, ranges = 0, prefixes = 0
            for e in entries.indices where entries[e].slot == slot {
                switch QueryPlanner.usable(entries[e].condition, by: index) {
                case .range(let low, let high):
                    if low != nil { lower = entries[e].part; lowers += 1 }
                    if high != nil { upper = entries[e].part; uppers += 1 }
                    ranges += 1
                    used.append(entries[e].part)
                case .prefix:
                    prefix = entries[e].part
                    prefixes += 1
                    used.append(entries[e].part)
                default: break
                }
            }
            // Every condition of the column is encoded in the range, none replaced by another
            // (`x >= a AND x <= b`, as a departure window states it; not `x > a AND x > b`):
            // the range answers them exactly, and no key filter need repeat them.
            if usable == all && ranges + prefixes == all && lowers <= 1 && uppers <= 1 && (prefixes == 0 || all == 1) {
                exact.insert(position)
            }
            if prefix != nil || lower != nil || upper != nil { score += 2 }
            break
        }
        guard score > 0 else { return nil }
    }

    /// The key prefixes before any leading column: one, empty.
    private static let noPrefix: [[UInt8]] = [[]]

    private mutating func take(_ part: Int, score: Int, position: Int, onlyCondition: Bool) {
        leading.append(part)
        used.append(part)
        self.score += score
        if onlyCondition { exact.insert(position) }
    }

    /// The key ranges of `index` this layout gives for the conditions `stated` (by conjunct),
    /// in key order; nil when the values rule the search out: a nil value for a foreign key
    /// (nil references have no entries), a list making more than `maximumRanges` ranges.
    /// - Complexity: O(ranges × key size).
    func ranges(of index: EntityInfo.Index, _ stated: [QueryPlanner.StatedCondition?]) -> [KeyRange]? {
        // Shared until a leading column extends it: a search with none (a geo box, a name
        // prefix) allocates no list of prefixes.
        var prefixes = Self.noPrefix
        for part in leading {
            guard let condition = stated[part].flatMap({ QueryPlanner.usable($0.condition, by: index) }) else { return nil }
            switch condition {
            case .equal(let value):
                if index.isForeignKey, QueryPlanner.isNull(value) { return nil }
                let component = TupleKey.encode(component: value)
                for position in prefixes.indices { prefixes[position].append(contentsOf: component) }
            case .oneOf(let values):
                if index.isForeignKey, values.values.contains(where: QueryPlanner.isNull) { return nil }
                let (count, overflow) = prefixes.count.multipliedReportingOverflow(by: values.count)
                guard !overflow, count <= QueryPlanner.maximumRanges else { return nil }
                var product: [[UInt8]] = []
                product.reserveCapacity(count)
                for prefix in prefixes {
                    for component in values.encoded { product.append(prefix + component) }
                }
                prefixes = product
            default:
                return nil
            }
        }
        if let prefix {
            guard case .prefix(let text)? = stated[prefix].flatMap({ QueryPlanner.usable($0.condition, by: index) }) else { return nil }
            let encoded = QueryPlanner.encodedStringPrefix(text)
            return prefixes.map { KeyRange.prefix($0 + encoded) }
        }
        if lower != nil || upper != nil {
            guard let low = bound(lower, lower: true, index, stated), let high = bound(upper, lower: false, index, stated) else { return nil }
            return prefixes.map { QueryPlanner.rangeFor(prefix: $0, lower: low, upper: high) }
        }
        return prefixes.map { KeyRange.prefix($0) }
    }

    /// The lower (or upper) bound the range condition of conjunct `part` states; `.some(nil)`
    /// without a conjunct, nil when the conjunct states no such bound.
    private func bound(_ part: Int?, lower: Bool, _ index: EntityInfo.Index,
                       _ stated: [QueryPlanner.StatedCondition?]) -> (TupleValue, Bool)?? {
        guard let part else { return .some(nil) }
        guard case .range(let low, let high)? = stated[part].flatMap({ QueryPlanner.usable($0.condition, by: index) }),
              let value = lower ? low : high else { return nil }
        return .some(value)
    }
}
