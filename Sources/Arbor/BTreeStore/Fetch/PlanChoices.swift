import ArborEngine

/// The index a store chose for each prepared request (see `PreparedFetchRequest`): for the next
/// binding the planner works out only that index's ranges, key filters and residual, instead of
/// weighing every index, the rows named by ID, text and related searches again.
///
/// Only index choices are kept: a scan is chosen again each time (planning is nothing beside
/// it, and other values may give an index), as are rows by ID, text and related searches and
/// unions, whose setup depends on the values. Entries are keyed by the prepared request's
/// identity, at most `capacity` of them (a full cache starts again): a key whose request is gone
/// may be reused by a new one, which then starts from a plan that is still correct — the
/// ranges always come from the predicate being fetched, and rows are still checked against it.
final class PlanChoices: Sendable {
    static let capacity = 512

    private struct Key: Hashable {
        let request: ObjectIdentifier
        let entity: UInt16
    }

    private let choices = Locked<[Key: EntityInfo.Index]>([:])

    func index(for prepared: PreparedPlanKey, entity: EntityInfo) -> EntityInfo.Index? {
        choices.withLock { $0[Key(request: ObjectIdentifier(prepared), entity: entity.code)] }
    }

    func note(_ index: EntityInfo.Index?, for prepared: PreparedPlanKey, entity: EntityInfo) {
        choices.withLock { choices in
            if choices.count >= Self.capacity { choices.removeAll(keepingCapacity: true) }
            choices[Key(request: ObjectIdentifier(prepared), entity: entity.code)] = index
        }
    }
}

extension QueryPlanner {
    /// The access path for a prepared request's `predicate` through the index chosen for an
    /// earlier binding: its ranges, key filters and residual for these values; nil when the
    /// values give the index no range (the plan is then chosen again).
    static func accessPath(_ predicate: ObjectPredicate, for info: EntityInfo, through index: EntityInfo.Index,
                           store: BTreeStore) -> QueryPlan? {
        let parts = conjuncts(predicate)
        let stated = statedConditions(parts, info: info, store: store)
        let conditions = columnConditions(parts, stated)
        guard let (_, ranges, used, exact) = ranges(for: index, conditions) else { return nil }
        var plan = indexPlan(index, ranges, used: used, exact: exact, parts: parts, stated: stated, conditions: conditions, info: info)
        plan.reusedChoice = true
        return plan
    }
}
