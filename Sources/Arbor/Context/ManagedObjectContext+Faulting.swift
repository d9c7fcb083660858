import Foundation

extension ManagedObjectContext {
    /// The current target of a to-one relationship.
    func toOneTarget(_ object: ManagedObject, _ relationship: EntityInfo.Relationship) -> ObjectID? {
        currentValue(object, slot: relationship.slot).reference
    }

    /// Loads a fault's row (from the row cache or one point lookup) and calls `awakeFromFetch`.
    /// - Throws: `ContextError.objectNotFound` when the row is gone; store errors.
    func fulfill(_ object: ManagedObject) throws {
        guard object.isFaultState, !object.insertedFlag else { return }
        // A fault a fetch left holding its row fires with it (unless rows must be fresh: a
        // staleness interval).
        if object.hasCommittedValues, parent == nil, stalenessInterval < 0 {
            object.isFaultState = false
            object.awakeFromFetch()
            return
        }
        if let parent {
            try fulfillFromParent(object, parent: parent)
            object.awakeFromFetch()
            return
        }
        // A temporary ID names an object inserted in some context and never saved: no row.
        guard !object.objectID.isTemporaryID else { throw ContextError.objectNotFound(object.objectID) }
        let store = try store(for: object.objectID)
        retainCachedRow(object, in: store)
        store.storage.objectRowCache?.noteFaultFired()
        guard let row = try store.storage.row(for: object.objectID, maxAge: stalenessInterval < 0 ? nil : stalenessInterval) else {
            throw ContextError.objectNotFound(object.objectID)
        }
        try apply(row, to: object, from: store)
        object.awakeFromFetch()
    }

    /// Makes `row` the object's committed state. The object keeps the row's columns as they
    /// are (shared with the fetch and the row cache); references become IDs when read.
    /// Without `firing`, the object stays a fault that fires with this row (no read).
    /// - Throws: `StoreError.corruptRow` when a reference names an entity the model lacks.
    func apply(_ row: StoredRow, to object: ManagedObject, from store: PersistentStore, firing: Bool = true) throws {
        let references = store.references
        if let code = CommittedValues.unknownReference(in: row.columns, references: references) {
            throw StoreError.corruptRow(location: "\(object.info.rowTree)/\(object.objectID.primaryKey)", detail: "unknown entity code \(code)")
        }
        object.loadCommitted(columns: row.columns, references: references, version: row.version)
        if firing { object.isFaultState = false }
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

    /// The current value of attribute `slot`: `currentValue(_:slot:).attributeValue`, with
    /// the common case first — a loaded object without unsaved changes, read from its
    /// committed columns in place (no copy of its committed state, no `PropertyValue`).
    /// - Complexity: O(1), O(length) for a stored string or data column.
    func currentAttribute(_ object: ManagedObject, slot: Int) -> AttributeValue {
        object.storedAttribute(slot) ?? currentValue(object, slot: slot).attributeValue
    }

    /// The current value of a slot (attribute, to-one or order column; or a transient attribute).
    func currentValue(_ object: ManagedObject, slot: Int) -> PropertyValue {
        if let changed = object.changes[slot] { return changed }
        if slot >= object.info.columnCount, let transient = object.info.transientAttribute(slot: slot) {
            return .value(object.committedTransientValue(transient))
        }
        if object.insertedFlag { return .null }
        fulfillQuietly(object)
        guard let values = object.committedValues, slot < values.count else { return .null }
        return values[slot]
    }

    /// The stored (committed) value of a slot, loading the object if needed.
    func committedValue(_ object: ManagedObject, slot: Int) -> PropertyValue {
        if slot >= object.info.columnCount, let transient = object.info.transientAttribute(slot: slot) {
            return .value(object.committedTransientValue(transient))
        }
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
                    stored = try store(for: object.objectID).storage.members(of: relationship, owner: object.objectID)
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
            return try store(for: object.objectID).storage.members(of: relationship, owner: object.objectID)
        } catch {
            lastFaultError = error
            return []
        }
    }
}
