import ArborEngine

/// The index a store chose for each prepared request (see `PreparedFetchRequest`), with the
/// recipe of its search (see `IndexPlanRecipe`): for the next binding the planner builds that
/// index's ranges, key filters and residual from the recipe, or works them out again when the
/// values need another layout, instead of weighing every index, the rows named by ID, text and
/// related searches again.
///
/// Only index choices are kept: a scan is chosen again each time (planning is nothing beside
/// it, and other values may give an index), as are rows by ID, text and related searches and
/// unions, whose setup depends on the values. Entries hold their prepared request's key, so a
/// key stays unique while its entry lives; at most `capacity` of them (a full list starts again).
///
/// A list searched in order, not a dictionary: an app prepares a handful of requests, comparing
/// two words per entry costs less than hashing a key, and a dictionary keyed by a new type cost
/// a search of every loaded protocol conformance the first time a process opened a store.
final class PlanChoices: Sendable {
    static let capacity = 64

    struct Choice: Sendable {
        fileprivate let request: PreparedPlanKey
        fileprivate let entity: UInt16
        let index: EntityInfo.Index
        /// How the last binding searched the index; nil when it could not be recorded.
        let recipe: IndexPlanRecipe?
    }

    private let choices = Locked<[Choice]>([])

    /// The choice for `prepared` on `entity`, if one was made. O(choices).
    func choice(for prepared: PreparedPlanKey, entity: EntityInfo) -> Choice? {
        let code = entity.code
        return choices.withLock { choices in
            for choice in choices where choice.request === prepared && choice.entity == code { return choice }
            return nil
        }
    }

    /// Notes `index` (searched as `recipe` says) as the choice for `prepared` on `entity`
    /// (nil forgets it). O(choices).
    func note(_ index: EntityInfo.Index?, recipe: IndexPlanRecipe? = nil, for prepared: PreparedPlanKey, entity: EntityInfo) {
        let code = entity.code
        choices.withLock { choices in
            choices.removeAll { $0.request === prepared && $0.entity == code }
            guard let index else { return }
            if choices.count >= Self.capacity { choices.removeAll(keepingCapacity: true) }
            choices.append(Choice(request: prepared, entity: code, index: index, recipe: recipe))
        }
    }
}

extension QueryPlanner {
    /// The access path for a prepared request's `predicate` through the index chosen for an
    /// earlier binding: its ranges, key filters and residual for these values; nil when the
    /// values give the index no range (the plan is then chosen again). The values are read
    /// from the bindings where the written predicate names them: only the residual's conjuncts
    /// are bound. With bindings, also the recipe of the search, for the next binding.
    static func accessPath(_ predicate: BoundPredicate, for info: EntityInfo, through index: EntityInfo.Index,
                           store: BTreeStore) -> (plan: QueryPlan, recipe: IndexPlanRecipe?)? {
        guard let written = predicate.written else { return nil }
        let bindings = predicate.bindings
        let parts = conjuncts(written)
        let sites = parts.map { part -> ConditionSite? in
            guard case .comparison(let comparison) = part else { return nil }
            return ConditionSite(comparison, info: info, store: store)
        }
        let stated = sites.map { $0?.stated(in: store, bindings: bindings) }
        let conditions = columnConditions(parts, stated, bindings: bindings)
        guard let layout = IndexLayout(index, conditions), let ranges = layout.ranges(of: index, stated) else { return nil }
        var plan = indexPlan(index, ranges, used: layout.used.map(conditions.label), exact: layout.exact, parts: parts, stated: stated,
                             conditions: conditions, info: info, bindings: bindings)
        plan.reusedChoice = true
        let recipe = bindings.map { bindings in
            IndexPlanRecipe(index: index, parts: parts, sites: sites.map { $0.map { var site = $0; site.learnPositions(in: bindings); return site } },
                            stated: stated, layout: layout, filters: keyFilterSources(for: index, conditions, skipping: layout.exact))
        }
        return (plan, recipe)
    }
}
