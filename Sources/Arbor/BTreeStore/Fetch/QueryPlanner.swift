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
        /// The rows the predicate names by ID (`SELF IN %@`), looked up in key order.
        case rows(QueryPlanner.RowKeys)
        /// The rows related to what an index of another entity finds (`stop.stopID IN %@`).
        case related(QueryPlanner.RelatedSearch)
        /// The rows a words or substrings index finds for every probe (`name WORDSBEGINWITH[cd] "wider berl"`).
        case text(QueryPlanner.TextSearch)
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
    /// An ordered walk of the index that stops at the limit (see `QueryPlanner+Order`).
    var ordering: OrderedWalk?
    /// Without a sort: the walk stops once this many rows matched.
    var limit: Int?
    /// SUBQUERY existence conditions answered by the store per candidate (not in `residual`).
    var memberChecks: [MemberCheck] = []
    /// The index was the one a prepared request's earlier binding chose (not weighed again).
    var reusedChoice = false
    /// The values of the variables `usedConditions` are written with, substituted when they
    /// are formatted: a prepared plan then shares its labels with every binding instead of
    /// making them anew (see `IndexPlanRecipe`).
    var labelBindings: TemplateBindings?

    /// Index entries arrive in sort order (the sort column at `position` of the key): the walk
    /// stops once `count` rows matched and the rows tied with the last one are in.
    struct OrderedWalk {
        let ascending: Bool
        let count: Int
        let position: Int
        /// Shown after the search in `description` (nil when the conditions already say it).
        let label: String?
    }

    enum Residual {
        case whole
        case part(ObjectPredicate?)
    }

    var description: String {
        let joins = memberChecks.map { " THEN " + $0.description }.joined()
        return accessDescription + joins
    }

    /// The descriptions of `usedConditions`, their variables replaced by `labelBindings`.
    private var labels: [String] { usedConditions.map { $0.description(substituting: labelBindings) } }

    /// The access path alone, in `description`.
    private var accessDescription: String {
        switch access {
        case .scan:
            // Conditions only when a text search gave way to the scan (see `BTreeStore.textCandidates`).
            return "SCAN \(entity.rowTree)" + (usedConditions.isEmpty ? "" : " (\(labels.joined(separator: "; ")))")
        case .text(let search):
            return "SEARCH \(search.index.tree) (\(labels.joined(separator: " AND ")))"
                + (search.probes.count > 1 ? " × \(search.probes.count) prefixes" : "")
        case .union(let branches):
            return "MULTI-INDEX OR: " + branches.map(\.description).joined(separator: " ∪ ")
        case .index(let index, let ranges):
            return "SEARCH \(index.tree) (\(labels.joined(separator: " AND ")))"
                + (ranges.count > 1 ? " × \(ranges.count) ranges" : "") + (ordering?.label.map { " " + $0 } ?? "")
                + (reusedChoice ? " (prepared: index kept)" : "")
        case .rows(let keys):
            return "SEARCH \(entity.rowTree) (\(labels.joined(separator: " AND ")))"
                + (keys.count == 1 ? "" : " × \(keys.count) keys")
        case .related(let search):
            return "\(search.inner.description) THEN \(search.link)"
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
    /// A conjunct written with variables, and their values (substituted when formatted).
    case bound(ObjectPredicate, TemplateBindings)
    case text(String)

    /// `conjunct` as a label, with its variables' values when `bindings` has them.
    static func conjunct(_ conjunct: ObjectPredicate, _ bindings: TemplateBindings?) -> ConditionLabel {
        bindings.map { .bound(conjunct, $0) } ?? .predicate(conjunct)
    }

    var description: String { description(substituting: nil) }

    /// The label, a predicate written with variables given the values of `bindings` when it
    /// carries none of its own.
    func description(substituting bindings: TemplateBindings?) -> String {
        switch self {
        case .predicate(let predicate): return PredicateFormatter.summary(bindings.map { predicate.substituting($0) } ?? predicate)
        case .bound(let predicate, let bindings): return PredicateFormatter.summary(predicate.substituting(bindings))
        case .text(let text): return text
        }
    }
}

enum QueryPlanner {
    /// The condition a conjunct states on one stored column: the column's slot, and whether
    /// checking the condition decides the conjunct exactly (see `residual`).
    struct StatedCondition {
        let slot: Int
        let condition: Condition
        let isExact: Bool

        init(_ slot: Int, _ condition: Condition, isExact: Bool) {
            self.slot = slot
            self.condition = condition
            self.isExact = isExact
        }
    }

    /// A condition on one stored column, usable as an index bound.
    enum Condition {
        case equal(TupleValue)
        /// `IN` a list of constants: the list's components, sorted and unique.
        case oneOf(ComponentSet)
        case range(lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?)
        case prefix(String)
        /// `==[cd]` / `BEGINSWITH[cd]` on a string column: usable by normalized indexes only.
        case foldedEqual(String)
        case foldedPrefix(String)
    }

    /// Key ranges one search may take at most: equalities and IN lists on several leading
    /// columns multiply, and past this many the next column is left to a key filter.
    static let maximumRanges = 1 << 20

    /// The column conditions of a predicate's conjuncts, each with its column's slot and its
    /// conjunct: a flat list, as a predicate states a handful (a dictionary of arrays cost
    /// three allocations for a geo box).
    ///
    /// An entry names its conjunct by position in `parts`: its label is made only when a search
    /// uses it (copying entries then copies no predicate).
    struct ColumnConditions {
        private(set) var entries: [(slot: Int, condition: Condition, part: Int)] = []
        /// The conjuncts the conditions come from.
        private let parts: [ObjectPredicate]
        /// The condition each of `parts` states (nil where it states none), by position.
        let stated: [StatedCondition?]
        /// The values of a prepared request's variables, when `parts` are written with them.
        private let bindings: TemplateBindings?

        init(parts: [ObjectPredicate], stated: [StatedCondition?], bindings: TemplateBindings? = nil) {
            self.parts = parts
            self.stated = stated
            self.bindings = bindings
            entries.reserveCapacity(parts.count)
        }

        mutating func append(slot: Int, condition: Condition, part: Int) {
            entries.append((slot, condition, part))
        }

        /// Whether some condition bounds the column at `slot`.
        func contains(slot: Int) -> Bool { entries.contains { $0.slot == slot } }

        /// The label of the conjunct at `part`, for `explain`.
        func label(_ part: Int) -> ConditionLabel { .conjunct(parts[part], bindings) }
    }

    /// The plan for `predicate` on `info`: its access path, then the member checks the
    /// store answers (see `MemberCheck`); what is left is evaluated on each row read.
    static func plan(_ predicate: ObjectPredicate?, for info: EntityInfo, store: BTreeStore) -> QueryPlan {
        var plan = accessPath(predicate, for: info, store: store)
        separateMemberChecks(&plan, predicate: predicate, store: store)
        return plan
    }

    /// The access path for `predicate`: the index (or rows, related search, text search,
    /// union of index searches) that covers it best, or a scan.
    static func accessPath(_ predicate: ObjectPredicate?, for info: EntityInfo, store: BTreeStore) -> QueryPlan {
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
        // Rows named by ID are the narrowest search there is.
        if let (keys, position) = selfKeys(parts, info: info, store: store) {
            var plan = QueryPlan(entity: info, access: .rows(keys), usedConditions: [.predicate(parts[position])])
            plan.residual = .part(remainder(parts, without: position))
            return plan
        }
        // A text index serves what no values index narrows (a folded index answers
        // `BEGINSWITH[cd]` in one range, where substrings would intersect several).
        if best == nil, let (search, used, positions) = textSearch(parts, info: info) {
            var plan = QueryPlan(entity: info, access: .text(search), usedConditions: used)
            if search.isExact {
                let rest = parts.indices.filter { !positions.contains($0) }.map { parts[$0] }
                plan.residual = .part(rest.isEmpty ? nil : rest.count == 1 ? rest[0] : .and(rest))
            }
            return plan
        }
        // A search of a related entity's index, then the rows it leads to, when no index of
        // the entity narrows as much.
        if (best?.score ?? 0) < 4, let (search, exact, position, score) = relatedSearch(parts, info: info, store: store),
           score > best?.score ?? 0 {
            var plan = QueryPlan(entity: info, access: .related(search), usedConditions: [.predicate(parts[position])])
            plan.residual = .part(exact ? remainder(parts, without: position) : predicate)
            return plan
        }
        guard let best else {
            // An OR among the conjuncts whose every branch has an index is a union of index
            // searches (rows found twice are read once).
            for case .or(let branches) in parts {
                let plans = branches.map { accessPath($0, for: info, store: store) }
                if plans.allSatisfy({ if case .index = $0.access { return true } else { return false } }) {
                    return QueryPlan(entity: info, access: .union(plans), usedConditions: [])
                }
            }
            return QueryPlan(entity: info, access: .scan, usedConditions: [])
        }
        return indexPlan(best.index, best.ranges, used: best.used, exact: best.exact, parts: parts, stated: stated,
                         conditions: conditions, info: info)
    }

    /// The search of `ranges` of `index`: the key filters for the conditions the ranges leave,
    /// and the residual of the conjuncts the index does not answer.
    /// `bindings`: the values of a prepared request's variables, when `parts` are written with them.
    static func indexPlan(_ index: EntityInfo.Index, _ ranges: [KeyRange], used: [ConditionLabel], exact: KeyPositions,
                          parts: [ObjectPredicate], stated: [StatedCondition?], conditions: ColumnConditions, info: EntityInfo,
                          bindings: TemplateBindings? = nil) -> QueryPlan {
        var plan = QueryPlan(entity: info, access: .index(index, ranges), usedConditions: used)
        plan.keyFilters = keyFilters(for: index, conditions, skipping: exact)
        if !index.isNormalized {
            plan.residual = .part(residual(parts, stated, answeredBy: index, bindings: bindings))
        }
        return plan
    }

    /// Properties that conditions of `predicate` could bound, for an index hint: equality
    /// columns first (in predicate order), then the first range column. Worked out only when a
    /// fetch read many more rows than matched.
    static func conditionKeys(_ predicate: ObjectPredicate?, for info: EntityInfo, store: BTreeStore) -> [String] {
        guard let predicate else { return [] }
        let parts = conjuncts(predicate)
        var equalities: [String] = [], ranges: [String] = []
        for (conjunct, stated) in zip(parts, statedConditions(parts, info: info, store: store)) {
            guard case .comparison(let comparison) = conjunct, let stated, let name = keyName(comparison) else { continue }
            switch stated.condition {
            case .equal, .oneOf, .foldedEqual: if !equalities.contains(name) { equalities.append(name) }
            default: if !ranges.contains(name) { ranges.append(name) }
            }
        }
        return equalities + ranges.filter { !equalities.contains($0) }.prefix(1)
    }

    /// The column condition each of `parts` states (nil where it states none), in order
    /// (`bindings`: the values of a prepared request's variables, when `parts` are written with them).
    static func statedConditions(_ parts: [ObjectPredicate], info: EntityInfo, store: BTreeStore,
                                 bindings: TemplateBindings? = nil) -> [StatedCondition?] {
        parts.map { conjunct in
            guard case .comparison(let comparison) = conjunct else { return nil }
            return statedCondition(comparison, info: info, store: store, bindings: bindings)
        }
    }

    /// The column conditions that conjuncts `parts` state (`stated`), by column slot, each
    /// labelled with its conjunct.
    static func columnConditions(_ parts: [ObjectPredicate], _ stated: [StatedCondition?],
                                 bindings: TemplateBindings? = nil) -> ColumnConditions {
        var conditions = ColumnConditions(parts: parts, stated: stated, bindings: bindings)
        for (position, condition) in stated.enumerated() {
            guard let condition else { continue }
            conditions.append(slot: condition.slot, condition: condition.condition, part: position)
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
    /// With `bindings` (the values of a prepared request's variables), only the conjuncts left
    /// are bound.
    static func residual(_ parts: [ObjectPredicate], _ stated: [StatedCondition?], answeredBy index: EntityInfo.Index,
                         bindings: TemplateBindings? = nil) -> ObjectPredicate? {
        var rest: [ObjectPredicate] = []
        for position in parts.indices {
            if let stated = stated[position], stated.isExact, index.slots.contains(stated.slot) { continue }
            rest.append(bindings.map { parts[position].substituting($0) } ?? parts[position])
        }
        return rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest))
    }

    /// The conditions an index entry's key can answer by itself.
    static func keyFilters(for index: EntityInfo.Index, _ conditions: ColumnConditions,
                           skipping exact: KeyPositions = KeyPositions()) -> [KeyFilter] {
        keyFilterSources(for: index, conditions, skipping: exact).compactMap { source in
            conditions.stated[source.part].flatMap { keyFilter(at: source.position, $0.condition, of: index) }
        }
    }

    /// Where the key filters of `index` come from: the key position and conjunct of each, in
    /// key order (those `exact` positions repeat none).
    static func keyFilterSources(for index: EntityInfo.Index, _ conditions: ColumnConditions,
                                 skipping exact: KeyPositions = KeyPositions()) -> [(position: Int, part: Int)] {
        var sources: [(position: Int, part: Int)] = []
        let entries = conditions.entries
        for (position, slot) in index.slots.enumerated() where !exact.contains(position) {
            for e in entries.indices where entries[e].slot == slot && filterCondition(entries[e].condition, of: index) != nil {
                sources.append((position, entries[e].part))
            }
        }
        return sources
    }

    /// The filter of key position `position` of `index` for `condition`, when the index's keys
    /// can answer it (a normalized index answers folded conditions, a plain one raw conditions).
    static func keyFilter(at position: Int, _ condition: Condition, of index: EntityInfo.Index) -> KeyFilter? {
        filterCondition(condition, of: index).map { KeyFilter(position: position, condition: $0) }
    }

    /// `condition` as a key of `index` is checked for it; nil when its keys cannot answer it.
    private static func filterCondition(_ condition: Condition, of index: EntityInfo.Index) -> Condition? {
        switch condition {
        case .foldedEqual(let value): return index.isNormalized ? .equal(.string(value)) : nil
        case .foldedPrefix(let value): return index.isNormalized ? .prefix(value) : nil
        default: return index.isNormalized ? nil : condition
        }
    }

    static func conjuncts(_ predicate: ObjectPredicate) -> [ObjectPredicate] {
        guard case .and(let parts) = predicate else { return [predicate] }
        // The usual AND of comparisons needs no flattening (and no new array).
        if !parts.contains(where: { if case .and = $0 { return true } else { return false } }) { return parts }
        return parts.flatMap(conjuncts)
    }
}
