import ArborEngine

/// Order and limit: the last step of a plan.
///
/// A fetch with a row limit need not read every match. Without a sort, the walk stops once
/// `limit` rows matched. With a sort on one attribute, an index whose entries arrive in that
/// order is walked instead, and the walk stops once `count` rows matched and the rows tied
/// with the last one are in (the context sorts what it gets, so the ties decide nothing):
/// - a predicate no index narrows walks an index led by the sort attribute (`ORDER BY name
///   LIMIT 5` over every stop);
/// - one range under equalities on the leading columns is itself in sort order when the sort
///   column comes next (a stop's departures after a time, sorted by time; the geo box does not
///   qualify: its range is over longitude, then latitude).
extension QueryPlanner {
    /// The whole plan of `query`: the access path for its predicate, then its order and limit.
    static func plan(_ query: StoreQuery, store: BTreeStore) -> QueryPlan {
        var plan = preparedPlan(query, store: store) ?? plan(query.predicate, for: query.entity, store: store)
        guard let rowLimit = query.rowLimit else { return plan }
        if query.sortDescriptors.isEmpty {
            plan.limit = rowLimit
        } else if query.sortDescriptors.count == 1, let sort = query.sortDescriptors.first, sort.options.isEmpty,
                  !sort.keyPath.contains("."), let attribute = query.entity.attribute(named: sort.keyPath) {
            order(&plan, by: attribute, ascending: sort.ascending, count: rowLimit, predicate: query.predicate, store: store)
        }
        return plan
    }

    /// For a prepared request: the plan through the index an earlier binding chose, when these
    /// values give it a range (from the recipe of the last binding when they fit it); otherwise
    /// nil, after noting the index the new plan uses (if any).
    private static func preparedPlan(_ query: StoreQuery, store: BTreeStore) -> QueryPlan? {
        guard let prepared = query.prepared, query.boundPredicate.written != nil else { return nil }
        let entity = query.entity
        if let choice = store.planChoices.choice(for: prepared, entity: entity) {
            if let recipe = choice.recipe, let bindings = query.boundPredicate.bindings,
               var plan = recipe.plan(bindings, for: entity, store: store) {
                separateMemberChecks(&plan, predicate: query.predicate, store: store)
                return plan
            }
            if let found = accessPath(query.boundPredicate, for: entity, through: choice.index, store: store) {
                store.planChoices.note(choice.index, recipe: found.recipe, for: prepared, entity: entity)
                var plan = found.plan
                separateMemberChecks(&plan, predicate: query.predicate, store: store)
                return plan
            }
        }
        let plan = plan(query.predicate, for: entity, store: store)
        if case .index(let index, _) = plan.access { store.planChoices.note(index, for: prepared, entity: entity) }
        return plan
    }

    /// Makes `plan` an ordered walk, when some index gives its rows in the sort's order.
    private static func order(_ plan: inout QueryPlan, by attribute: EntityInfo.Attribute, ascending: Bool, count: Int,
                              predicate: ObjectPredicate?, store: BTreeStore) {
        let info = plan.entity
        let label = "ORDER BY \(attribute.description.name)\(ascending ? "" : " DESC") LIMIT \(count)"
        switch plan.access {
        case .scan:
            guard let index = info.indexes.first(where: { $0.slots.first == attribute.slot && Self.keepsValueOrder($0) }) else { return }
            plan = QueryPlan(entity: info, access: .index(index, [KeyRange.all]), usedConditions: [.text(label)])
            plan.ordering = QueryPlan.OrderedWalk(ascending: ascending, count: count, position: 0, label: nil)
        case .index(let index, let ranges):
            guard ranges.count == 1, Self.keepsValueOrder(index), let predicate else { return }
            let equalities = Set(conjuncts(predicate).compactMap { conjunct -> Int? in
                guard case .comparison(let comparison) = conjunct, let (slot, condition) = condition(comparison, info: info, store: store),
                      case .equal = condition else { return nil }
                return slot
            })
            let position = index.slots.prefix { equalities.contains($0) }.count
            guard position < index.slots.count, index.slots[position] == attribute.slot else { return }
            plan.ordering = QueryPlan.OrderedWalk(ascending: ascending, count: count, position: position, label: label)
        case .union, .rows, .related, .text:
            return
        }
    }

    /// Whether an index's entries are in the order of its columns' values (not folded strings,
    /// not terms, not a foreign key's owner-then-order entries).
    private static func keepsValueOrder(_ index: EntityInfo.Index) -> Bool {
        !index.isNormalized && !index.isText && !index.isForeignKey
    }
}
