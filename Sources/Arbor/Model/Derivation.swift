/// A derived attribute's expression, parsed (the forms Core Data's derived attributes take in a
/// SQL store; Spec/object-store.md, "Derived attributes"):
///
/// | form | example | value |
/// |---|---|---|
/// | key path | `name`, `stop.name` | an attribute of the object or of an object its to-ones reach |
/// | aggregate | `stopTimes.@count`, `lines.@sum.length` | `@count`, `@sum`, `@avg`, `@min`, `@max` over a to-many reached through to-ones |
/// | function | `canonical:(name)`, `lowercase:(stop.name)` | a key path's string `lowercase:`d, `uppercase:`d or `canonical:` (folded as `[cd]` folds) |
/// | `now()` | `now()` | the time of the save |
struct Derivation: Hashable, Sendable {
    enum Function: String, Hashable, Sendable {
        case lowercase, uppercase, canonical
    }

    enum Form: Hashable, Sendable {
        /// Relationships then an attribute: `stop.name` is `["stop", "name"]`.
        case keyPath([String])
        /// A string function of a key path.
        case function(Function, [String])
        /// Relationships ending with a to-many, an aggregate, and (but for `@count`) the members' attribute.
        case aggregate([String], AggregateFunction, key: String?)
        case now
    }

    let form: Form

    /// Parses `expression`; the error is the reason, for `ModelError.invalidDerivation`.
    static func parse(_ expression: String) -> Result<Derivation, DerivationSyntaxError> {
        let text = expression.filter { !$0.isWhitespace }
        if text == "now()" { return .success(Derivation(form: .now)) }
        if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon])
            guard let function = Function(rawValue: name) else {
                return .failure(DerivationSyntaxError("unknown function \(name): (lowercase:, uppercase: or canonical:)"))
            }
            let rest = text[text.index(after: colon)...]
            guard rest.hasPrefix("("), rest.hasSuffix(")"), rest.count > 2 else {
                return .failure(DerivationSyntaxError("\(name): takes a key path in parentheses, as in \(name):(name)"))
            }
            return keyPath(String(rest.dropFirst().dropLast())).map { Derivation(form: .function(function, $0)) }
        }
        let components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let aggregateIndex = components.firstIndex(where: { $0.hasPrefix("@") }) else {
            return keyPath(text).map { Derivation(form: .keyPath($0)) }
        }
        guard let function = AggregateFunction(rawValue: components[aggregateIndex]) else {
            return .failure(DerivationSyntaxError("unknown aggregate \(components[aggregateIndex]) (@count, @sum, @avg, @min or @max)"))
        }
        guard aggregateIndex > 0 else { return .failure(DerivationSyntaxError("an aggregate follows a to-many relationship, as in items.@count")) }
        let path = Array(components[..<aggregateIndex])
        let tail = Array(components[(aggregateIndex + 1)...])
        guard path.allSatisfy(isName) else { return .failure(DerivationSyntaxError("\(text) is not a key path")) }
        switch (function, tail.count) {
        case (.count, 0): return .success(Derivation(form: .aggregate(path, .count, key: nil)))
        case (.count, _): return .failure(DerivationSyntaxError("@count takes no key"))
        case (_, 1) where isName(tail[0]): return .success(Derivation(form: .aggregate(path, function, key: tail[0])))
        default: return .failure(DerivationSyntaxError("\(function.rawValue) takes the members' attribute, as in items.\(function.rawValue).price"))
        }
    }

    private static func keyPath(_ text: String) -> Result<[String], DerivationSyntaxError> {
        let components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !components.isEmpty, components.allSatisfy(isName) else {
            return .failure(DerivationSyntaxError("\(text.isEmpty ? "an empty expression" : text) is not a key path"))
        }
        return .success(components)
    }

    private static func isName(_ text: String) -> Bool { ManagedObjectModel.isValidName(text) }
}

/// Why a derivation does not parse.
struct DerivationSyntaxError: Error {
    let detail: String
    init(_ detail: String) { self.detail = detail }
}
