import Foundation

/// What a predicate sees of one object: a managed object in a context, or a row in a store.
/// Both evaluate through the same `PredicateEvaluator`, so a predicate means the same thing in
/// memory and in a fetch.
protocol PredicateSubject {
    var subjectID: ObjectID { get }
    var entity: EntityInfo { get }
    func attributeValue(slot: Int) throws -> AttributeValue
    func toOneTarget(_ relationship: EntityInfo.Relationship) throws -> ObjectID?
    func toManyMembers(_ relationship: EntityInfo.Relationship) throws -> [ObjectID]
}

/// Loads the subject for a related object (following `stop.name`, `stopTimes`).
protocol SubjectResolver {
    func subject(for id: ObjectID) throws -> PredicateSubject?
}

/// A value during evaluation.
enum PredicateValue: Sendable {
    case scalar(AttributeValue)
    case object(ObjectID?)
    case many([PredicateValue])

    static let null = PredicateValue.scalar(.null)
}

/// Evaluates predicates (Spec/predicates.md, "Semantics").
struct PredicateEvaluator {
    let resolver: SubjectResolver
    /// Compiled MATCHES patterns, by pattern and options.
    private var regexCache: [String: NSRegularExpression] = [:]
    /// The folded words of each `WORDSBEGINWITH` query met, by options and query.
    private var wordQueryCache: [String: [[UInt8]]] = [:]
    /// The last SUBQUERY met: a fetch evaluates the same one for every candidate row, and
    /// rewriting it is worth doing once.
    private var lastSubquery: SubqueryPreparation?
    /// Hashed IN lists, by the address of the list's elements (each entry holds the list, so
    /// the address cannot be reused by another list while the entry lives).
    private var valueSets: [Int: (items: [PredicateExpression], options: StringOptions, set: ValueSet?)] = [:]

    /// A class: it is looked up for every candidate row, and a reference costs less to pass
    /// around than copying these fields each time.
    final class SubqueryPreparation {
        let predicate: ObjectPredicate
        let variable: String
        let collection: PredicateExpression
        let entity: ObjectIdentifier
        /// `predicate` with `$variable.key` as `key`, and whether it no longer mentions `$variable`.
        let own: ObjectPredicate
        let selfContained: Bool

        init(predicate: ObjectPredicate, variable: String, collection: PredicateExpression, entity: ObjectIdentifier,
             own: ObjectPredicate, selfContained: Bool) {
            self.predicate = predicate
            self.variable = variable
            self.collection = collection
            self.entity = entity
            self.own = own
            self.selfContained = selfContained
        }
    }

    init(resolver: SubjectResolver) { self.resolver = resolver }

    mutating func evaluate(_ predicate: ObjectPredicate, _ subject: PredicateSubject, variables: [String: PredicateValue] = [:]) throws -> Bool {
        switch predicate {
        case .true: return true
        case .false: return false
        case .and(let parts):
            for part in parts where try !evaluate(part, subject, variables: variables) { return false }
            return true
        case .or(let parts):
            for part in parts where try evaluate(part, subject, variables: variables) { return true }
            return false
        case .not(let part): return try !evaluate(part, subject, variables: variables)
        case .comparison(let comparison): return try evaluate(comparison, subject, variables: variables)
        }
    }

    mutating func evaluate(_ comparison: Comparison, _ subject: PredicateSubject, variables: [String: PredicateValue]) throws -> Bool {
        // `SUBQUERY(…).@count != 0` (or > 0, == 0, <= 0) only asks whether a member exists:
        // the members are read until one matches. (A store's planner answers the common forms
        // by its indexes before the evaluator sees them: `MemberCheck`.)
        if comparison.modifier == .direct, case .aggregate(.count, let collection, nil) = comparison.left,
           case .subquery(let members, let variable, let inner) = collection, case .constant(.int(0)) = comparison.right,
           [.notEqual, .greater, .equal, .lessOrEqual].contains(comparison.op) {
            let exists = try existsMember(members, variable, inner, subject, variables)
            return comparison.op == .notEqual || comparison.op == .greater ? exists : !exists
        }
        // A long IN list of constants: looked up in a hash set, not compared element by element.
        if comparison.op == .in, case .list(let items) = comparison.right, items.count >= ValueSet.threshold,
           let set = valueSet(items, comparison.options),
           let answer = try contains(set, value(comparison.left, subject, variables), comparison.modifier) {
            return answer
        }
        let left = try value(comparison.left, subject, variables)
        let right = try value(comparison.right, subject, variables)
        switch (comparison.modifier, left) {
        case (.direct, .many(let items)):
            // A collection on the left: CONTAINS tests membership, IN is not meaningful.
            if comparison.op == .contains {
                return try items.contains { try compare($0, .equal, right, comparison.options) }
            }
            throw ObjectPredicateError.unsupported("a to-many key path needs ANY, ALL, NONE or an aggregate: \(PredicateFormatter.format(comparison.left))")
        case (.direct, _): return try compare(left, comparison.op, right, comparison.options)
        case (.any, .many(let items)): return try items.contains { try compare($0, comparison.op, right, comparison.options) }
        case (.all, .many(let items)): return try items.allSatisfy { try compare($0, comparison.op, right, comparison.options) }
        case (.none, .many(let items)): return try !items.contains { try compare($0, comparison.op, right, comparison.options) }
        case (.any, _): return try compare(left, comparison.op, right, comparison.options)
        case (.all, _): return try compare(left, comparison.op, right, comparison.options)
        case (.none, _): return try !compare(left, comparison.op, right, comparison.options)
        }
    }

    /// The hashed form of an IN list, made once per list and options; nil when the list holds
    /// something other than constants and objects.
    private mutating func valueSet(_ items: [PredicateExpression], _ options: StringOptions) -> ValueSet? {
        let address = items.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) }
        if let cached = valueSets[address], cached.options == options, cached.items.count == items.count { return cached.set }
        let set = ValueSet.of(items, options: options)
        valueSets[address] = (items, options, set)
        return set
    }

    /// `left IN set` under `modifier`; nil when only evaluation can tell (a collection where
    /// a single value belongs, which evaluation reports).
    private func contains(_ set: ValueSet, _ left: PredicateValue, _ modifier: Comparison.Modifier) -> Bool? {
        if case .many(let items) = left {
            switch modifier {
            case .direct: return nil
            case .any:
                for item in items {
                    guard let found = set.contains(item) else { return nil }
                    if found { return true }
                }
                return false
            case .all, .none:
                for item in items {
                    guard let found = set.contains(item) else { return nil }
                    if found != (modifier == .all) { return false }
                }
                return true
            }
        }
        guard let found = set.contains(left) else { return nil }
        return modifier == .none ? !found : found
    }

    /// Whether some member of `collection` satisfies `predicate` with `$variable` bound to it.
    mutating func existsMember(_ collection: PredicateExpression, _ variable: String, _ predicate: ObjectPredicate,
                               _ subject: PredicateSubject, _ variables: [String: PredicateValue]) throws -> Bool {
        // `$x.key` on the member is `key` on the member itself: evaluating that form reads each
        // member once.
        let prepared: SubqueryPreparation
        if let last = lastSubquery, last.entity == ObjectIdentifier(subject.entity), last.variable == variable,
           last.collection == collection, last.predicate == predicate {
            prepared = last
        } else {
            let own = predicate.replacingVariable(variable)
            prepared = SubqueryPreparation(predicate: predicate, variable: variable, collection: collection,
                                           entity: ObjectIdentifier(subject.entity), own: own, selfContained: !own.mentions(variable))
            lastSubquery = prepared
        }
        let own = prepared.own, selfContained = prepared.selfContained
        guard case .many(let items) = try value(collection, subject, variables) else {
            throw ObjectPredicateError.unsupported("SUBQUERY over something that is not a to-many relationship")
        }
        for item in items {
            guard case .object(let id?) = item, let member = try resolver.subject(for: id) else { continue }
            if selfContained {
                if try evaluate(own, member, variables: variables) { return true }
            } else {
                var inner = variables
                inner[variable] = item
                if try evaluate(predicate, member, variables: inner) { return true }
            }
        }
        return false
    }

    // MARK: Expressions

    mutating func value(_ expression: PredicateExpression, _ subject: PredicateSubject, _ variables: [String: PredicateValue]) throws -> PredicateValue {
        switch expression {
        case .constant(let value): return .scalar(value)
        case .object(let id): return .object(id)
        case .list(let items): return .many(try items.map { try value($0, subject, variables) })
        case .evaluatedObject: return .object(subject.subjectID)
        case .keyPath(let path): return try follow(path, from: .object(subject.subjectID), start: subject)
        case .variablePath(let name, let path):
            guard let start = variables[name] else { throw ObjectPredicateError.unboundVariable(name) }
            return try follow(path, from: start, start: nil)
        case .variable(let name):
            guard let bound = variables[name] else { throw ObjectPredicateError.unboundVariable(name) }
            return bound
        case .aggregate(let function, let collection, let key):
            let members = try value(collection, subject, variables)
            guard case .many(let items) = members else {
                throw ObjectPredicateError.unsupported("\(function.rawValue) of something that is not a to-many relationship")
            }
            if function == .count { return .scalar(.int(Int64(items.count))) }
            var values: [AttributeValue] = []
            for item in items {
                let element = key.map { try? follow([$0], from: item, start: nil) } ?? item
                if case .scalar(let scalar)? = element, !scalar.isNull { values.append(scalar) }
            }
            return .scalar(Self.aggregate(function, values))
        case .subquery(let collection, let variable, let predicate):
            guard case .many(let items) = try value(collection, subject, variables) else {
                throw ObjectPredicateError.unsupported("SUBQUERY over something that is not a to-many relationship")
            }
            var kept: [PredicateValue] = []
            for item in items {
                guard case .object(let id?) = item, let member = try resolver.subject(for: id) else { continue }
                var inner = variables
                inner[variable] = item
                if try evaluate(predicate, member, variables: inner) { kept.append(item) }
            }
            return .many(kept)
        }
    }

    /// Follows a key path from a value (an object, or a collection of objects).
    func follow(_ path: [String], from start: PredicateValue, start subject: PredicateSubject?) throws -> PredicateValue {
        var current = start
        var currentSubject = subject
        for key in path {
            switch current {
            case .object(nil): return .null
            case .object(let id?):
                let resolved: PredicateSubject?
                if let currentSubject, currentSubject.subjectID == id { resolved = currentSubject } else { resolved = try resolver.subject(for: id) }
                guard let target = resolved else { return .null }
                current = try step(target, key)
                currentSubject = nil
            case .many(let items):
                var next: [PredicateValue] = []
                for item in items {
                    let stepped = try follow([key], from: item, start: nil)
                    if case .many(let inner) = stepped { next.append(contentsOf: inner) } else { next.append(stepped) }
                }
                current = .many(next)
            case .scalar:
                throw ObjectPredicateError.unsupported("key \(key) after an attribute value")
            }
        }
        return current
    }

    func step(_ subject: PredicateSubject, _ key: String) throws -> PredicateValue {
        switch subject.entity.propertiesByName[key] {
        case .attribute(let index)?:
            return .scalar(try subject.attributeValue(slot: subject.entity.attributes[index].slot))
        case .relationship(let index)?:
            let relationship = subject.entity.relationships[index]
            if relationship.kind == .toOne { return .object(try subject.toOneTarget(relationship)) }
            return .many(try subject.toManyMembers(relationship).map { .object($0) })
        case .transient?, nil:  // a transient attribute is not stored: a fetch cannot test it
            throw ObjectPredicateError.unknownKey(entity: subject.entity.name, key: key)
        }
    }

    static func aggregate(_ function: AggregateFunction, _ values: [AttributeValue]) -> AttributeValue {
        guard !values.isEmpty else { return function == .sum ? .int(0) : .null }
        switch function {
        case .count: return .int(Int64(values.count))
        case .sum, .avg:
            if function == .sum, values.allSatisfy({ if case .int = $0 { return true } else { return false } }) {
                var total: Int64 = 0
                for case .int(let value) in values {
                    let (sum, overflow) = total.addingReportingOverflow(value)
                    if overflow { return .double(values.compactMap(ValueOrder.number).reduce(0, +)) }
                    total = sum
                }
                return .int(total)
            }
            let numbers = values.compactMap(ValueOrder.number)
            let total = numbers.reduce(0, +)
            return .double(function == .sum ? total : total / Double(max(numbers.count, 1)))
        case .min: return values.min { ValueOrder.compare($0, $1, []) == .orderedAscending } ?? .null
        case .max: return values.max { ValueOrder.compare($0, $1, []) == .orderedAscending } ?? .null
        }
    }

    // MARK: Comparisons

    mutating func compare(_ left: PredicateValue, _ op: Comparison.Operator, _ right: PredicateValue, _ options: StringOptions) throws -> Bool {
        switch op {
        case .in:
            guard case .many(let items) = right else {
                if case .scalar(.string(let text)) = right, case .scalar(.string(let needle)) = left {
                    return ValueOrder.fold(text, options).contains(ValueOrder.fold(needle, options))
                }
                throw ObjectPredicateError.unsupported("IN needs a list or a to-many key path on the right")
            }
            return try items.contains { try compare(left, .equal, $0, options) }
        case .between:
            guard case .many(let bounds) = right, bounds.count == 2 else { throw ObjectPredicateError.unsupported("BETWEEN needs {lower, upper}") }
            return try compare(left, .greaterOrEqual, bounds[0], options) && compare(left, .lessOrEqual, bounds[1], options)
        case .contains:
            if case .many(let items) = left { return try items.contains { try compare($0, .equal, right, options) } }
        default: break
        }
        switch (left, right) {
        case (.object(let a), .object(let b)):
            switch op {
            case .equal: return a == b
            case .notEqual: return a != b
            default: throw ObjectPredicateError.unsupported("\(op.rawValue) between objects")
            }
        case (.object(let a), .scalar(.null)), (.scalar(.null), .object(let a)):
            switch op {
            case .equal: return a == nil
            case .notEqual: return a != nil
            default: return false
            }
        case (.scalar(let a), .scalar(let b)):
            return try compareScalars(a, op, b, options)
        case (.many, _), (_, .many):
            throw ObjectPredicateError.unsupported("\(op.rawValue) with a collection; use ANY, ALL, NONE, IN or an aggregate")
        default:
            // An object compared with a non-nil scalar: never equal.
            return op == .notEqual
        }
    }

    mutating func compareScalars(_ a: AttributeValue, _ op: Comparison.Operator, _ b: AttributeValue, _ options: StringOptions) throws -> Bool {
        switch op {
        case .equal: return ValueOrder.equal(a, b, options)
        case .notEqual: return !ValueOrder.equal(a, b, options)
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let order = ValueOrder.compare(a, b, options) else { return false }
            switch op {
            case .less: return order == .orderedAscending
            case .lessOrEqual: return order != .orderedDescending
            case .greater: return order == .orderedDescending
            default: return order != .orderedAscending
            }
        case .wordsBeginWith:
            guard case .string(let text) = a, case .string(let query) = b else { return false }
            return Words.allBeginWords(of: text, wordQuery(query, options), options)
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .string(let text) = a, case .string(let pattern) = b else { return false }
            let folded = ValueOrder.fold(text, options), needle = ValueOrder.fold(pattern, options)
            switch op {
            case .beginsWith: return folded.unicodeScalars.starts(with: needle.unicodeScalars)
            case .endsWith: return folded.unicodeScalars.reversed().starts(with: needle.unicodeScalars.reversed())
            case .contains: return needle.isEmpty || ValueOrder.contains(folded, needle)
            case .like: return ValueOrder.like(Array(folded.unicodeScalars), Array(needle.unicodeScalars))
            default: return try regex(pattern, options).firstMatch(
                in: text, range: NSRange(text.startIndex..., in: text)).map { $0.range.length == (text as NSString).length } ?? false
            }
        case .between, .in: return false
        }
    }

    /// The folded words of a `WORDSBEGINWITH` query, made once per evaluator (as `regex`).
    mutating func wordQuery(_ query: String, _ options: StringOptions) -> [[UInt8]] {
        let key = "\(options.rawValue):\(query)"
        if let cached = wordQueryCache[key] { return cached }
        let words = Words.foldedBytes(query, options)
        wordQueryCache[key] = words
        return words
    }

    mutating func regex(_ pattern: String, _ options: StringOptions) throws -> NSRegularExpression {
        let key = "\(options.rawValue):\(pattern)"
        if let cached = regexCache[key] { return cached }
        var regexOptions: NSRegularExpression.Options = []
        if options.contains(.caseInsensitive) { regexOptions.insert(.caseInsensitive) }
        guard let compiled = try? NSRegularExpression(pattern: "^(?:" + pattern + ")$", options: regexOptions) else {
            throw ObjectPredicateError.invalidRegularExpression(pattern)
        }
        regexCache[key] = compiled
        return compiled
    }
}

/// Equality and order of scalar values, shared by predicates, sorting and index planning.
enum ValueOrder {
    /// Numbers (integers, floats, decimals, booleans) as Double for mixed comparisons.
    static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .int(let v): return Double(v)
        case .double(let v): return v
        case .float(let v): return Double(v)
        case .decimal(let v): return Double(v.description)
        case .bool(let v): return v ? 1 : 0
        default: return nil
        }
    }

    /// Applies [c]/[d]: full Unicode case folding, removal of combining marks.
    static func fold(_ text: String, _ options: StringOptions) -> String {
        guard !options.isEmpty else { return text }
        // ASCII text has no marks to remove, and its case folding is lowering A–Z: no need for
        // Foundation's (much slower) general path.
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            guard options.contains(.caseInsensitive), text.utf8.contains(where: { (0x41...0x5A).contains($0) }) else { return text }
            return String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        if options == LatinFold.options, let folded = LatinFold.fold(text) { return folded }
        var folding: String.CompareOptions = []
        if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        return text.folding(options: folding, locale: nil)
    }

    static func equal(_ a: AttributeValue, _ b: AttributeValue, _ options: StringOptions) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.int(let x), .int(let y)): return x == y
        case (.string(let x), .string(let y)): return fold(x, options).unicodeScalars.elementsEqual(fold(y, options).unicodeScalars)
        default: return compare(a, b, options) == .orderedSame
        }
    }

    /// The order of two values, nil when they are not comparable (nil, or different kinds).
    /// Strings compare by Unicode scalar values — the order of their UTF-8 bytes, as in indexes.
    static func compare(_ a: AttributeValue, _ b: AttributeValue, _ options: StringOptions) -> ComparisonResult? {
        func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult { x < y ? .orderedAscending : (x == y ? .orderedSame : .orderedDescending) }
        switch (a, b) {
        case (.null, _), (_, .null): return nil
        case (.int(let x), .int(let y)): return order(x, y)
        case (.string(let x), .string(let y)):
            let fx = fold(x, options), fy = fold(y, options)
            if fx.unicodeScalars.elementsEqual(fy.unicodeScalars) { return .orderedSame }
            return fx.unicodeScalars.lexicographicallyPrecedes(fy.unicodeScalars) ? .orderedAscending : .orderedDescending
        case (.date(let x), .date(let y)): return order(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case (.data(let x), .data(let y)):
            if x == y { return .orderedSame }
            return x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending
        case (.uuid(let x), .uuid(let y)): return order(x.uuidString, y.uuidString)
        case (.url(let x), .url(let y)): return compare(.string(x.absoluteString), .string(y.absoluteString), options)
        case (.url(let x), .string), (.string, .url(let x)):
            return a.isURL ? compare(.string(x.absoluteString), b, options) : compare(a, .string(x.absoluteString), options)
        default:
            guard let x = number(a), let y = number(b), !x.isNaN, !y.isNaN else { return nil }
            return order(x, y)
        }
    }

    /// Whether `text` contains `needle` as `String.contains` decides (characters, canonical
    /// equivalence), by comparing bytes when both hold only scalars below U+0300 and no
    /// carriage return: then every scalar is a character of its own and no two different such
    /// strings are canonically equivalent, so a byte match is a character match. Every string
    /// contains "".
    static func contains(_ text: String, _ needle: String) -> Bool {
        guard !needle.isEmpty else { return true }
        func simple(_ string: String) -> Bool {
            string.utf8.allSatisfy { $0 < 0x80 ? $0 != 0x0D : $0 < 0xCC }  // lead bytes below 0xCC: scalars below U+0300
        }
        guard simple(text), simple(needle) else { return text.contains(needle) }
        var text = text, needle = needle
        return text.withUTF8 { haystack in
            needle.withUTF8 { pattern in
                guard let first = pattern.first, pattern.count <= haystack.count,
                      let textBytes = haystack.baseAddress, let patternBytes = pattern.baseAddress else { return pattern.isEmpty }
                for start in 0...(haystack.count - pattern.count)
                where haystack[start] == first && memcmp(textBytes + start, patternBytes, pattern.count) == 0 {
                    return true
                }
                return false
            }
        }
    }

    /// LIKE with `*` (any run) and `?` (one character), iteratively with backtracking to the last star.
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0, p = 0
        var star = -1, mark = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || pattern[p] == text[t] && pattern[p] != "*" {
                t += 1
                p += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = p
                mark = t
                p += 1
            } else if star >= 0 {
                p = star + 1
                mark += 1
                t = mark
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}

extension AttributeValue {
    var isURL: Bool { if case .url = self { return true } else { return false } }
}

extension ObjectPredicate {
    /// Evaluates the predicate on `object` in memory, as its context sees it (unsaved changes
    /// included). Key paths are followed through the context, faulting related objects in.
    /// - Throws: `ObjectPredicateError` for unknown keys, unquantified to-many keys, bad patterns.
    public func evaluate(with object: ManagedObject) throws -> Bool {
        guard let context = object.managedObjectContext else { return false }
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: context))
        return try evaluator.evaluate(self, ObjectSubject(object: object, context: context))
    }
}
