import Foundation

/// Writes predicates back in the format syntax; `ObjectPredicate(format: p.description)` parses to `p`
/// for predicates without object constants.
enum PredicateFormatter {
    /// Lists longer than this are summarized by `summary(_:)`.
    static let summaryListLength = 8

    /// The predicate for a plan or a log line: as `format`, but a list longer than
    /// `summaryListLength` shows its first three values and its length
    /// (`identifier IN {1, 2, 3, … 1000 values}`). Not parseable back when it summarizes.
    static func summary(_ predicate: ObjectPredicate) -> String { format(predicate, summarizing: true) }

    static func format(_ predicate: ObjectPredicate, summarizing: Bool = false) -> String {
        switch predicate {
        case .true: return "TRUEPREDICATE"
        case .false: return "FALSEPREDICATE"
        // Parentheses only around AND/OR groups: the printed form nests no deeper than a format
        // that parses to the same predicate, and reparses to exactly this predicate.
        case .and(let parts): return parts.isEmpty ? "TRUEPREDICATE" : parts.map { grouped($0, summarizing) }.joined(separator: " AND ")
        case .or(let parts): return parts.isEmpty ? "FALSEPREDICATE" : parts.map { grouped($0, summarizing) }.joined(separator: " OR ")
        case .not(let part): return "NOT " + grouped(part, summarizing)
        case .comparison(let comparison):
            let modifier = comparison.modifier == .direct ? "" : comparison.modifier.rawValue + " "
            var options = ""
            if !comparison.options.isEmpty {
                options = "[" + (comparison.options.contains(.caseInsensitive) ? "c" : "")
                    + (comparison.options.contains(.diacriticInsensitive) ? "d" : "") + "]"
            }
            return "\(modifier)\(format(comparison.left, summarizing)) \(comparison.op.rawValue)\(options) \(format(comparison.right, summarizing))"
        }
    }

    static func grouped(_ predicate: ObjectPredicate, _ summarizing: Bool) -> String {
        switch predicate {
        case .and(let parts) where !parts.isEmpty: return "(\(format(predicate, summarizing: summarizing)))"
        case .or(let parts) where !parts.isEmpty: return "(\(format(predicate, summarizing: summarizing)))"
        default: return format(predicate, summarizing: summarizing)
        }
    }

    static func format(_ expression: PredicateExpression, _ summarizing: Bool = false) -> String {
        switch expression {
        case .constant(let value): return format(value)
        case .object(let id): return "<\(id)>"
        case .list(let items) where summarizing && items.count > summaryListLength:
            return "{" + items.prefix(3).map { format($0, true) }.joined(separator: ", ") + ", … \(items.count) values}"
        case .list(let items): return "{" + items.map { format($0, summarizing) }.joined(separator: ", ") + "}"
        case .keyPath(let path): return path.map(escapeKey).joined(separator: ".")
        case .variablePath(let variable, let path): return "$\(variable)." + path.map(escapeKey).joined(separator: ".")
        case .variable(let name): return "$\(name)"
        case .evaluatedObject: return "SELF"
        case .aggregate(let function, let collection, let key):
            // After a constant, a space: "0.@count" would read back as the number "0." and "@".
            let separator: String
            if case .constant = collection { separator = " ." } else { separator = "." }
            return format(collection, summarizing) + separator + function.rawValue + (key.map { "." + escapeKey($0) } ?? "")
        case .subquery(let collection, let variable, let predicate):
            return "SUBQUERY(\(format(collection, summarizing)), $\(variable), \(format(predicate, summarizing: summarizing)))"
        }
    }

    /// A key as the parser reads it back: keywords and keys that do not start with a letter
    /// or `_` (possible after `#`) get a `#`.
    static func escapeKey(_ key: String) -> String {
        guard let first = key.unicodeScalars.first else { return key }
        let plain = (first.isPredicateLetter || first == "_") && !PredicateParser.keywords.contains(key.uppercased())
        return plain ? key : "#" + key
    }

    static func format(_ value: AttributeValue) -> String {
        switch value {
        case .null: return "nil"
        case .int(let v): return String(v)
        case .double(let v): return v == v.rounded() && abs(v) < 1e15 ? String(format: "%.1f", v) : "\(v)"
        case .float(let v): return "\(v)"
        case .bool(let v): return v ? "TRUE" : "FALSE"
        case .string(let v): return quote(v)
        case .date(let v): return "CAST(\(v.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .data(let v): return quote(v.base64EncodedString())
        case .uuid(let v): return quote(v.uuidString)
        case .url(let v): return quote(v.absoluteString)
        case .decimal(let v): return v.description
        }
    }

    static func quote(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case "\0": result += "\\0"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
