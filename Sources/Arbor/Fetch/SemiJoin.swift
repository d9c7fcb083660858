import ArborEngine

/// A subject that can answer "does some member of this to-many relationship satisfy this
/// predicate?" through an index, without reading every member (a semi-join probe).
protocol MemberProbing {
    /// nil when no index helps; then the evaluator reads the members one by one.
    func probeExists(_ relationship: EntityInfo.Relationship, predicate: ObjectPredicate) throws -> Bool?
}

extension RowSubject: MemberProbing {
    /// Probes a compound index of the destination led by the inverse foreign key (for
    /// `SUBQUERY(stopTimes, $x, $x.departureTime BETWEEN …)`, an index on (stop, departureTime)):
    /// the owner's key plus the conditions on the next column give key ranges; the rows behind
    /// the entries are read in index order until one satisfies the whole predicate.
    func probeExists(_ relationship: EntityInfo.Relationship, predicate: ObjectPredicate) throws -> Bool? {
        guard relationship.kind == .oneToMany, let destination = store.model.info(named: relationship.destinationName),
              let inverse = destination.relationship(named: relationship.description.inverse) else { return nil }
        guard let index = destination.indexes.first(where: { $0.slots.count >= 2 && $0.slots[0] == inverse.slot && !$0.isForeignKey })
        else { return nil }
        var conditions: [Int: [(QueryPlanner.Condition, ConditionLabel)]] = [inverse.slot: [(.equal(.int64(subjectID.primaryKey)), .text("owner"))]]
        for conjunct in QueryPlanner.conjuncts(predicate) {
            guard case .comparison(let comparison) = conjunct,
                  let (slot, condition) = QueryPlanner.condition(comparison, info: destination, store: store) else { continue }
            conditions[slot, default: []].append((condition, .text("")))
        }
        guard let (_, ranges, used, exact) = QueryPlanner.ranges(for: index, conditions), used.count > 1 else { return nil }
        // Conditions the ranges leave open are checked on the entry's key; what the key cannot
        // answer exactly is evaluated on the member's row. When nothing is left (the window of
        // a (stop, departureTime) index), the first entry that passes is the answer: no row read.
        let keyFilters = QueryPlanner.keyFilters(for: index, conditions, skipping: exact)
        let rest = QueryPlanner.conjuncts(predicate).filter {
            !QueryPlanner.isAnsweredExactly($0, by: index, info: destination, store: store)
        }
        let residual: ObjectPredicate? = rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest))
        var evaluator = PredicateEvaluator(resolver: RowResolver(store: store, tx: tx))
        let rows = try tx.tree(destination.rowTree)
        for range in ranges {
            var found = false
            try tx.tree(index.tree).forEachUnsafe(in: range) { key, value in
                guard let pk = IndexKeys.int64Component(key, at: key.count - 9), let code = IndexKeys.code(from: value),
                      let info = store.model.infosByCode[code] else {
                    throw StoreError.corruptRow(location: index.tree, detail: "malformed entry")
                }
                for filter in keyFilters where try !filter.matches(key) { return true }
                guard let residual else {
                    found = true
                    return false
                }
                guard let bytes = try rows.get(IndexKeys.rowKey(pk)) else {
                    throw StoreError.corruptRow(location: index.tree, detail: "entry for missing row \(pk)")
                }
                let row = try RowCodec.decode(bytes, context: "\(destination.rowTree)/\(pk)")
                store.rowCache.noteRowsRead(1)
                let member = RowSubject(subjectID: ObjectID(info: info, store: store.identifier, key: pk), entity: info, row: row,
                                        store: store, tx: tx)
                found = try evaluator.evaluate(residual, member)
                return !found
            }
            if found { return true }
        }
        return false
    }
}

extension ObjectPredicate {
    /// The predicate with `$variable.path` replaced by `path` (evaluated on the member itself).
    func replacingVariable(_ variable: String) -> ObjectPredicate {
        switch self {
        case .true, .false: return self
        case .and(let parts): return .and(parts.map { $0.replacingVariable(variable) })
        case .or(let parts): return .or(parts.map { $0.replacingVariable(variable) })
        case .not(let part): return .not(part.replacingVariable(variable))
        case .comparison(var comparison):
            comparison.left = comparison.left.replacingVariable(variable)
            comparison.right = comparison.right.replacingVariable(variable)
            return .comparison(comparison)
        }
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
            let operatorCost = [.like, .matches, .contains, .endsWith].contains(comparison.op) ? 4 : 1
            let quantifier = comparison.modifier == .direct ? 0 : 40
            return operatorCost + quantifier + comparison.left.cost + comparison.right.cost
        }
    }
}

extension PredicateExpression {
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
