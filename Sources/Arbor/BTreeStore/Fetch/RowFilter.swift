import ArborEngine

/// A conjunction of conditions on a row's own attributes, checked on the row's encoded bytes:
/// only the columns it names are decoded, and no predicate is walked per row. Made only when
/// every conjunct is a comparison that tuple order answers exactly (as an index range would),
/// so its answer is the evaluator's. Members of a SUBQUERY read through a foreign-key index
/// are checked this way. A class: every candidate's probe takes it (a copy is one retain).
final class RowFilter {
    /// The entity whose column layout the slots follow; rows of other entities are not filtered.
    let entityCode: UInt16
    /// Column slots, ascending (repeated for several conditions on one column), and the
    /// condition on each.
    private let slots: [Int]
    private let conditions: [QueryPlanner.Condition]
    /// The store's key format: conditions hold values in it.
    private let keys: IndexKeys
    /// Per condition, when it is a range over dates or over doubles: its bounds as numbers, so
    /// a column of that kind is compared directly (as tuple order compares it) instead of
    /// through a tuple value built per row. A departure window is such a range.
    private let numeric: [NumericRange?]
    /// Set when every condition is a numeric range on one column (a departure window): that
    /// column's slot and whether it holds dates. `matches` then reads the column's number
    /// straight from the bytes (`RowCodec.number(at:of:entity:dates:)`), with no value built.
    private let singleColumn: (slot: Int, dates: Bool)?

    private struct NumericRange {
        let dates: Bool
        let lower: (Double, Bool)?
        let upper: (Double, Bool)?

        init?(_ condition: QueryPlanner.Condition) {
            guard case .range(let low, let high) = condition else { return nil }
            var kind: Bool?  // true: dates, false: doubles; bounds of both kinds are not mixed
            /// nil: not a number of the range's kind; .some(nil): no bound on this side.
            func number(_ bound: (TupleValue, Bool)?) -> (Double, Bool)?? {
                guard let (value, inclusive) = bound else { return .some(nil) }
                let number: Double, isDate: Bool
                switch value {
                case .date(let v): (number, isDate) = (v, true)
                case .double(let v): (number, isDate) = (v, false)
                default: return nil
                }
                guard !number.isNaN, kind == nil || kind == isDate else { return nil }
                kind = isDate
                return .some((number, inclusive))
            }
            guard let lower = number(low), let upper = number(high), let kind else { return nil }
            (dates, self.lower, self.upper) = (kind, lower, upper)
        }

        /// Whether `value` (not NaN) lies within the bounds.
        func contains(_ value: Double) -> Bool {
            QueryPlanner.within(lower, upper) { bound in value < bound ? -1 : (value > bound ? 1 : 0) }
        }
    }

    init?(_ predicate: ObjectPredicate, info: EntityInfo, store: BTreeStore) {
        var tests: [(slot: Int, condition: QueryPlanner.Condition)] = []
        for conjunct in QueryPlanner.conjuncts(predicate) {
            guard let (slot, condition) = QueryPlanner.exactCondition(conjunct, info: info, store: store) else { return nil }
            tests.append((slot, condition))
        }
        guard !tests.isEmpty else { return nil }
        tests.sort { $0.slot < $1.slot }
        entityCode = info.code
        keys = store.keys
        slots = tests.map(\.slot)
        conditions = tests.map(\.condition)
        let ranges = conditions.map(NumericRange.init)
        numeric = ranges
        let slot = tests[0].slot
        if let first = ranges[0], tests.allSatisfy({ $0.slot == slot }), ranges.allSatisfy({ $0?.dates == first.dates }) {
            singleColumn = (slot, first.dates)
        } else {
            singleColumn = nil
        }
    }

    /// Whether the row meets every condition; nil when the bytes cannot be filtered (a row of
    /// another entity, an older format, a malformed row): the caller then decodes the row and
    /// evaluates the predicate, which reports any damage.
    /// - Complexity: O(bytes before the last column named).
    func matches(_ bytes: UnsafeRawBufferPointer) throws -> Bool? {
        if let single = singleColumn, let number = RowCodec.number(at: single.slot, of: bytes, entity: entityCode, dates: single.dates) {
            // As below, where a column of the range's kind is compared as a number.
            for range in numeric where range?.contains(number) == false { return false }
            return true
        }
        return try RowCodec.testColumns(slots, of: bytes, entity: entityCode) { index, value in
            if let range = numeric[index], case .value(let attribute) = value {
                switch attribute {
                case .date(let date) where range.dates && !date.timeIntervalSinceReferenceDate.isNaN:
                    return range.contains(date.timeIntervalSinceReferenceDate)
                case .double(let number) where !range.dates && !number.isNaN:
                    return range.contains(number)
                default: break
                }
            }
            return QueryPlanner.matches(keys.tupleValue(value), conditions[index])
        }
    }
}
