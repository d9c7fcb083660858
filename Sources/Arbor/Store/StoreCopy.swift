/// Copies every object of one store into another, empty store of the same model and
/// configuration, through the storage seam (so any kind of store to any other): rows with their
/// attribute values and to-one references, the member order of ordered relationships, and the
/// member lists of many-to-many relationships.
///
/// The copy is one `SaveRequest`, committed in one transaction: the destination holds all of
/// the source or, after an error or a crash, none of it. Objects get new IDs in the destination
/// (its store UUID, and primary keys in the source's key order); references follow them.
///
/// - Complexity: O(n log n) in the objects and members; the request holds every row in memory.
struct StoreCopy {
    private let source: PersistentStore
    /// Each source object's temporary ID in the request, by its source ID.
    private var newIDs: [ObjectID: ObjectID] = [:]
    private(set) var request = SaveRequest()

    /// Reads all of `source` (one snapshot per call of the storage) into `request`.
    /// - Throws: `StoreError` when a row cannot be read or references an object the source
    ///   does not hold.
    init(from source: PersistentStore) throws {
        self.source = source
        let roots = source.model.infos.filter { source.holds($0) && $0.code == $0.rootCode }
        var objects: [ObjectID] = []
        for root in roots {
            try source.storage.forEachKey(root, includesSubentities: true) { key, code in
                guard let info = source.model.infosByCode[code] else {
                    throw StoreError.corruptRow(location: "\(root.rowTree)/\(key)", detail: "unknown entity code \(code)")
                }
                let id = ObjectID(info: info, store: source.identifier, key: key)
                newIDs[id] = ObjectID.makeTemporary(info)
                objects.append(id)
            }
        }
        let rows = try source.storage.rows(for: objects, maxAge: nil)
        for (id, row) in zip(objects, rows) {
            guard let row else { continue }  // deleted since the keys were read
            try copyRow(id, row)
            try copyMembers(id)
        }
    }

    /// Writes the copy into `destination` (a store of the same model and configuration) in one
    /// transaction.
    /// - Throws: `StoreError` (I/O, a read-only destination); nothing is written then.
    func write(into destination: PersistentStore) throws {
        let save = try destination.storage.prepareSave(request)
        do {
            try save.commit()
        } catch {
            save.abort()
            throw error
        }
    }

    private mutating func copyRow(_ id: ObjectID, _ row: StoredRow) throws {
        let values = CommittedValues(columns: row.columns, references: source.references, info: id.info).all
        var columns: [WriteColumn] = []
        columns.reserveCapacity(values.count)
        for value in values {
            switch value {
            case .reference(let target?): columns.append(.reference(try newID(target, from: id)))
            default: columns.append(WriteColumn(value))
            }
        }
        request.inserts.append(SaveRequest.RowWrite(id: try newID(id, from: id), columns: columns, expectedVersion: nil))
    }

    /// The lists a row's columns do not carry: the order of an ordered one-to-many (its members'
    /// to-one columns say who they belong to, not where) and each side of a many-to-many.
    private mutating func copyMembers(_ id: ObjectID) throws {
        let owner = try newID(id, from: id)
        for relationship in id.info.relationships where relationship.kind != .toOne {
            let ordered = relationship.description.isOrdered
            guard relationship.kind == .manyToMany || ordered else { continue }
            let members = try source.storage.members(of: relationship, owner: id).map { try newID($0, from: id) }
            let name = relationship.description.name
            if relationship.kind == .manyToMany {
                request.joinChanges.append(SaveRequest.JoinChange(owner: owner, relationship: name, members: members))
            } else if !members.isEmpty {
                request.orderedLists.append(SaveRequest.OrderedList(owner: owner, relationship: name, members: members))
            }
        }
    }

    private func newID(_ id: ObjectID, from owner: ObjectID) throws -> ObjectID {
        guard let new = newIDs[id] else {
            throw StoreError.corruptRow(location: "\(owner.info.rowTree)/\(owner.primaryKey)",
                                        detail: "references \(id.entityName) \(id.primaryKey), which the store does not hold")
        }
        return new
    }
}
