import ArborEngine

/// The index a store chose for each prepared request (see `PreparedFetchRequest`): for the next
/// binding the planner works out only that index's ranges, key filters and residual, instead of
/// weighing every index, the rows named by ID, text and related searches again.
///
/// Only index choices are kept: a scan is chosen again each time (planning is nothing beside
/// it, and other values may give an index), as are rows by ID, text and related searches and
/// unions, whose setup depends on the values. Entries are keyed by the prepared request's
/// identity, at most `capacity` of them (a full list starts again): a key whose request is gone
/// may be reused by a new one, which then starts from a plan that is still correct — the
/// ranges always come from the predicate being fetched, and rows are still checked against it.
///
/// A list searched in order, not a dictionary: an app prepares a handful of requests, comparing
/// two words per entry costs less than hashing a key, and a dictionary keyed by a new type cost
/// a search of every loaded protocol conformance the first time a process opened a store.
final class PlanChoices: Sendable {
    static let capacity = 64

    private struct Choice {
        let request: ObjectIdentifier
        let entity: UInt16
        let index: EntityInfo.Index
    }

    private let choices = Locked<[Choice]>([])

    /// The index chosen for `prepared` on `entity`, if one was. O(choices).
    func index(for prepared: PreparedPlanKey, entity: EntityInfo) -> EntityInfo.Index? {
        let request = ObjectIdentifier(prepared), code = entity.code
        return choices.withLock { choices in
            for choice in choices where choice.request == request && choice.entity == code { return choice.index }
            return nil
        }
    }

    /// Notes `index` as the choice for `prepared` on `entity` (nil forgets it). O(choices).
    func note(_ index: EntityInfo.Index?, for prepared: PreparedPlanKey, entity: EntityInfo) {
        let request = ObjectIdentifier(prepared), code = entity.code
        choices.withLock { choices in
            choices.removeAll { $0.request == request && $0.entity == code }
            guard let index else { return }
            if choices.count >= Self.capacity { choices.removeAll(keepingCapacity: true) }
            choices.append(Choice(request: request, entity: code, index: index))
        }
    }
}

extension QueryPlanner {
    /// The access path for a prepared request's `predicate` through the index chosen for an
    /// earlier binding: its ranges, key filters and residual for these values; nil when the
    /// values give the index no range (the plan is then chosen again). The values are read
    /// from the bindings where the written predicate names them: only the residual's conjuncts
    /// are bound.
    static func accessPath(_ predicate: BoundPredicate, for info: EntityInfo, through index: EntityInfo.Index,
                           store: BTreeStore) -> QueryPlan? {
        guard let written = predicate.written else { return nil }
        let bindings = predicate.bindings
        let parts = conjuncts(written)
        let stated = statedConditions(parts, info: info, store: store, bindings: bindings)
        let conditions = columnConditions(parts, stated, bindings: bindings)
        guard let (_, ranges, used, exact) = ranges(for: index, conditions) else { return nil }
        var plan = indexPlan(index, ranges, used: used, exact: exact, parts: parts, stated: stated, conditions: conditions, info: info,
                             bindings: bindings)
        plan.reusedChoice = true
        return plan
    }
}
