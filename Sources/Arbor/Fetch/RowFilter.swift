import ArborEngine

/// A conjunction of conditions on a row's own attributes, checked on the row's encoded bytes:
/// only the columns it names are decoded, and no predicate is walked per row. Made only when
/// every conjunct is a comparison that tuple order answers exactly (as an index range would),
/// so its answer is the evaluator's. Members of a SUBQUERY read through a foreign-key index
/// are checked this way.
struct RowFilter {
    /// The entity whose column layout the slots follow; rows of other entities are not filtered.
    let entityCode: UInt16
    /// Column slots, ascending (repeated for several conditions on one column), and the
    /// condition on each.
    private let slots: [Int]
    private let conditions: [QueryPlanner.Condition]
    /// The store's key format: conditions hold values in it.
    private let keys: IndexKeys

    init?(_ predicate: ObjectPredicate, info: EntityInfo, store: PersistentStore) {
        var tests: [(slot: Int, condition: QueryPlanner.Condition)] = []
        for conjunct in QueryPlanner.conjuncts(predicate) {
            guard let (slot, condition) = QueryPlanner.exactCondition(conjunct, info: info, store: store) else { return nil }
            tests.append((slot, condition))
        }
        guard !tests.isEmpty else { return nil }
        tests.sort { $0.slot < $1.slot }
        entityCode = info.code
        keys = store.keys
        slots = tests.map(\.slot)
        conditions = tests.map(\.condition)
    }

    /// Whether the row meets every condition; nil when the bytes cannot be filtered (a row of
    /// another entity, an older format, a malformed row): the caller then decodes the row and
    /// evaluates the predicate, which reports any damage.
    /// - Complexity: O(bytes before the last column named).
    func matches(_ bytes: UnsafeRawBufferPointer) throws -> Bool? {
        try RowCodec.testColumns(slots, of: bytes, entity: entityCode) { index, value in
            QueryPlanner.matches(keys.tupleValue(value), conditions[index])
        }
    }
}
