/// A predicate that cannot be parsed, bound or evaluated. Each case says where and what.
public enum ObjectPredicateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The format string does not parse: `position` is the character offset (0-based).
    case syntax(position: Int, expected: String, found: String)
    /// The format has more `%@`/`%K` placeholders than arguments were given (or fewer).
    case argumentCount(placeholders: Int, arguments: Int)
    /// An argument cannot be used where its placeholder is.
    case invalidArgument(index: Int, detail: String)
    /// A key path names no property of the entity.
    case unknownKey(entity: String, key: String)
    /// A value's type does not fit the property it is compared with.
    case typeMismatch(key: String, expected: String, found: String)
    /// A construct that this position does not allow (e.g. a to-many key without ANY/ALL/NONE).
    case unsupported(String)
    /// A `$VARIABLE` was never substituted.
    case unboundVariable(String)
    /// A MATCHES pattern is not a valid regular expression.
    case invalidRegularExpression(String)

    public var description: String {
        switch self {
        case .syntax(let position, let expected, let found): return "predicate syntax error at character \(position): expected \(expected), found \(found)"
        case .argumentCount(let placeholders, let arguments): return "the format has \(placeholders) placeholders but \(arguments) arguments were given"
        case .invalidArgument(let index, let detail): return "argument \(index + 1): \(detail)"
        case .unknownKey(let entity, let key): return "entity \(entity) has no property \(key)"
        case .typeMismatch(let key, let expected, let found): return "\(key) is \(expected), compared with \(found)"
        case .unsupported(let detail): return "unsupported predicate: \(detail)"
        case .unboundVariable(let name): return "variable $\(name) has no value"
        case .invalidRegularExpression(let pattern): return "invalid regular expression \(pattern)"
        }
    }
}
