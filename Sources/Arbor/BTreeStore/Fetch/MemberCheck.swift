import ArborEngine

/// A condition on whether an object has a member meeting a predicate, which the planner takes
/// out of a fetch's predicate for the store to answer by its indexes:
/// `SUBQUERY(stopTimes, $x, $x.departureTime BETWEEN …).@count != 0` (or `> 0`: a semi-join)
/// and `… == 0` (or `<= 0`: an anti-join), where the collection is a one-to-many relationship
/// and the subquery's predicate reads only the member (`$x.key`).
///
/// Answered per candidate from its primary key alone, before its row is read when nothing
/// else needs the row:
/// - **probe**: a compound index of the destination led by the inverse foreign key (an index
///   on (stop, departureTime)), one descent per range, stopping at the first entry that
///   passes (`MemberProbePlan`);
/// - **filter**: else the members through the foreign-key index, their row bytes filtered in
///   their pages, stopping at the first member that passes (`RowFilter`).
///
/// Conditions of other shapes (inside an OR, over a many-to-many relationship, mentioning the
/// owner) stay in the residual, where the evaluator reads the members one by one.
final class MemberCheck {
    enum Access {
        case probe(MemberProbePlan)
        case filter(RowFilter)
    }

    let relationship: EntityInfo.Relationship
    /// The subquery's predicate on the member itself (`$x.key` as `key`).
    let predicate: ObjectPredicate
    /// Whether a member must exist (`!= 0`, `> 0`) or must not (`== 0`, `<= 0`).
    let wantsMember: Bool
    let access: Access

    /// The check `conjunct` states on objects of `info`; nil when it is not one of the shapes
    /// above or no index serves it.
    init?(_ conjunct: ObjectPredicate, on info: EntityInfo, store: BTreeStore) {
        guard case .comparison(let comparison) = conjunct, comparison.modifier == .direct,
              case .aggregate(.count, let collection, nil) = comparison.left,
              case .subquery(.keyPath(let path), let variable, let inner) = collection, path.count == 1,
              case .constant(.int(0)) = comparison.right,
              [.notEqual, .greater, .equal, .lessOrEqual].contains(comparison.op),
              let relationship = info.relationship(named: path[0]), relationship.kind == .oneToMany,
              let destination = store.model.info(named: relationship.destinationName),
              destination.inverse(of: relationship)?.foreignKeyTree != nil else { return nil }
        let own = inner.replacingVariable(variable)
        guard !own.mentions(variable) else { return nil }
        if let probe = MemberProbePlan(relationship, predicate: own, store: store) {
            access = .probe(probe)
        } else if let filter = RowFilter(own, info: destination, store: store) {
            access = .filter(filter)
        } else {
            return nil
        }
        self.relationship = relationship
        predicate = own
        wantsMember = comparison.op == .notEqual || comparison.op == .greater
    }

    /// What `explain` shows of the check: `SEMI-JOIN stopTimes PROBE index.StopTime.by_stop_departureTime
    /// (departureTime BETWEEN …) per candidate`, or `ANTI-JOIN … FILTER fk.StopTime.stop …`.
    var description: String {
        let join = wantsMember ? "SEMI-JOIN" : "ANTI-JOIN"
        let condition = PredicateFormatter.summary(predicate)
        switch access {
        case .probe(let plan): return "\(join) \(relationship.description.name) PROBE \(plan.index.tree) (\(condition)) per candidate"
        case .filter: return "\(join) \(relationship.description.name) FILTER the members through their foreign key (\(condition)) per candidate"
        }
    }

    /// Whether the object with primary key `owner` passes, read in `tx`. O(log n) per probe
    /// or member read, stopping at the first member that meets the predicate.
    func passes(owner: Int64, store: BTreeStore, tx: Transaction, evaluator: inout PredicateEvaluator) throws -> Bool {
        let members = OwnerMembers(owner: owner, store: store, tx: tx)
        let exists: Bool
        switch access {
        case .probe(let plan): exists = try members.probeExists(plan, evaluator: &evaluator)
        case .filter(let filter): exists = try members.anyMember(relationship, passes: filter, else: predicate, evaluator: &evaluator)
        }
        return exists == wantsMember
    }
}

extension QueryPlanner {
    /// Takes the member checks out of what `plan` leaves of `predicate` to evaluate.
    /// `predicate` is read only when the plan leaves it whole.
    static func separateMemberChecks(_ plan: inout QueryPlan, predicate: @autoclosure () -> ObjectPredicate?, store: BTreeStore) {
        let residual: ObjectPredicate?
        switch plan.residual {
        case .whole: residual = predicate()
        case .part(let rest): residual = rest
        }
        guard let residual else { return }
        let (checks, rest) = memberChecks(in: residual, on: plan.entity, store: store)
        guard !checks.isEmpty else {
            plan.residual = .part(residual)  // the same, now read: a binding's values are substituted on each read
            return
        }
        plan.memberChecks = checks
        plan.residual = .part(rest)
    }

    /// The member checks among the conjuncts of `predicate`, and the conjuncts left.
    static func memberChecks(in predicate: ObjectPredicate, on info: EntityInfo,
                             store: BTreeStore) -> (checks: [MemberCheck], rest: ObjectPredicate?) {
        var checks: [MemberCheck] = [], rest: [ObjectPredicate] = []
        for part in conjuncts(predicate) {
            if let check = MemberCheck(part, on: info, store: store) { checks.append(check) } else { rest.append(part) }
        }
        return (checks, rest.isEmpty ? nil : rest.count == 1 ? rest[0] : .and(rest))
    }
}
