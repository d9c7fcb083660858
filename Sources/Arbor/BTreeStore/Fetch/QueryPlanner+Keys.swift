import ArborEngine

/// Access paths that end in rows looked up by primary key: the rows a predicate names itself
/// (`SELF IN %@`), and the rows related to what an index of another entity finds
/// (`stop.stopID IN %@`, `ANY stopTimes.departureTime == %@`).
extension QueryPlanner {
    /// Primary keys to look up, ascending, each with the entity code the predicate names it
    /// with (a key may come twice, with two codes: only the row's own code can match).
    struct RowKeys {
        private(set) var keys: [Int64] = []
        private(set) var codes: [UInt16] = []

        init(_ pairs: [(key: Int64, code: UInt16)]) {
            let sorted = pairs.sorted { ($0.key, $0.code) < ($1.key, $1.code) }
            keys.reserveCapacity(sorted.count)
            codes.reserveCapacity(sorted.count)
            for pair in sorted where keys.last != pair.key || codes.last != pair.code {
                keys.append(pair.key)
                codes.append(pair.code)
            }
        }

        var count: Int { keys.count }

        /// Whether row `key` was named with entity code `code`.
        /// - Complexity: O(log n).
        func contains(_ key: Int64, code: UInt16) -> Bool {
            var low = 0, high = keys.count
            while low < high {
                let middle = (low + high) >> 1
                if (keys[middle], codes[middle]) < (key, code) { low = middle + 1 } else { high = middle }
            }
            return low < keys.count && keys[low] == key && codes[low] == code
        }
    }

    /// A search of a related entity's index whose entries lead, through a relationship, to
    /// the fetched rows.
    final class RelatedSearch {
        /// The fetched entity's relationship the key path starts with.
        let relationship: EntityInfo.Relationship
        /// The destination's entity and the plan that searches its index.
        let destination: EntityInfo
        let inner: QueryPlan
        /// The tree that links what `inner` finds to the fetched rows: the relationship's
        /// foreign-key index (to-one), the members' row tree (one-to-many, whose rows hold
        /// the reference back) or the join tree (many-to-many).
        let link: String

        init(relationship: EntityInfo.Relationship, destination: EntityInfo, inner: QueryPlan, link: String) {
            self.relationship = relationship
            self.destination = destination
            self.inner = inner
            self.link = link
        }
    }

    /// The rows `SELF == %@` or `SELF IN %@` names (the first such conjunct), as keys of this
    /// store and hierarchy, and the conjunct's position. IDs of other stores, other
    /// hierarchies and unsaved objects name no row here; a list holding something other than
    /// constants and objects is not planned.
    static func selfKeys(_ parts: [ObjectPredicate], info: EntityInfo, store: BTreeStore) -> (RowKeys, position: Int)? {
        for (position, conjunct) in parts.enumerated() {
            guard case .comparison(let comparison) = conjunct, comparison.modifier == .direct, comparison.options.isEmpty else { continue }
            var items: [PredicateExpression]
            switch (comparison.left, comparison.op, comparison.right) {
            case (.evaluatedObject, .equal, .object(let id)), (.object(let id), .equal, .evaluatedObject): items = [.object(id)]
            case (.evaluatedObject, .in, .list(let list)): items = list
            default: continue
            }
            var pairs: [(key: Int64, code: UInt16)] = []
            pairs.reserveCapacity(items.count)
            var plannable = true
            for item in items {
                switch item {
                case .object(let id):
                    if id.storeIdentifier == store.identifier, id.info.rootCode == info.rootCode { pairs.append((id.primaryKey, id.info.code)) }
                case .constant: continue  // never equal to an object
                default: plannable = false
                }
            }
            if plannable { return (RowKeys(pairs), position) }
        }
        return nil
    }

    /// A search through a relationship for the first conjunct that compares an attribute of a
    /// related object with constants (`stop.stopID IN %@` through a to-one, `ANY
    /// stopTimes.departureTime BETWEEN …` through a to-many), where the destination has an
    /// index for it; with whether the search answers the conjunct exactly, and its position.
    /// Conditions that a nil value meets (`== nil`, an IN list holding nil) are not planned:
    /// an object without the related object would meet them and is found by no search.
    /// `score`: how selective the condition is, on the scale of `ranges(for:_:)` (a search
    /// through a relationship is chosen over one of the entity's own indexes that scores less).
    static func relatedSearch(_ parts: [ObjectPredicate], info: EntityInfo, store: BTreeStore)
        -> (RelatedSearch, exact: Bool, position: Int, score: Int)? {
        for (position, conjunct) in parts.enumerated() {
            guard case .comparison(let comparison) = conjunct else { continue }
            var inner = comparison
            inner.modifier = .direct
            let pathOnLeft: Bool
            switch (comparison.left, comparison.right) {
            case (.keyPath(let path), _) where path.count == 2:
                pathOnLeft = true
                inner.left = .keyPath([path[1]])
            case (_, .keyPath(let path)) where path.count == 2 && !isKeyPath(comparison.left):
                pathOnLeft = false
                inner.right = .keyPath([path[1]])
            default: continue
            }
            guard case .keyPath(let path) = pathOnLeft ? comparison.left : comparison.right,
                  let relationship = info.relationship(named: path[0]),
                  let destination = store.model.info(named: relationship.destinationName),
                  destination.attribute(named: path[1]) != nil else { continue }
            // A to-one path compares directly (ANY is the same there); a to-many one needs ANY.
            switch (relationship.kind, comparison.modifier) {
            case (.toOne, .direct), (.toOne, .any), (.oneToMany, .any), (.manyToMany, .any): break
            default: continue
            }
            guard let (_, condition) = QueryPlanner.condition(inner, info: destination, store: store), !meetsNull(condition) else { continue }
            let plan = QueryPlanner.accessPath(.comparison(inner), for: destination, store: store)
            guard case .index = plan.access else { continue }
            let link: String?
            switch relationship.kind {
            case .toOne: link = relationship.foreignKeyTree
            case .oneToMany: link = destination.rowTree
            case .manyToMany: link = relationship.joinTree
            }
            guard let link else { continue }
            var exact = false
            if case .part(nil) = plan.residual { exact = true }
            let score: Int
            switch condition {
            case .equal, .foldedEqual: score = 4
            case .oneOf: score = 3
            case .range, .prefix, .foldedPrefix: score = 2
            }
            return (RelatedSearch(relationship: relationship, destination: destination, inner: plan, link: link), exact, position, score)
        }
        return nil
    }

    /// Whether a nil value meets `condition`.
    static func meetsNull(_ condition: Condition) -> Bool {
        switch condition {
        case .equal(let value): return isNull(value)
        case .oneOf(let values): return values.values.contains(where: isNull)
        case .range, .prefix, .foldedEqual, .foldedPrefix: return false
        }
    }

    /// `parts` without the conjunct at `position`, as one predicate (nil: nothing left).
    static func remainder(_ parts: [ObjectPredicate], without position: Int) -> ObjectPredicate? {
        var rest = parts
        rest.remove(at: position)
        return rest.isEmpty ? nil : (rest.count == 1 ? rest[0] : .and(rest))
    }
}
