import Foundation

/// A condition on objects: the AST of Core Data's `NSPredicate` (see Spec/predicates.md).
///
/// Build one with `ObjectPredicate(format:_:)` from the NSPredicate format syntax, or with the static
/// helpers (`.key("name").beginsWith("U", options: [.caseInsensitive])`). The same predicate is
/// evaluated in memory (`evaluate(with:)`) and planned against the store by `fetch`; both give
/// the same answer.
public indirect enum ObjectPredicate: Hashable, Sendable, CustomStringConvertible {
    case `true`
    case `false`
    case and([ObjectPredicate])
    case or([ObjectPredicate])
    case not(ObjectPredicate)
    case comparison(Comparison)

    public var description: String { PredicateFormatter.format(self) }
}

/// A comparison between two expressions.
public struct Comparison: Hashable, Sendable {
    public enum Operator: String, Hashable, Sendable {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case between = "BETWEEN", `in` = "IN"
        case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
        /// Every word of the right side begins some word of the left (see `Words`).
        case wordsBeginWith = "WORDSBEGINWITH"

        /// Whether the operator compares strings only (BEGINSWITH, ENDSWITH, CONTAINS, LIKE,
        /// MATCHES, WORDSBEGINWITH).
        var isStringOperator: Bool {
            switch self {
            case .beginsWith, .endsWith, .contains, .like, .matches, .wordsBeginWith: return true
            case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual, .between, .in: return false
            }
        }
    }

    /// How a to-many left-hand side is quantified.
    public enum Modifier: String, Hashable, Sendable {
        case direct = "", any = "ANY", all = "ALL", none = "NONE"
    }

    public var left: PredicateExpression
    public var op: Operator
    public var right: PredicateExpression
    public var modifier: Modifier
    public var options: StringOptions

    public init(_ left: PredicateExpression, _ op: Operator, _ right: PredicateExpression, modifier: Modifier = .direct, options: StringOptions = []) {
        self.left = left
        self.op = op
        self.right = right
        self.modifier = modifier
        self.options = options
    }
}

/// `[c]`, `[d]` and `[cd]`: full Unicode case folding (ß matches ss) and removal of combining
/// marks after canonical decomposition.
public struct StringOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let caseInsensitive = StringOptions(rawValue: 1)
    public static let diacriticInsensitive = StringOptions(rawValue: 2)
}

/// Aggregate functions over a to-many relationship (`@count`, `@sum.key`, …).
public enum AggregateFunction: String, Hashable, Sendable {
    case count = "@count", sum = "@sum", avg = "@avg", min = "@min", max = "@max"
}

/// A value in a predicate.
///
/// Only the cases that hold another expression or a predicate are `indirect`: a constant, key
/// path or variable is stored inline, so binding a template's values (and parsing) makes no box
/// per leaf.
public enum PredicateExpression: Hashable, Sendable {
    /// A constant: number, string, date, nil, …
    case constant(AttributeValue)
    /// A constant object reference (from `%@` with an object or object ID).
    case object(ObjectID)
    /// A list of values, as in `x IN {1, 2}` or `BETWEEN {a, b}`.
    case list([PredicateExpression])
    /// A key path from the evaluated object (`name`, `stop.name`, `stopTimes`).
    case keyPath([String])
    /// A key path from a subquery variable (`$x.departureTime`).
    case variablePath(String, [String])
    /// An unsubstituted `$NAME` variable (replace with `withSubstitutionVariables`).
    case variable(String)
    /// `SELF`, the evaluated object.
    case evaluatedObject
    /// An aggregate of a to-many key path; `key` names the member attribute (nil for @count).
    indirect case aggregate(AggregateFunction, collection: PredicateExpression, key: String?)
    /// `SUBQUERY(collection, $variable, predicate)`: the members for which the predicate holds.
    indirect case subquery(collection: PredicateExpression, variable: String, predicate: ObjectPredicate)
}

// MARK: Building predicates in Swift

extension PredicateExpression {
    /// A key path expression: `.key("stop.name")`.
    public static func key(_ path: String) -> PredicateExpression { .keyPath(path.split(separator: ".").map(String.init)) }
    public static func value(_ value: AttributeValue) -> PredicateExpression { .constant(value) }

    public func equals(_ value: AttributeValue, options: StringOptions = []) -> ObjectPredicate { compare(.equal, .constant(value), options) }
    public func notEquals(_ value: AttributeValue) -> ObjectPredicate { compare(.notEqual, .constant(value)) }
    public func less(than value: AttributeValue) -> ObjectPredicate { compare(.less, .constant(value)) }
    public func lessOrEqual(to value: AttributeValue) -> ObjectPredicate { compare(.lessOrEqual, .constant(value)) }
    public func greater(than value: AttributeValue) -> ObjectPredicate { compare(.greater, .constant(value)) }
    public func greaterOrEqual(to value: AttributeValue) -> ObjectPredicate { compare(.greaterOrEqual, .constant(value)) }
    public func between(_ lower: AttributeValue, _ upper: AttributeValue) -> ObjectPredicate {
        compare(.between, .list([.constant(lower), .constant(upper)]))
    }
    public func isIn(_ values: [AttributeValue]) -> ObjectPredicate { compare(.in, .list(values.map(PredicateExpression.constant))) }
    public func beginsWith(_ prefix: String, options: StringOptions = []) -> ObjectPredicate { compare(.beginsWith, .constant(.string(prefix)), options) }
    public func endsWith(_ suffix: String, options: StringOptions = []) -> ObjectPredicate { compare(.endsWith, .constant(.string(suffix)), options) }
    public func contains(_ text: String, options: StringOptions = []) -> ObjectPredicate { compare(.contains, .constant(.string(text)), options) }
    /// True when every word of `query` begins some word of the value (`WORDSBEGINWITH`): the
    /// free-text search of a name by any of its words, in any order.
    public func wordsBeginWith(_ query: String, options: StringOptions = []) -> ObjectPredicate {
        compare(.wordsBeginWith, .constant(.string(query)), options)
    }

    func compare(_ op: Comparison.Operator, _ right: PredicateExpression, _ options: StringOptions = []) -> ObjectPredicate {
        .comparison(Comparison(self, op, right, options: options))
    }
}

extension ObjectPredicate {
    public static func && (a: ObjectPredicate, b: ObjectPredicate) -> ObjectPredicate { .and([a, b]) }
    public static func || (a: ObjectPredicate, b: ObjectPredicate) -> ObjectPredicate { .or([a, b]) }
    public static prefix func ! (a: ObjectPredicate) -> ObjectPredicate { .not(a) }

    /// Replaces `$NAME` variables (outside subqueries' own variables) with values.
    public func withSubstitutionVariables(_ values: [String: AttributeValue]) -> ObjectPredicate {
        var bindings = TemplateBindings(capacity: values.count)
        for (name, value) in values { bindings.append(name, .constant(value)) }
        return substituting(bindings)
    }
}

