/// What one save of a context writes: its changed objects in the order they are saved, and one
/// `SaveRequest` for each store they live in. Built from the objects' changes before any store
/// is touched; the context then hands the requests to its coordinator (`commit(_:)`).
struct ContextSavePlan {
    /// The changed objects: inserted ones first, in creation order (so primary keys follow
    /// it), then the others by primary key.
    let objects: [ManagedObject]
    /// One request per store, in a fixed order (by store UUID) that every context shares, so
    /// that two saves over the same stores take their write locks in the same order.
    private(set) var requests: [(store: PersistentStore, request: SaveRequest)] = []
    private var requestIndex: [ObjectIdentifier: Int] = [:]
    private let mergePolicy: MergePolicy
    private let coordinator: PersistentStoreCoordinator

    /// The plan for `context`'s changes (call it after validation).
    /// - Throws: `StoreError` when an object's store is gone; errors firing an updated fault.
    init(_ context: ManagedObjectContext, coordinator: PersistentStoreCoordinator) throws {
        mergePolicy = context.mergePolicy
        self.coordinator = coordinator
        objects = context.changed.values.map { ($0.objectID.isTemporaryID ? 0 : 1, $0.objectID.primaryKey, $0) }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        for object in objects {
            try addRow(of: object, context: context)
            guard !object.deletedFlag else { continue }
            for relationship in object.info.relationships where relationship.kind != .toOne {
                guard let state = object.toMany[relationship.slot], state.isChanged else { continue }
                try addMembers(of: object.objectID, relationship, state)
            }
        }
        requests.sort { $0.store.identifier.uuidString < $1.store.identifier.uuidString }
        requests.removeAll { $0.request.isEmpty }
    }

    /// Edits the request of the store that holds `id`, in place (no copy of it).
    private mutating func edit(_ id: ObjectID, _ body: (inout SaveRequest) -> Void) throws {
        let store = try coordinator.store(for: id)
        let key = ObjectIdentifier(store)
        if requestIndex[key] == nil {
            requestIndex[key] = requests.count
            requests.append((store, SaveRequest(mergePolicy: mergePolicy)))
        }
        if let index = requestIndex[key] { body(&requests[index].request) }
    }

    /// The row write or delete of `object`, if its row changes.
    private mutating func addRow(of object: ManagedObject, context: ManagedObjectContext) throws {
        let id = object.objectID
        if object.deletedFlag {
            // An object inserted and deleted before any save never reached the store.
            guard !object.insertedFlag && !id.isTemporaryID else { return }
            try edit(id) { $0.deletes.append(SaveRequest.RowDelete(id: id, expectedVersion: object.committedVersion)) }
        } else if object.insertedFlag {
            let columns = Self.columns(of: object, context: context)
            try edit(id) { $0.inserts.append(SaveRequest.RowWrite(id: id, columns: columns, expectedVersion: nil)) }
        } else if object.hasStoredChanges {
            try context.fulfill(object)
            var write = SaveRequest.RowWrite(id: id, columns: Self.columns(of: object, context: context),
                                             expectedVersion: object.committedVersion)
            if mergePolicy != .error {
                // What the store needs to merge a conflict property by property.
                write.changedSlots = object.changes.slots.filter { $0 < object.info.columnCount }
                write.readColumns = object.committedValues.map { $0.all.map(WriteColumn.init) }
            }
            try edit(id) { $0.updates.append(write) }
        }
    }

    /// The change of one to-many relationship of `owner`: ordered one-to-many lists as appended
    /// members or the whole list (plain one-to-many members change through their own to-one
    /// column), many-to-many lists as the whole list or as members added and removed.
    private mutating func addMembers(of owner: ObjectID, _ relationship: EntityInfo.Relationship, _ state: ToManyState) throws {
        let name = relationship.description.name
        let ordered = relationship.description.isOrdered
        if relationship.kind == .oneToMany {
            guard ordered else { return }
            if let appended = state.appendedMembers {
                guard !appended.isEmpty else { return }
                try edit(owner) { $0.orderedAppends.append(SaveRequest.OrderedAppend(owner: owner, relationship: name, members: appended)) }
            } else if let current = state.current {
                try edit(owner) { $0.orderedLists.append(SaveRequest.OrderedList(owner: owner, relationship: name, members: current)) }
            }
            return
        }
        var change = SaveRequest.JoinChange(owner: owner, relationship: name, members: nil)
        if let current = state.current {
            if state.committed == nil || (ordered && state.appendedMembers == nil) {
                change.members = current
            } else {
                let committed = state.committed ?? []
                let currentSet = Set(current), committedSet = Set(committed)
                change.added = current.filter { !committedSet.contains($0) }
                change.removed = committed.filter { !currentSet.contains($0) }
            }
        } else {
            change.added = state.added
            change.removed = Array(state.removed)
        }
        try edit(owner) { $0.joinChanges.append(change) }
    }

    private static func columns(of object: ManagedObject, context: ManagedObjectContext) -> [WriteColumn] {
        (0..<object.info.columnCount).map { WriteColumn(context.currentValue(object, slot: $0)) }
    }
}

extension WriteColumn {
    /// A property's value as a column: a nil reference and an invalid value (which validation
    /// reports before any write) are null.
    init(_ value: PropertyValue) {
        switch value {
        case .value(let value): self = .value(value)
        case .reference(let target): self = target.map(WriteColumn.reference) ?? .value(.null)
        case .invalid: self = .value(.null)
        }
    }
}
