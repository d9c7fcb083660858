import Foundation

/// Deletes every object of an entity that matches a predicate, or the objects given by ID,
/// straight in the store: Core Data's `NSBatchDeleteRequest`.
///
/// The model's delete rules hold as a context's delete applies them: `cascade` deletes the
/// related objects too (through the foreign-key indexes and join trees, as deep as the rules
/// go), `nullify` clears the relationship's inverse on related objects that stay, `deny`
/// refuses the whole request while a related object would stay, naming the object, and
/// `noAction` leaves related objects as they are. The whole request is one transaction.
///
/// Contexts are not told (as in Core Data): merge the result's `changes` into them with
/// `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
///
/// ```swift
/// let request = BatchDeleteRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopID BEGINSWITH 'old:'"))
/// let result = try context.execute(request)      // the stops and, by cascade, their stop times
/// ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [viewContext])
/// ```
public struct BatchDeleteRequest: Sendable {
    public enum ResultType: Sendable {
        /// The number of objects the request named.
        case count
        /// Also their IDs.
        case objectIDs
    }

    enum Source: Sendable {
        case predicate(ObjectPredicate?)
        case objectIDs([ObjectID])
    }

    public let entityName: String
    let source: Source
    /// Whether objects of sub-entities match too (the default; with a predicate only).
    public var includesSubentities = true
    public var resultType: ResultType = .count

    /// Deletes the objects of `entityName` (and its sub-entities) that match `predicate`
    /// (nil: all of them).
    public init(entityName: String, predicate: ObjectPredicate? = nil) {
        self.entityName = entityName
        source = .predicate(predicate)
    }

    /// Deletes the objects of a fetch request: its entity, predicate and sub-entity choice
    /// (its sort, limit and offset do not apply).
    public init(fetchRequest: FetchRequest) {
        self.init(entityName: fetchRequest.entityName, predicate: fetchRequest.predicate)
        includesSubentities = fetchRequest.includesSubentities
    }

    /// Deletes the objects with these IDs (of one entity's hierarchy and one store; IDs of
    /// objects not stored are skipped).
    public init(objectIDs: [ObjectID]) {
        entityName = objectIDs.first?.info.name ?? ""
        source = .objectIDs(objectIDs)
    }
}

/// What a batch delete did.
public struct BatchDeleteResult: Sendable {
    /// The number of objects the request named that were deleted (not those deleted by cascade).
    public let count: Int
    /// Their IDs, with `.objectIDs` as the result type; nil otherwise.
    public let objectIDs: [ObjectID]?
    /// Every object deleted (the named ones and those a cascade reached), as `deleted`, and the
    /// objects that stay but lost a related object (a nullified relationship, a to-many that
    /// lost a member), as `updated`.
    public let changes: ObjectChanges
}

extension PersistentStoreCoordinator {
    /// Runs a batch delete in the store that holds its entity, in one transaction, bypassing
    /// contexts (see `BatchDeleteRequest`).
    ///
    /// - Complexity: the predicate's search, then O((d + r) log n) for d deleted rows and r
    ///   related rows visited, each tree's entries removed in key order.
    /// - Throws: `ContextError.unknownEntity`; `ObjectPredicateError`; `ValidationError` naming
    ///   each object a deny rule keeps (`.deleteDenied`) and each related object a nullify rule
    ///   would leave without a required relationship (`.missingValue`);
    ///   `StoreError.noStoreForEntity`, `.readOnlyStore`; `ValidationError` (`.invalidValue`)
    ///   naming IDs of another store or hierarchy than the first ID's; `StoreError.unsupported`
    ///   when a derived attribute depends on the objects deleted or their partners. Nothing is
    ///   deleted when it throws.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchDeleteResult {
        if case .objectIDs(let ids) = request.source, ids.isEmpty {
            return BatchDeleteResult(count: 0, objectIDs: request.resultType == .objectIDs ? [] : nil, changes: ObjectChanges())
        }
        let (info, store) = try batchTarget(request.entityName)
        let stale = managedObjectModel.derivations.staleDerivations(.delete, on: info, model: managedObjectModel)
        guard stale.isEmpty else { throw DerivationTable.batchRefusal("a batch delete of \(info.name)", stale) }
        switch request.source {
        case .predicate(let predicate):
            if let predicate { try PredicateChecker(model: managedObjectModel).check(predicate, entity: info) }
        case .objectIDs(let ids):
            let strays = ids.filter { $0.info.rootCode != info.rootCode || ($0.storeIdentifier != nil && $0.storeIdentifier != store.identifier) }
            guard strays.isEmpty else {
                throw ValidationError(failures: strays.prefix(BatchRequestLimits.failures).map {
                    ValidationFailure(objectID: $0, entity: $0.entityName, key: "",
                                      kind: .invalidValue("a batch delete by IDs takes objects of one store and of \(info.name)'s hierarchy"))
                })
            }
        }
        return try store.storage.batchDelete(info, request)
    }
}

extension ManagedObjectContext {
    /// Runs a batch delete through the context's coordinator (see
    /// `PersistentStoreCoordinator.execute(_:)`). The context's objects are not changed: merge
    /// the result's `changes`.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchDeleteResult {
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }
        return try coordinator.execute(request)
    }
}
