import ArborEngine

/// A stored row seen by a predicate, inside one read transaction.
struct RowSubject: PredicateSubject {
    let subjectID: ObjectID
    let entity: EntityInfo
    /// Nil while the row has not been read: a fetch first checks conditions on to-many
    /// relationships, which read only the relationship's index, and reads the row of a
    /// candidate that passes. A column asked for then reads the row (each time: correct,
    /// though slow, should a condition that needs the row ever be checked first).
    let row: StoredRow?
    let store: BTreeStore
    let tx: Transaction

    private func storedRow() throws -> StoredRow? {
        if let row { return row }
        return try store.readRow(tx, subjectID)
    }

    func attributeValue(slot: Int) throws -> AttributeValue {
        guard let row = try storedRow(), slot < row.columns.count, case .value(let value) = row.columns[slot] else { return .null }
        return value
    }

    func toOneTarget(_ relationship: EntityInfo.Relationship) throws -> ObjectID? {
        guard let row = try storedRow(), relationship.slot < row.columns.count,
              case .reference(let code, let key) = row.columns[relationship.slot] else { return nil }
        return try store.objectID(code: code, key: key, location: entity.rowTree)
    }

    func toManyMembers(_ relationship: EntityInfo.Relationship) throws -> [ObjectID] {
        try store.members(tx, relationship, owner: subjectID.primaryKey)
    }
}

struct RowResolver: SubjectResolver {
    let store: BTreeStore
    let tx: Transaction
    func subject(for id: ObjectID) throws -> PredicateSubject? {
        guard id.storeIdentifier == store.identifier, let row = try store.readRow(tx, id),
              let info = store.model.infosByCode[row.entityCode] else { return nil }
        store.rowCache.noteRowsRead(1)
        return RowSubject(subjectID: ObjectID(info: info, store: store.identifier, key: id.primaryKey), entity: info, row: row,
                          store: store, tx: tx)
    }
}
