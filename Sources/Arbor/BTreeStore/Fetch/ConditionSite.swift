import ArborEngine

/// Where a comparison of a stored column with constants finds its column and its value: what
/// stating its column condition needs besides the values of a prepared request's variables.
///
/// Worked out once per conjunct: a prepared request's search of a kept index (see
/// `IndexPlanRecipe`) states its conditions from the sites for each binding, without looking
/// the column up by name or copying the comparison again.
struct ConditionSite: Sendable {
    let slot: Int
    /// The attribute's type; nil for a to-one relationship (its value is a primary key).
    let type: AttributeType?
    /// The root entity code of a to-one relationship's destination.
    let destinationRoot: UInt16?
    /// The operator with the column on its left (`5 < x` is `x > 5`).
    let op: Comparison.Operator
    let options: StringOptions
    /// The other side as written: a constant, a list, an object, or a `$variable`.
    let constant: PredicateExpression
    /// Where the variables of `constant` are among a prepared request's bindings (see
    /// `learnPositions(in:)`): the variable itself first, or each item of a list; -1 for none.
    private var positions: [Int] = []

    /// The site of `comparison` on `info`; nil unless it compares one stored column of the
    /// entity (an attribute or a to-one relationship, unquantified) with something not a key path.
    init?(_ comparison: Comparison, info: EntityInfo, store: BTreeStore) {
        guard comparison.modifier == .direct else { return nil }
        let key: PredicateExpression
        if case .keyPath = comparison.right, !QueryPlanner.isKeyPath(comparison.left) {
            switch comparison.op {
            case .less: op = .greater
            case .lessOrEqual: op = .greaterOrEqual
            case .greater: op = .less
            case .greaterOrEqual: op = .lessOrEqual
            case .equal, .notEqual: op = comparison.op
            default: return nil
            }
            key = comparison.right
            constant = comparison.left
        } else {
            op = comparison.op
            key = comparison.left
            constant = comparison.right
        }
        guard case .keyPath(let path) = key, path.count == 1 else { return nil }
        if let attribute = info.attribute(named: path[0]) {
            slot = attribute.slot
            type = attribute.description.type
            destinationRoot = nil
        } else if let relationship = info.relationship(named: path[0]), relationship.kind == .toOne {
            slot = relationship.slot
            type = nil
            destinationRoot = store.model.info(named: relationship.destinationRoot)?.code
        } else {
            return nil
        }
        options = comparison.options
    }

    /// Notes where this site's variables are among `bindings`: a recipe's site then finds the
    /// values of later bindings of the same prepared request (which share its names) without
    /// comparing names one by one.
    mutating func learnPositions(in bindings: TemplateBindings) {
        func position(_ expression: PredicateExpression) -> Int {
            if case .variable(let name) = expression { return bindings.position(of: name) ?? -1 }
            return -1
        }
        if case .list(let items) = constant { positions = items.map(position) } else { positions = [position(constant)] }
    }

    /// The column condition the comparison states in `store`, with the values of `bindings`
    /// for its variables; nil when it states none usable as an index bound (a nil range bound,
    /// a value the column cannot hold exactly, an operator no range expresses).
    func stated(in store: BTreeStore, bindings: TemplateBindings?) -> QueryPlanner.StatedCondition? {
        /// The value of variable `name`, the variable itself or list item `item` of `constant`.
        func value(of name: String, item: Int) -> PredicateExpression? {
            guard let bindings else { return nil }
            return item < positions.count ? bindings.value(of: name, at: positions[item]) : bindings.value(of: name)
        }
        var constant = self.constant
        if case .variable(let name) = constant, let value = value(of: name, item: 0) { constant = value }
        // Exact until a constant's kind makes tuple order differ from the predicate's (see `QueryPlanner.residual`).
        var exact = options.isEmpty && type != nil
        func tuple(_ expression: PredicateExpression, item: Int = 0) -> TupleValue? {
            switch expression {
            case .variable(let name):
                guard let value = value(of: name, item: item) else { return nil }
                return tuple(value)
            case .constant(let value):
                guard let type else { return nil }
                exact = exact && QueryPlanner.ordersExactly(value, type)
                return QueryPlanner.tupleValue(value, for: type, keys: store.keys)
            case .object(let id):
                guard type == nil, id.storeIdentifier == store.identifier, id.info.rootCode == destinationRoot else { return nil }
                return store.keys.integer(id.primaryKey)
            default: return nil
            }
        }
        let caseFree = options.isEmpty || type == nil
        if type == .string, options == IndexKeys.normalization, case .constant(.string(let text)) = constant {
            switch op {
            case .equal: return .init(slot, .foldedEqual(ValueOrder.fold(text, IndexKeys.normalization)), isExact: false)
            case .beginsWith: return .init(slot, .foldedPrefix(ValueOrder.fold(text, IndexKeys.normalization)), isExact: false)
            default: return nil
            }
        }
        switch op {
        case .equal:
            guard caseFree, let value = tuple(constant) else { return nil }
            return .init(slot, .equal(value), isExact: exact)
        case .in:
            guard caseFree, case .list(let items) = constant else { return nil }
            var values: [TupleValue] = []
            values.reserveCapacity(items.count)
            for (position, item) in items.enumerated() {
                guard let value = tuple(item, item: position) else { return nil }
                values.append(value)
            }
            return .init(slot, .oneOf(ComponentSet(values)), isExact: exact && !items.isEmpty)
        case .less, .lessOrEqual:
            guard caseFree, let value = tuple(constant), !QueryPlanner.isNull(value) else { return nil }
            return .init(slot, .range(lower: nil, upper: (value, op == .lessOrEqual)), isExact: exact)
        case .greater, .greaterOrEqual:
            guard caseFree, let value = tuple(constant), !QueryPlanner.isNull(value) else { return nil }
            return .init(slot, .range(lower: (value, op == .greaterOrEqual), upper: nil), isExact: exact)
        case .between:
            guard caseFree, case .list(let bounds) = constant, bounds.count == 2,
                  let lower = tuple(bounds[0], item: 0), let upper = tuple(bounds[1], item: 1),
                  !QueryPlanner.isNull(lower), !QueryPlanner.isNull(upper) else { return nil }
            return .init(slot, .range(lower: (lower, true), upper: (upper, true)), isExact: exact)
        case .beginsWith:
            guard options.isEmpty, type == .string, case .constant(.string(let prefix)) = constant else { return nil }
            return .init(slot, .prefix(prefix), isExact: true)
        default:
            return nil
        }
    }
}
