import Foundation

extension ObjectPredicate {
    /// Parses the NSPredicate format syntax (Spec/predicates.md), with `%@` (a value or object)
    /// and `%K` (a key path) placeholders filled from `arguments` in order.
    /// - Throws: `ObjectPredicateError.syntax` with the character position and what was expected;
    ///   `.argumentCount`, `.invalidArgument`.
    /// - Complexity: O(length of the format).
    public init(format: String, _ arguments: Any?...) throws {
        try self.init(format: format, argumentArray: arguments)
    }

    /// `init(format:_:)` with the arguments in an array.
    public init(format: String, argumentArray: [Any?]) throws {
        var parser = PredicateParser(format: format, arguments: argumentArray)
        self = try parser.parseWhole()
    }
}

/// A recursive-descent parser for the predicate format syntax. Every loop consumes input, and
/// nesting is limited, so hostile formats end in an error, never a crash.
struct PredicateParser {
    enum Token: Equatable {
        case identifier(String)
        case number(String)
        case string(String)
        case symbol(String)
        case placeholder(Character)
        case variable(String)
        case end
    }

    static let maximumDepth = 200
    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "BETWEEN", "IN", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "WORDSBEGINWITH", "ANY", "SOME",
        "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "TRUE", "FALSE", "YES", "NO", "SELF", "SUBQUERY", "CAST",
    ]

    let scalars: [Unicode.Scalar]
    let arguments: [Any?]
    var position = 0
    var tokenStart = 0
    var token: Token = .end
    var argumentIndex = 0
    var depth = 0
    /// Reading an `ObjectExpression`: `+ - * /` are operators, and a `-` before a digit is one
    /// too (the parser makes it a negation).
    var arithmetic = false

    init(format: String, arguments: [Any?]) {
        scalars = Array(format.unicodeScalars)
        self.arguments = arguments
    }

    mutating func parseWhole() throws -> ObjectPredicate {
        try advance()
        let predicate = try parseOr()
        guard token == .end else { throw error(expected: "end of predicate") }
        guard argumentIndex == arguments.count else {
            throw ObjectPredicateError.argumentCount(placeholders: argumentIndex, arguments: arguments.count)
        }
        return predicate
    }

    // MARK: Tokens

    func error(expected: String) -> ObjectPredicateError {
        .syntax(position: tokenStart, expected: expected, found: describe(token))
    }

    func describe(_ token: Token) -> String {
        switch token {
        case .identifier(let name): return "\"\(name)\""
        case .number(let text): return text
        case .string(let text): return "string \"\(text)\""
        case .symbol(let symbol): return "\"\(symbol)\""
        case .placeholder(let kind): return "%\(kind)"
        case .variable(let name): return "$\(name)"
        case .end: return "end of input"
        }
    }

    mutating func advance() throws {
        while position < scalars.count, scalars[position].isPredicateSpace { position += 1 }
        tokenStart = position
        guard position < scalars.count else {
            token = .end
            return
        }
        let c = scalars[position]
        if c == "\"" || c == "'" {
            token = .string(try readString(quote: c))
            return
        }
        if c.isPredicateLetter || c == "_" || c == "#" {
            if c == "#" { position += 1 }  // #key escapes a reserved word
            let name = keyCharacters()
            guard !name.isEmpty else { throw ObjectPredicateError.syntax(position: tokenStart, expected: "a key after #", found: "\"#\"") }
            token = c == "#" ? .identifier("#" + name) : .identifier(name)
            return
        }
        // Predicates have no arithmetic, so there "-" before a digit always starts a negative number.
        if ("0"..."9").contains(c) || (!arithmetic && c == "-" && position + 1 < scalars.count && ("0"..."9").contains(scalars[position + 1])) {
            var text = String(c)
            position += 1
            while position < scalars.count {
                let d = scalars[position]
                if ("0"..."9").contains(d) || d == "." || d == "e" || d == "E" || d == "x" || d == "X"
                    || (("a"..."f").contains(d) || ("A"..."F").contains(d)) && (text.hasPrefix("0x") || text.hasPrefix("-0x")) {
                    text.unicodeScalars.append(d)
                    position += 1
                } else if (d == "-" || d == "+"), let last = text.unicodeScalars.last, last == "e" || last == "E", !text.contains("x") {
                    text.unicodeScalars.append(d)
                    position += 1
                } else {
                    break
                }
            }
            token = .number(text)
            return
        }
        if c == "%" {
            guard position + 1 < scalars.count else { throw ObjectPredicateError.syntax(position: position, expected: "@ or K after %", found: "end of input") }
            var kind = Character(scalars[position + 1])
            position += 2
            if kind == "l", position < scalars.count, ["d", "f", "u", "i"].contains(Character(scalars[position])) {
                kind = Character(scalars[position])
                position += 1
            }
            guard ["@", "K", "d", "i", "f", "u", "s"].contains(kind) else {
                throw ObjectPredicateError.syntax(position: tokenStart, expected: "%@ or %K", found: "%\(kind)")
            }
            token = .placeholder(kind)
            return
        }
        if c == "$" {
            position += 1
            let name = keyCharacters()
            guard !name.isEmpty else { throw ObjectPredicateError.syntax(position: tokenStart, expected: "a variable name after $", found: "\"$\"") }
            token = .variable(name)
            return
        }
        for symbol in Self.twoCharacterSymbols where matches(symbol) {
            position += symbol.unicodeScalars.count
            token = .symbol(symbol)
            return
        }
        // Switches, not set literals: a set built per token cost a hash per lookup, and its
        // first use in a process a search of every protocol conformance loaded.
        let isToken: Bool
        switch c {
        case "=", "<", ">", "!", "(", ")", "{", "}", ",", ".", "[", "]", "@": isToken = true
        case "+", "-", "*", "/": isToken = arithmetic
        default: isToken = false
        }
        guard isToken else { throw ObjectPredicateError.syntax(position: position, expected: "a token", found: "\"\(c)\"") }
        position += 1
        token = .symbol(String(c))
    }

    static let twoCharacterSymbols = ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"]

    /// Whether the input at `position` starts with `symbol` (compared in place: a copy of both
    /// per candidate symbol was most of the cost of a predicate's first parse).
    func matches(_ symbol: String) -> Bool {
        var index = position
        for scalar in symbol.unicodeScalars {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
        }
        return true
    }

    /// The key characters from `position` on (a name; empty if there are none), moving past them.
    mutating func keyCharacters() -> String {
        var name = ""
        while position < scalars.count, scalars[position].isPredicateKeyCharacter {
            name.unicodeScalars.append(scalars[position])
            position += 1
        }
        return name
    }

    mutating func readString(quote: Unicode.Scalar) throws -> String {
        let start = position
        position += 1
        var text = ""
        while position < scalars.count {
            let c = scalars[position]
            position += 1
            if c == quote { return text }
            if c == "\\" {
                guard position < scalars.count else { break }
                let escaped = scalars[position]
                position += 1
                switch escaped {
                case "n": text += "\n"
                case "t": text += "\t"
                case "r": text += "\r"
                case "0": text += "\0"
                default: text.unicodeScalars.append(escaped)
                }
            } else {
                text.unicodeScalars.append(c)
            }
        }
        throw ObjectPredicateError.syntax(position: start, expected: "a closing \(quote)", found: "end of input")
    }

    func isKeyword(_ word: String) -> Bool {
        if case .identifier(let name) = token { return name.uppercased() == word }
        return false
    }

    func isSymbol(_ symbol: String) -> Bool { token == .symbol(symbol) }

    mutating func expect(_ symbol: String) throws {
        guard isSymbol(symbol) else { throw error(expected: "\"\(symbol)\"") }
        try advance()
    }

    mutating func nested<T>(_ body: (inout PredicateParser) throws -> T) throws -> T {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw ObjectPredicateError.unsupported("nesting deeper than \(Self.maximumDepth) levels") }
        return try body(&self)
    }

    // MARK: Predicates

    mutating func parseOr() throws -> ObjectPredicate {
        try nested { parser in
            var parts = [try parser.parseAnd()]
            while parser.isKeyword("OR") || parser.isSymbol("||") {
                try parser.advance()
                parts.append(try parser.parseAnd())
            }
            return parts.count == 1 ? parts[0] : .or(parts)
        }
    }

    mutating func parseAnd() throws -> ObjectPredicate {
        var parts = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            try advance()
            parts.append(try parseNot())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    mutating func parseNot() throws -> ObjectPredicate {
        if isKeyword("NOT") || isSymbol("!") {
            try advance()
            return .not(try nested { try $0.parseNot() })
        }
        return try parsePrimaryPredicate()
    }

    mutating func parsePrimaryPredicate() throws -> ObjectPredicate {
        if isSymbol("(") {
            try advance()
            let inner = try parseOr()
            try expect(")")
            return inner
        }
        if isKeyword("TRUEPREDICATE") { try advance(); return .true }
        if isKeyword("FALSEPREDICATE") { try advance(); return .false }
        var modifier = Comparison.Modifier.direct
        if isKeyword("ANY") || isKeyword("SOME") { modifier = .any; try advance() }
        else if isKeyword("ALL") { modifier = .all; try advance() }
        else if isKeyword("NONE") { modifier = .none; try advance() }
        let left = try parseExpression()
        let op = try parseOperator()
        let options = try parseOptions()
        let right = try parseExpression()
        return .comparison(Comparison(left, op, right, modifier: modifier, options: options))
    }

    mutating func parseOperator() throws -> Comparison.Operator {
        let op: Comparison.Operator
        switch token {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="), .symbol("=<"): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="), .symbol("=>"): op = .greaterOrEqual
        case .identifier(let word):
            switch word.uppercased() {
            case "BETWEEN": op = .between
            case "IN": op = .in
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": op = .matches
            case "WORDSBEGINWITH": op = .wordsBeginWith
            default: throw error(expected: "a comparison operator (==, <, BEGINSWITH, IN, …)")
            }
        default: throw error(expected: "a comparison operator (==, <, BEGINSWITH, IN, …)")
        }
        try advance()
        return op
    }

    mutating func parseOptions() throws -> StringOptions {
        guard isSymbol("[") else { return [] }
        let start = tokenStart
        try advance()
        guard case .identifier(let letters) = token else { throw error(expected: "c, d or cd") }
        var options: StringOptions = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": break  // normalized: no effect, strings are compared as stored
            default: throw ObjectPredicateError.syntax(position: start + 1, expected: "c, d or cd", found: "\"\(letters)\"")
            }
        }
        try advance()
        try expect("]")
        return options
    }

    // MARK: Expressions

    mutating func parseExpression() throws -> PredicateExpression {
        try nested { parser in
            var expression = try parser.parsePrimaryExpression()
            while parser.isSymbol(".") {
                try parser.advance()
                expression = try parser.parsePathStep(after: expression)
            }
            return expression
        }
    }

    /// One `.step` after an expression: a key, or `@count` / `@sum.key` / ….
    mutating func parsePathStep(after base: PredicateExpression) throws -> PredicateExpression {
        if isSymbol("@") {
            try advance()
            guard case .identifier(let name) = token, let function = AggregateFunction(rawValue: "@" + name.lowercased()) else {
                throw error(expected: "@count, @sum, @avg, @min or @max")
            }
            try advance()
            if function == .count { return .aggregate(.count, collection: base, key: nil) }
            try expect(".")
            guard case .identifier(let rawKey) = token else { throw error(expected: "the key to aggregate") }
            try advance()
            return .aggregate(function, collection: base, key: Self.unescaped(rawKey))
        }
        guard case .identifier(let rawName) = token else { throw error(expected: "a key") }
        let name = Self.unescaped(rawName)
        try advance()
        switch base {
        case .keyPath(let path): return .keyPath(path + [name])
        case .variablePath(let variable, let path): return .variablePath(variable, path + [name])
        case .variable(let variable): return .variablePath(variable, [name])
        case .evaluatedObject: return .keyPath([name])
        default: throw ObjectPredicateError.unsupported("a key path after \(PredicateFormatter.format(base))")
        }
    }

    mutating func parsePrimaryExpression() throws -> PredicateExpression {
        switch token {
        case .number(let text):
            try advance()
            return .constant(try Self.number(text, position: tokenStart))
        case .string(let text):
            try advance()
            return .constant(.string(text))
        case .variable(let name):
            try advance()
            return .variable(name)
        case .placeholder(let kind):
            let index = argumentIndex
            argumentIndex += 1
            guard index < arguments.count else {
                throw ObjectPredicateError.argumentCount(placeholders: index + 1, arguments: arguments.count)
            }
            try advance()
            if kind == "K" {
                guard let key = arguments[index] as? String, !key.isEmpty else {
                    throw ObjectPredicateError.invalidArgument(index: index, detail: "%K needs a non-empty key path string")
                }
                return .keyPath(key.split(separator: ".").map(String.init))
            }
            return try Self.expression(from: arguments[index], index: index)
        case .symbol("{"):
            try advance()
            var items: [PredicateExpression] = []
            if !isSymbol("}") {
                items.append(try parseExpression())
                while isSymbol(",") {
                    try advance()
                    items.append(try parseExpression())
                }
            }
            try expect("}")
            return .list(items)
        case .symbol("("):
            try advance()
            let inner = try parseExpression()
            try expect(")")
            return inner
        case .identifier(let word):
            switch word.uppercased() {
            case "NIL", "NULL": try advance(); return .constant(.null)
            case "TRUE", "YES": try advance(); return .constant(.bool(true))
            case "FALSE", "NO": try advance(); return .constant(.bool(false))
            case "SELF": try advance(); return .evaluatedObject
            case "SUBQUERY": return try parseSubquery()
            case "CAST": return try parseCast()
            default:
                guard !Self.keywords.contains(word.uppercased()) else { throw error(expected: "a value or key path") }
                try advance()
                return .keyPath([Self.unescaped(word)])
            }
        default:
            throw error(expected: "a value or key path")
        }
    }

    /// A key without its `#` escape. Scalars, not characters: `#` followed by a combining mark
    /// is one character but still an escape.
    static func unescaped(_ word: String) -> String {
        guard word.unicodeScalars.first == "#" else { return word }
        return String(String.UnicodeScalarView(word.unicodeScalars.dropFirst()))
    }

    mutating func parseSubquery() throws -> PredicateExpression {
        try advance()
        try expect("(")
        let collection = try parseExpression()
        try expect(",")
        guard case .variable(let variable) = token else { throw error(expected: "a $variable") }
        try advance()
        try expect(",")
        let predicate = try parseOr()
        try expect(")")
        return .subquery(collection: collection, variable: variable, predicate: predicate)
    }

    mutating func parseCast() throws -> PredicateExpression {
        try advance()
        try expect("(")
        let value = try parseExpression()
        try expect(",")
        guard case .string(let type) = token else { throw error(expected: "a type name such as \"NSDate\"") }
        let typePosition = tokenStart
        try advance()
        try expect(")")
        switch (type, value) {
        case ("NSDate", .constant(.int(let seconds))): return .constant(.date(Date(timeIntervalSinceReferenceDate: Double(seconds))))
        case ("NSDate", .constant(.double(let seconds))): return .constant(.date(Date(timeIntervalSinceReferenceDate: seconds)))
        case ("NSDate", .constant(.date)): return value
        case ("NSNumber", .constant(.string(let text))): return .constant(try Self.number(text, position: typePosition))
        case ("NSNumber", .constant(.date(let date))): return .constant(.double(date.timeIntervalSinceReferenceDate))
        case ("NSString", .constant(.int(let number))): return .constant(.string(String(number)))
        default:
            throw ObjectPredicateError.syntax(position: typePosition, expected: "CAST of a number to \"NSDate\" (or to \"NSNumber\", \"NSString\")",
                                        found: "CAST to \"\(type)\"")
        }
    }

    static func number(_ text: String, position: Int) throws -> AttributeValue {
        if text.hasPrefix("0x") || text.hasPrefix("-0x") {
            let negative = text.hasPrefix("-")
            guard let value = Int64(text.dropFirst(negative ? 3 : 2), radix: 16) else {
                throw ObjectPredicateError.syntax(position: position, expected: "a number", found: text)
            }
            return .int(negative ? -value : value)
        }
        if let value = Int64(text) { return .int(value) }
        if let value = Double(text), value.isFinite { return .double(value) }
        throw ObjectPredicateError.syntax(position: position, expected: "a number", found: text)
    }

    /// The expression for a `%@` argument.
    static func expression(from argument: Any?, index: Int) throws -> PredicateExpression {
        guard let argument else { return .constant(.null) }
        switch argument {
        // Lists of one common type first, without a dynamic cast per element (an import's
        // batch of identifiers holds thousands); and before the class casts below, which would
        // try to bridge an array element by element.
        case let values as [Int64]: return .list(values.map { .constant(.int($0)) })
        case let values as [Int]: return .list(values.map { .constant(.int(Int64($0))) })
        case let values as [String]: return .list(values.map { .constant(.string($0)) })
        case let values as [ObjectID]: return .list(values.map { .object($0) })
        case let value as AttributeValue: return .constant(value)
        case let id as ObjectID: return .object(id)
        case let object as ManagedObject: return .object(object.objectID)
        case let value as Bool: return .constant(.bool(value))
        case let value as Int: return .constant(.int(Int64(value)))
        case let value as Int64: return .constant(.int(value))
        case let value as Int32: return .constant(.int(Int64(value)))
        case let value as Int16: return .constant(.int(Int64(value)))
        case let value as Double: return .constant(.double(value))
        case let value as Float: return .constant(.double(Double(value)))
        case let value as String: return .constant(.string(value))
        case let value as Date: return .constant(.date(value))
        case let value as Data: return .constant(.data(value))
        case let value as UUID: return .constant(.uuid(value))
        case let value as URL: return .constant(.url(value))
        case let value as Decimal: return .constant(.decimal(value))
        case is NSNull: return .constant(.null)
        case let values as [Any?]: return .list(try values.map { try expression(from: $0, index: index) })
        case let values as [Any]: return .list(try values.map { try expression(from: $0, index: index) })
        case let values as Set<AnyHashable>: return .list(try values.map { try expression(from: $0.base, index: index) })
        case let optional as Any? where optional == nil: return .constant(.null)
        default: throw ObjectPredicateError.invalidArgument(index: index, detail: "\(type(of: argument)) cannot be used in a predicate")
        }
    }
}

extension Unicode.Scalar {
    // ASCII first: Unicode's property tables cost about 300 instructions a lookup, and nearly
    // every predicate is ASCII. The answers are those of `properties` for every scalar.

    /// Whether the scalar separates tokens (Unicode's White_Space).
    var isPredicateSpace: Bool {
        value < 0x80 ? value == 0x20 || (0x09...0x0D).contains(value) : properties.isWhitespace
    }

    /// Whether the scalar is a letter that may start a key (Unicode's Alphabetic).
    var isPredicateLetter: Bool {
        value < 0x80 ? (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) : properties.isAlphabetic
    }

    /// Whether the scalar may continue a key or variable name: a letter, a digit or "_".
    var isPredicateKeyCharacter: Bool {
        isPredicateLetter || self == "_" || (0x30...0x39).contains(value)
    }
}
