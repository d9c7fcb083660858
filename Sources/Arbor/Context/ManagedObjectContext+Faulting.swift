import Foundation

extension ManagedObjectContext {
    /// Loads a fault's row (from the row cache or one point lookup) and calls `awakeFromFetch`.
    /// - Throws: `ContextError.objectNotFound` when the row is gone; store errors.
    func fulfill(_ object: ManagedObject) throws {
        guard object.isFaultState, !object.insertedFlag else { return }
        if let parent {
            try fulfillFromParent(object, parent: parent)
            object.awakeFromFetch()
            return
        }
        // A temporary ID names an object inserted in some context and never saved: no row.
        guard !object.objectID.isTemporaryID else { throw ContextError.objectNotFound(object.objectID) }
        let store = try store(for: object.objectID)
        store.rowCache.noteFaultFired()
        guard let row = try store.row(for: object.objectID, maxAge: stalenessInterval < 0 ? nil : stalenessInterval) else {
            throw ContextError.objectNotFound(object.objectID)
        }
        try apply(row, to: object, from: store)
        object.awakeFromFetch()
    }

    /// Makes `row` the object's committed state.
    func apply(_ row: StoredRow, to object: ManagedObject, from store: PersistentStore) throws {
        var values: [PropertyValue] = []
        values.reserveCapacity(row.columns.count)
        for column in row.columns {
            switch column {
            case .value(let value): values.append(.value(value))
            case .reference(let code, let key):
                // The location is built only when the reference is bad (no string per row).
                values.append(.reference(try store.objectID(code: code, key: key, location: "\(object.info.rowTree)/\(object.objectID.primaryKey)")))
            }
        }
        // References are stored in reference columns only; a null there reads as a nil reference.
        for relationship in object.info.relationships where relationship.kind == .toOne && relationship.slot < values.count {
            if case .value(.null) = values[relationship.slot] { values[relationship.slot] = .reference(nil) }
        }
        object.committedValues = values
        object.committedVersion = row.version
        object.isFaultState = false
    }

    /// Loads the object if needed, recording (not throwing) a failure.
    @discardableResult
    func fulfillQuietly(_ object: ManagedObject) -> Bool {
        do {
            try fulfill(object)
            return true
        } catch {
            lastFaultError = error
            return false
        }
    }

    /// The current value of a stored slot (attribute, to-one or order column).
    func currentValue(_ object: ManagedObject, slot: Int) -> PropertyValue {
        if let changed = object.changes[slot] { return changed }
        if object.insertedFlag { return .null }
        fulfillQuietly(object)
        guard let values = object.committedValues, slot < values.count else { return .null }
        return values[slot]
    }

    /// The stored (committed) value of a slot, loading the object if needed.
    func committedValue(_ object: ManagedObject, slot: Int) -> PropertyValue {
        if object.insertedFlag { return .null }
        fulfillQuietly(object)
        guard let values = object.committedValues, slot < values.count else { return .null }
        return values[slot]
    }

    /// The current members of a to-many relationship, loading them on first access.
    func members(_ object: ManagedObject, _ relationship: EntityInfo.Relationship) -> [ObjectID] {
        var state = object.toMany[relationship.slot] ?? ToManyState()
        if state.current == nil {
            var stored: [ObjectID] = []
            if let parent, !object.insertedFlag {
                stored = parentMembers(object, relationship, parent: parent)
            } else if !object.insertedFlag && !object.objectID.isTemporaryID {
                do {
                    stored = try store(for: object.objectID).members(of: relationship, owner: object.objectID)
                } catch {
                    lastFaultError = error
                }
            }
            state.materialize(stored: stored)
            object.toMany[relationship.slot] = state
        }
        return state.current ?? []
    }

    /// The stored members of a to-many relationship (ignoring unsaved changes).
    func committedMembers(_ object: ManagedObject, _ relationship: EntityInfo.Relationship) -> [ObjectID] {
        if let committed = object.toMany[relationship.slot]?.committed { return committed }
        if object.insertedFlag { return [] }
        if let parent { return parentMembers(object, relationship, parent: parent) }
        if object.objectID.isTemporaryID { return [] }
        do {
            return try store(for: object.objectID).members(of: relationship, owner: object.objectID)
        } catch {
            lastFaultError = error
            return []
        }
    }
}
