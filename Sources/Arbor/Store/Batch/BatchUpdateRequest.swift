import Foundation

/// Changes properties of every object of an entity that matches a predicate, straight in the
/// store, without loading objects into a context: Core Data's `NSBatchUpdateRequest`.
///
/// Each property is set to a constant, an `ObjectID` (a to-one relationship), or an
/// `ObjectExpression` of the object's own attributes as they were before the update
/// (`departureTime + 60`). The predicate is planned as a fetch's is. Every index, folded index,
/// foreign key, uniqueness constraint and row version is kept right; the whole request is one
/// transaction, stored completely or not at all.
///
/// Contexts are not told (as in Core Data): merge the result's `changes` into them with
/// `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
///
/// ```swift
/// var request = BatchUpdateRequest(entityName: "StopTime")
/// request.propertiesToUpdate = ["departureTime": .expression(try ObjectExpression(format: "departureTime + 60"))]
/// let result = try context.execute(request)
/// ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [viewContext])
/// ```
public struct BatchUpdateRequest: Sendable {
    /// A property's new value.
    public enum Value: Sendable {
        /// An attribute's value (nil: `.null`).
        case value(AttributeValue)
        /// A to-one relationship's saved target (nil: none).
        case object(ObjectID?)
        /// An attribute's value computed from the object's attributes before the update.
        case expression(ObjectExpression)
    }

    public enum ResultType: Sendable {
        /// The number of objects matched.
        case count
        /// Also the IDs of the objects matched.
        case objectIDs
    }

    public var entityName: String
    /// The objects to change (nil: every object of the entity).
    public var predicate: ObjectPredicate?
    /// Property name → new value. Attributes and to-one relationships only.
    public var propertiesToUpdate: [String: Value] = [:]
    /// Whether objects of sub-entities are changed too (the default).
    public var includesSubentities = true
    public var resultType: ResultType = .count

    public init(entityName: String, predicate: ObjectPredicate? = nil, propertiesToUpdate: [String: Value] = [:]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }
}

/// What a batch update did.
public struct BatchUpdateResult: Sendable {
    /// The number of objects that matched the predicate (each now has the new values).
    public let count: Int
    /// Their IDs in primary-key order, with `.objectIDs` as the result type; nil otherwise.
    public let objectIDs: [ObjectID]?
    /// The objects whose stored values changed, as `updated`: what contexts holding them must
    /// merge (`ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`).
    public let changes: ObjectChanges
}

extension PersistentStoreCoordinator {
    /// Runs a batch update in the store that holds its entity, in one transaction, bypassing
    /// contexts (see `BatchUpdateRequest`).
    ///
    /// - Complexity: the predicate's search, then O(m log n) for m matching rows: rows are
    ///   read and written in key order, a chunk at a time, and each index's changed entries
    ///   applied in key order.
    /// - Throws: `ContextError.unknownEntity`; `ObjectPredicateError` for a predicate that does
    ///   not fit the entity; `ValidationError` naming the property (and, for a value that fails
    ///   on some row, the row's object) when a property is unknown, a to-many relationship or
    ///   read-only, a value does not fit its attribute's type, a required value would become
    ///   nil, an expression fails (overflow, a string in a sum), a relationship's target is not
    ///   stored, or a uniqueness constraint would be broken; `StoreError.noStoreForEntity`,
    ///   `.readOnlyStore`; `.unsupported` when a derived attribute depends on a property updated.
    ///   Nothing is written when it throws.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        let (info, store) = try batchTarget(request.entityName)
        if let predicate = request.predicate { try PredicateChecker(model: managedObjectModel).check(predicate, entity: info) }
        let stale = managedObjectModel.derivations.staleDerivations(.update(keys: Set(request.propertiesToUpdate.keys)), on: info,
                                                                    model: managedObjectModel)
        guard stale.isEmpty else { throw DerivationTable.batchRefusal("a batch update of \(info.name)", stale) }
        return try store.storage.batchUpdate(info, request)
    }

    /// The entity a batch request names and the store holding it.
    func batchTarget(_ entityName: String) throws -> (EntityInfo, PersistentStore) {
        guard let info = managedObjectModel.info(named: entityName) else { throw ContextError.unknownEntity(entityName) }
        guard let store = persistentStores.first(where: { $0.holds(info) }) else { throw StoreError.noStoreForEntity(info.name) }
        return (info, store)
    }
}

extension ManagedObjectContext {
    /// Runs a batch update through the context's coordinator (see
    /// `PersistentStoreCoordinator.execute(_:)`). The context's objects are not changed: merge
    /// the result's `changes`.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }
        return try coordinator.execute(request)
    }
}
