/// Variables and their values: a few pairs, searched in order (cheaper than hashing names).
/// A prepared request's bindings share its list of names, so binding allocates one array.
struct TemplateBindings: Sendable {
    private var names: [String]
    private var values: [PredicateExpression] = []

    init(capacity: Int = 0) {
        names = []
        names.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    /// `values[i]` for `names[i]` (names are shared, not copied).
    /// - Precondition: as many values as names.
    init(names: [String], values: [PredicateExpression]) {
        self.names = names
        self.values = values
    }

    mutating func append(_ name: String, _ value: PredicateExpression) {
        names.append(name)
        values.append(value)
    }

    /// The pairs given so far (shared names may be ahead of their values).
    private var count: Int { Swift.min(names.count, values.count) }

    subscript(name: String) -> PredicateExpression? {
        for index in 0..<count where names[index] == name { return values[index] }
        return nil
    }

    /// The bindings without `name` (a SUBQUERY's own variable hides a template's).
    func removing(_ name: String) -> TemplateBindings {
        var copy = TemplateBindings()
        for index in 0..<count where names[index] != name { copy.append(names[index], values[index]) }
        return copy
    }

    /// The value of variable `name`; nil when it has none, or is bound to a variable (never
    /// followed: no loop).
    func value(of name: String) -> PredicateExpression? {
        guard let value = self[name] else { return nil }
        if case .variable = value { return nil }
        return value
    }

    /// Where variable `name` is among the names; nil when it is not there.
    func position(of name: String) -> Int? { names.firstIndex(of: name) }

    /// `value(of:)`, looked up at `position` first (where the name was in bindings sharing these names).
    func value(of name: String, at position: Int) -> PredicateExpression? {
        guard position >= 0, position < count, names[position] == name else { return value(of: name) }
        if case .variable = values[position] { return nil }
        return values[position]
    }

    /// `expression` with a variable replaced by its value, as `value(of:)` gives it (not within
    /// lists: see `substituting`).
    @inline(__always)
    func resolve(_ expression: PredicateExpression) -> PredicateExpression {
        if case .variable(let name) = expression, let value = value(of: name) { return value }
        return expression
    }
}

/// A predicate as a prepared request's binding leaves it: written with `$variables`, and
/// their values kept beside it. The whole bound predicate is made only when something reads
/// it (`predicate`); a store planning through an index it kept for the request reads the
/// values straight from `bindings` (see `PlanChoices`), so a fetch whose index answers every
/// condition never builds it.
struct BoundPredicate: Sendable {
    /// The predicate as written.
    let written: ObjectPredicate?
    /// The values of its variables; nil when it has none to bind.
    let bindings: TemplateBindings?

    init(_ predicate: ObjectPredicate?) {
        written = predicate
        bindings = nil
    }

    init(_ written: ObjectPredicate?, bindings: TemplateBindings) {
        self.written = written
        self.bindings = bindings
    }

    /// The predicate with every variable replaced by its value.
    /// - Complexity: O(size of the predicate) when there are bindings: read it once per use.
    var predicate: ObjectPredicate? {
        guard let bindings, let written else { return written }
        return written.substituting(bindings)
    }
}

extension ObjectPredicate {
    /// The predicate with each free `$variable` replaced by its expression in `values`
    /// (variables a SUBQUERY binds stay).
    func substituting(_ values: TemplateBindings) -> ObjectPredicate {
        mappingComparisons { $0.substituting(expressions: values) }
    }
}

extension PredicateExpression {
    func substituting(expressions values: TemplateBindings) -> PredicateExpression {
        switch self {
        case .variable(let name): return values[name] ?? self
        case .list(let items): return .list(items.map { $0.substituting(expressions: values) })
        case .aggregate(let function, let collection, let key): return .aggregate(function, collection: collection.substituting(expressions: values), key: key)
        case .subquery(let collection, let variable, let predicate):
            return .subquery(collection: collection.substituting(expressions: values), variable: variable,
                             predicate: predicate.substituting(values.removing(variable)))
        default: return self
        }
    }
}
