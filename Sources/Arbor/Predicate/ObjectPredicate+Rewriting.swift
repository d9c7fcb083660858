/// Rewritings and measures of predicates that planning and evaluation share: a subquery's
/// predicate on the member itself, whether a predicate reads its object's columns, and the
/// order of an AND's parts by cost.
extension ObjectPredicate {
    /// The predicate with `transform` applied to both sides of every comparison: the walk
    /// every rewriting of a predicate's expressions shares.
    func mappingComparisons(_ transform: (PredicateExpression) -> PredicateExpression) -> ObjectPredicate {
        switch self {
        case .true, .false: return self
        case .and(let parts): return .and(parts.map { $0.mappingComparisons(transform) })
        case .or(let parts): return .or(parts.map { $0.mappingComparisons(transform) })
        case .not(let part): return .not(part.mappingComparisons(transform))
        case .comparison(var comparison):
            comparison.left = transform(comparison.left)
            comparison.right = transform(comparison.right)
            return .comparison(comparison)
        }
    }

    /// The predicate with `$variable.path` replaced by `path` (evaluated on the member itself).
    func replacingVariable(_ variable: String) -> ObjectPredicate {
        mappingComparisons { $0.replacingVariable(variable) }
    }

    /// Whether the predicate still mentions `$variable` (then it cannot be evaluated on the
    /// member alone).
    func mentions(_ variable: String) -> Bool {
        switch self {
        case .true, .false: return false
        case .and(let parts), .or(let parts): return parts.contains { $0.mentions(variable) }
        case .not(let part): return part.mentions(variable)
        case .comparison(let comparison): return comparison.left.mentions(variable) || comparison.right.mentions(variable)
        }
    }

    /// Whether evaluating the predicate on an object of `info` reads none of the object's
    /// columns: every key path it follows from the object starts with a to-many relationship
    /// (whose members come from the relationship's index), as in
    /// `SUBQUERY(stopTimes, $x, $x.departureTime > %@).@count != 0`.
    func readsOnlyToMany(of info: EntityInfo) -> Bool {
        switch self {
        case .true, .false: return true
        case .and(let parts), .or(let parts): return parts.allSatisfy { $0.readsOnlyToMany(of: info) }
        case .not(let part): return part.readsOnlyToMany(of: info)
        case .comparison(let comparison):
            return comparison.left.readsOnlyToMany(of: info) && comparison.right.readsOnlyToMany(of: info)
        }
    }

    /// The same predicate with the parts of every AND ordered cheapest first: own attributes,
    /// then to-one paths, then string patterns, then to-many paths, aggregates and subqueries.
    func orderedByCost() -> ObjectPredicate {
        switch self {
        case .and(let parts): return .and(parts.map { $0.orderedByCost() }.enumerated()
                                            .sorted { ($0.element.cost, $0.offset) < ($1.element.cost, $1.offset) }.map(\.element))
        case .or(let parts): return .or(parts.map { $0.orderedByCost() })
        case .not(let part): return .not(part.orderedByCost())
        default: return self
        }
    }

    var cost: Int {
        switch self {
        case .true, .false: return 0
        case .and(let parts), .or(let parts): return parts.reduce(0) { $0 + $1.cost }
        case .not(let part): return part.cost
        case .comparison(let comparison):
            let operatorCost = [.like, .matches, .contains, .endsWith, .wordsBeginWith].contains(comparison.op) ? 4 : 1
            let quantifier = comparison.modifier == .direct ? 0 : 40
            return operatorCost + quantifier + comparison.left.cost + comparison.right.cost
        }
    }
}

extension PredicateExpression {
    /// See `ObjectPredicate.readsOnlyToMany(of:)`. A subquery's own predicate is evaluated on
    /// the members, so only its collection counts.
    func readsOnlyToMany(of info: EntityInfo) -> Bool {
        switch self {
        case .constant, .object, .variable, .variablePath: return true
        case .evaluatedObject: return false  // compared as a whole object: not worth the special case
        case .keyPath(let path):
            guard let first = path.first, let relationship = info.relationship(named: first) else { return false }
            return relationship.kind != .toOne
        case .list(let items): return items.allSatisfy { $0.readsOnlyToMany(of: info) }
        case .aggregate(_, let collection, _): return collection.readsOnlyToMany(of: info)
        case .subquery(let collection, _, _): return collection.readsOnlyToMany(of: info)
        }
    }

    func replacingVariable(_ variable: String) -> PredicateExpression {
        switch self {
        case .variablePath(let name, let path) where name == variable: return .keyPath(path)
        case .variable(let name) where name == variable: return .evaluatedObject
        case .list(let items): return .list(items.map { $0.replacingVariable(variable) })
        case .aggregate(let function, let collection, let key): return .aggregate(function, collection: collection.replacingVariable(variable), key: key)
        case .subquery(let collection, let inner, let predicate):
            guard inner != variable else { return .subquery(collection: collection.replacingVariable(variable), variable: inner, predicate: predicate) }
            return .subquery(collection: collection.replacingVariable(variable), variable: inner, predicate: predicate.replacingVariable(variable))
        default: return self
        }
    }

    func mentions(_ variable: String) -> Bool {
        switch self {
        case .variablePath(let name, _), .variable(let name): return name == variable
        case .list(let items): return items.contains { $0.mentions(variable) }
        case .aggregate(_, let collection, _): return collection.mentions(variable)
        case .subquery(let collection, let inner, let predicate):
            return collection.mentions(variable) || (inner != variable && predicate.mentions(variable))
        default: return false
        }
    }

    var cost: Int {
        switch self {
        case .constant, .object, .variable, .evaluatedObject: return 0
        case .list(let items): return items.reduce(0) { $0 + $1.cost }
        case .keyPath(let path), .variablePath(_, let path): return path.count <= 1 ? 0 : 5 * (path.count - 1)
        case .aggregate(_, let collection, _): return 50 + collection.cost
        case .subquery(let collection, _, let predicate): return 100 + collection.cost + predicate.cost
        }
    }
}
