import Foundation

/// A value computed from one object's own attributes — `departureTime + 60`, `price * 1.1`,
/// `"closed"` — as Core Data's `NSExpression` gives a batch update its new values
/// (Spec/predicates.md §6).
///
/// The syntax is the predicate language's values (numbers, strings, `%@`, `nil`, `TRUE`,
/// `CAST`, keys naming the object's attributes) combined with `+ - * /` and parentheses, with
/// the usual precedence. Arithmetic: integers with integers stay integers (an overflow is an
/// error), `/` always divides as doubles, any other mix of numbers is a double; a date plus or
/// minus a number of seconds is a date, a date minus a date is their distance in seconds; nil
/// in an operation gives nil. Anything else (a string in a sum, a Boolean) is an error.
public struct ObjectExpression: Hashable, Sendable, CustomStringConvertible {
    indirect enum Node: Hashable, Sendable {
        case constant(AttributeValue)
        case key(String)
        case negate(Node)
        case binary(Operator, Node, Node)
    }

    enum Operator: String, Hashable, Sendable {
        case add = "+", subtract = "-", multiply = "*", divide = "/"
    }

    let root: Node

    /// Parses `format`, with `%@` placeholders filled from `arguments` in order.
    /// - Throws: `ObjectPredicateError.syntax` with the character position; `.argumentCount`,
    ///   `.invalidArgument`, `.unsupported` (a key path of several steps, a list, a subquery).
    /// - Complexity: O(length of the format).
    public init(format: String, _ arguments: Any?...) throws {
        var parser = PredicateParser(format: format, arguments: arguments)
        parser.arithmetic = true
        try parser.advance()
        root = try parser.parseSum()
        guard parser.token == .end else { throw parser.error(expected: "+, -, * or /") }
        guard parser.argumentIndex == arguments.count else {
            throw ObjectPredicateError.argumentCount(placeholders: parser.argumentIndex, arguments: arguments.count)
        }
    }

    /// A constant.
    public init(value: AttributeValue) { root = .constant(value) }

    init(root: Node) { self.root = root }

    public var description: String { Self.format(root) }

    /// The attribute keys the expression reads.
    var keys: Set<String> {
        func collect(_ node: Node, into keys: inout Set<String>) {
            switch node {
            case .constant: break
            case .key(let key): keys.insert(key)
            case .negate(let inner): collect(inner, into: &keys)
            case .binary(_, let left, let right):
                collect(left, into: &keys)
                collect(right, into: &keys)
            }
        }
        var keys: Set<String> = []
        collect(root, into: &keys)
        return keys
    }

    /// The value on an object whose attribute `key` has `value(key)`.
    /// - Throws: `ExpressionError` naming the operation that does not apply to its operands.
    func evaluate(_ value: (String) throws -> AttributeValue) throws -> AttributeValue {
        try Self.evaluate(root, value)
    }

    private static func evaluate(_ node: Node, _ value: (String) throws -> AttributeValue) throws -> AttributeValue {
        switch node {
        case .constant(let constant): return constant
        case .key(let key): return try value(key)
        case .negate(let inner):
            return try negate(try evaluate(inner, value))
        case .binary(let op, let leftNode, let rightNode):
            return try apply(op, try evaluate(leftNode, value), try evaluate(rightNode, value))
        }
    }

    static func negate(_ value: AttributeValue) throws -> AttributeValue {
        switch value {
        case .null: return .null
        case .int(let v):
            guard v != .min else { throw ExpressionError.overflow("-(\(v))") }
            return .int(-v)
        case .double(let v): return .double(-v)
        case .float(let v): return .double(-Double(v))
        case .decimal(let v): return .decimal(-v)
        case let other: throw ExpressionError.operand("-", other.kindName)
        }
    }

    static func apply(_ op: Operator, _ left: AttributeValue, _ right: AttributeValue) throws -> AttributeValue {
        switch (left, right) {
        case (.null, _), (_, .null): return .null
        case (.int(let a), .int(let b)) where op != .divide:
            let (result, overflow): (Int64, Bool)
            switch op {
            case .add: (result, overflow) = a.addingReportingOverflow(b)
            case .subtract: (result, overflow) = a.subtractingReportingOverflow(b)
            default: (result, overflow) = a.multipliedReportingOverflow(by: b)
            }
            guard !overflow else { throw ExpressionError.overflow("\(a) \(op.rawValue) \(b)") }
            return .int(result)
        case _ where isDecimalPair(left, right):
            return try decimal(op, decimalValue(left), decimalValue(right))
        case (.date(let date), _) where op == .add || op == .subtract:
            if case .date(let other) = right, op == .subtract { return .double(date.timeIntervalSince(other)) }
            guard let seconds = number(right) else { throw ExpressionError.operand(op.rawValue, "date and \(right.kindName)") }
            return .date(date.addingTimeInterval(op == .add ? seconds : -seconds))
        case (_, .date(let date)) where op == .add:
            guard let seconds = number(left) else { throw ExpressionError.operand(op.rawValue, "\(left.kindName) and date") }
            return .date(date.addingTimeInterval(seconds))
        default:
            guard let a = number(left), let b = number(right) else {
                throw ExpressionError.operand(op.rawValue, "\(left.kindName) and \(right.kindName)")
            }
            switch op {
            case .add: return .double(a + b)
            case .subtract: return .double(a - b)
            case .multiply: return .double(a * b)
            case .divide: return .double(a / b)
            }
        }
    }

    /// Integers, floats and doubles as doubles (Booleans are not numbers here).
    private static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .int(let v): return Double(v)
        case .double(let v): return v
        case .float(let v): return Double(v)
        case .decimal(let v): return Double(v.description)
        default: return nil
        }
    }

    /// Whether the operands are a decimal and a decimal or an integer (computed as decimals).
    private static func isDecimalPair(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        switch (a, b) {
        case (.decimal, .decimal), (.decimal, .int), (.int, .decimal): return true
        default: return false
        }
    }

    private static func decimalValue(_ value: AttributeValue) -> Decimal {
        switch value {
        case .decimal(let v): return v
        case .int(let v): return Decimal(v)
        default: return 0
        }
    }

    private static func decimal(_ op: Operator, _ a: Decimal, _ b: Decimal) throws -> AttributeValue {
        switch op {
        case .add: return .decimal(a + b)
        case .subtract: return .decimal(a - b)
        case .multiply: return .decimal(a * b)
        case .divide:
            guard !b.isZero else { throw ExpressionError.operand("/", "a decimal divided by zero") }
            return .decimal(a / b)
        }
    }

    static func format(_ node: Node) -> String {
        switch node {
        case .constant(let value): return PredicateFormatter.format(value)
        case .key(let key): return PredicateFormatter.escapeKey(key)
        case .negate(let inner): return "-(\(format(inner)))"
        case .binary(let op, let left, let right): return "(\(format(left)) \(op.rawValue) \(format(right)))"
        }
    }
}

/// An operation of an `ObjectExpression` that does not apply to the values it met.
enum ExpressionError: Error, Equatable, CustomStringConvertible {
    /// An integer result beyond 64 bits.
    case overflow(String)
    /// An operator applied to values it does not take.
    case operand(String, String)

    var description: String {
        switch self {
        case .overflow(let operation): return "\(operation) overflows a 64-bit integer"
        case .operand(let op, let kinds): return "\(op) does not apply to \(kinds)"
        }
    }
}

extension PredicateParser {
    /// `sum = product { ("+" | "-") product }`
    mutating func parseSum() throws -> ObjectExpression.Node {
        try nested { parser in
            var node = try parser.parseProduct()
            while let op = parser.operatorSymbol(["+", "-"]) {
                try parser.advance()
                node = .binary(op, node, try parser.parseProduct())
            }
            return node
        }
    }

    /// `product = factor { ("*" | "/") factor }`
    mutating func parseProduct() throws -> ObjectExpression.Node {
        var node = try parseFactor()
        while let op = operatorSymbol(["*", "/"]) {
            try advance()
            node = .binary(op, node, try parseFactor())
        }
        return node
    }

    /// `factor = "-" factor | "(" sum ")" | value`, a value as in predicates (a key naming an
    /// attribute of the object itself).
    mutating func parseFactor() throws -> ObjectExpression.Node {
        if isSymbol("-") {
            try advance()
            return .negate(try nested { try $0.parseFactor() })
        }
        if isSymbol("(") {
            try advance()
            let inner = try parseSum()
            try expect(")")
            return inner
        }
        let start = tokenStart
        switch try parsePrimaryExpression() {
        case .constant(let value): return .constant(value)
        case .keyPath(let path) where path.count == 1:
            guard !isSymbol(".") else { throw ObjectPredicateError.unsupported("a key path in an update expression (character \(start)): use a key of the object itself") }
            return .key(path[0])
        case let other:
            throw ObjectPredicateError.unsupported("\(PredicateFormatter.format(other)) in an update expression (character \(start)): use numbers, strings, dates, %@ and the object's own keys")
        }
    }

    func operatorSymbol(_ symbols: [String]) -> ObjectExpression.Operator? {
        guard case .symbol(let symbol) = token, symbols.contains(symbol) else { return nil }
        return ObjectExpression.Operator(rawValue: symbol)
    }
}
