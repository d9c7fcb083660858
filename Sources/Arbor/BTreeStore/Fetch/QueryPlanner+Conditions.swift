import ArborEngine
import Foundation

/// The column conditions comparisons state, and how exactly an index answers them.
extension QueryPlanner {
    /// The column condition `conjunct` states when tuple order decides it exactly as the
    /// predicate does (see `residual`): then checking the condition on a column's
    /// value, in a key or in a row, is evaluating the conjunct.
    static func exactCondition(_ conjunct: ObjectPredicate, info: EntityInfo, store: BTreeStore) -> (Int, Condition)? {
        guard case .comparison(let comparison) = conjunct, let stated = statedCondition(comparison, info: info, store: store),
              stated.isExact else { return nil }
        return (stated.slot, stated.condition)
    }

    /// Whether tuple order decides a comparison of an attribute of `type` with `value` exactly
    /// as the predicate does (see `residual`).
    static func ordersExactly(_ value: AttributeValue, _ type: AttributeType) -> Bool {
        switch (value, type) {
        case (.int, .int16), (.int, .int32), (.int, .int64): return true
        case (.double(let v), .double): return !v.isNaN
        case (.int(let v), .double): return v.magnitude <= 1 << 53
        case (.date, .date), (.bool, .bool), (.string, .string): return true
        default: return false
        }
    }

    static func keyName(_ comparison: Comparison) -> String? {
        if case .keyPath(let path) = comparison.left, path.count == 1 { return path[0] }
        if case .keyPath(let path) = comparison.right, path.count == 1 { return path[0] }
        return nil
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
        case .oneOf(let values): return values.contains(value)
        case .range(let lower, let upper):
            if isNull(value) { return false }
            return within(lower, upper) { TupleKey.compare(value, $0) }
        case .prefix(let prefix):
            guard case .string(let text) = value else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case .foldedEqual, .foldedPrefix: return true
        }
    }

    /// The column condition a comparison states, when it compares a stored column of the
    /// entity with constants.
    static func condition(_ comparison: Comparison, info: EntityInfo, store: BTreeStore) -> (Int, Condition)? {
        statedCondition(comparison, info: info, store: store).map { ($0.slot, $0.condition) }
    }

    /// `condition(_:info:store:)` with whether it decides the comparison exactly; `bindings`
    /// gives the values of variables the comparison is written with (a prepared request's).
    static func statedCondition(_ comparison: Comparison, info: EntityInfo, store: BTreeStore,
                                bindings: TemplateBindings? = nil) -> StatedCondition? {
        ConditionSite(comparison, info: info, store: store)?.stated(in: store, bindings: bindings)
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
}
