import Foundation

/// Inserts many objects of one entity straight into the store, without managed objects or a
/// context's change tracking: Core Data's `NSBatchInsertRequest`, for imports.
///
/// The objects come from an array of dictionaries or from a handler called once per object.
/// Unlike Core Data's, a batch insert here may set to-one relationships (to saved objects, by
/// `ObjectID`); an ordered inverse gets each new object appended, as `stopTime.stop = stop`
/// does in a context. Every index, foreign-key entry and uniqueness constraint is maintained.
///
/// With a `conflictRule` of `.update` or `.ignore`, an object whose values for a uniqueness
/// constraint are already stored updates that object or gives way to it (an upsert: find or
/// create in one request); the result then gives every object's ID, new or found.
///
/// The whole request is one transaction: it is stored completely or not at all. Contexts are
/// not told (as in Core Data): merge the result's `changes` into them with
/// `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
///
/// Words and substrings indexes of the new objects are built on a second thread while the
/// objects that follow are read and written (the handler is still called on the caller's).
///
/// ```swift
/// var times = feed.stopTimes.makeIterator()
/// let request = BatchInsertRequest(entityName: "StopTime") { object in
///     guard let time = times.next() else { return true }   // true: no more objects
///     object.setValue(.date(time.departure), forKey: "departureTime")
///     object.setObjectID(stopIDs[time.stop], forKey: "stop")
///     return false
/// }
/// let result = try container.persistentStoreCoordinator.execute(request)
/// ```
public struct BatchInsertRequest {
    /// What `execute` returns besides the count.
    public enum ResultType: Sendable {
        /// Only the number of objects inserted.
        case count
        /// Also the IDs of the inserted objects, in insertion order.
        case objectIDs
    }

    /// What happens to an object whose values for the uniqueness constraint (`conflictConstraint`)
    /// are those of a stored object, or of an earlier object of the same request.
    public enum ConflictRule: Sendable {
        /// The request fails with a `ValidationError` naming the object (the default).
        case error
        /// The stored object takes the values the new object sets (properties it does not set
        /// keep theirs) and keeps its object ID and its relationships: an upsert, SQLite's
        /// `INSERT … ON CONFLICT DO UPDATE`. Of several objects with the same values, the
        /// last one's values win.
        case update
        /// The new object is dropped and the stored one left as it is (`ON CONFLICT DO
        /// NOTHING`); of several objects with the same values, the first is kept.
        case ignore
    }

    public let entityName: String
    public var resultType: ResultType = .count
    /// How a conflict on `conflictConstraint` is resolved.
    public var conflictRule: ConflictRule = .error
    /// The uniqueness constraint conflicts are found on, by its properties; nil: the entity's
    /// only one (with `.update` or `.ignore`, an entity with several must name one).
    public var conflictConstraint: [String]?
    let source: Source

    enum Source {
        case objects([[String: Any]])
        case handler((inout BatchInsertObject) throws -> Bool)
    }

    /// Inserts one object per dictionary: keys are attribute names (values as accepted by
    /// `ManagedObject.setValue(_:forKey:)`) and to-one relationship names (an `ObjectID`, or
    /// `NSNull`/nil for none). Missing attributes take their default.
    public init(entityName: String, objects: [[String: Any]]) {
        self.entityName = entityName
        source = .objects(objects)
    }

    /// Calls `handler` once per object to fill it, until it returns `true` (Core Data's
    /// `dictionaryHandler` convention: the object of the call that returns `true` is not
    /// inserted). Errors thrown by the handler abort the request; nothing is stored.
    public init(entityName: String, handler: @escaping (inout BatchInsertObject) throws -> Bool) {
        self.entityName = entityName
        source = .handler(handler)
    }
}

/// What a batch insert stored.
public struct BatchInsertResult: Sendable {
    /// The number of objects of the request (inserted, updated and ignored).
    public let count: Int
    /// The ID of each object of the request, in order, with `.objectIDs` as the result type
    /// (nil otherwise): the new object's, or the stored object's it updated or gave way to.
    public let objectIDs: [ObjectID]?
    /// Objects stored as new ones.
    public let insertedCount: Int
    /// Objects whose values went to a stored object (`.update`).
    public let updatedCount: Int
    /// Objects dropped for a stored object (`.ignore`).
    public let ignoredCount: Int
    /// The objects inserted and the stored ones updated, for
    /// `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
    public let changes: ObjectChanges
}

/// One object of a batch insert, filled by the request's handler. Problems (an unknown key, a
/// value of the wrong type, a to-many key) are collected and reported by `execute` as a
/// `ValidationError` naming the object's position, the key and what is wrong.
public struct BatchInsertObject {
    let info: EntityInfo
    /// Per slot: the value set, nil when not set (the attribute's default applies).
    var columns: [WriteColumn?]
    var problems: [(key: String, kind: ValidationFailureKind)] = []

    init(info: EntityInfo) {
        self.info = info
        columns = Array(repeating: nil, count: info.columnCount)
    }

    /// Clears every value and problem for the next object, keeping the storage.
    mutating func reset() {
        for slot in columns.indices { columns[slot] = nil }
        if !problems.isEmpty { problems.removeAll(keepingCapacity: true) }
    }

    /// The entity's name.
    public var entityName: String { info.name }

    /// Sets attribute `key` to `value` (nil: `.null`).
    /// - Complexity: O(1) (a dictionary lookup of the key).
    public mutating func setValue(_ value: AttributeValue, forKey key: String) {
        guard let attribute = info.attribute(named: key) else { return setObjectOrProblem(value, forKey: key) }
        guard value.fits(attribute.description.type) else {
            return problems.append((key, .typeMismatch(expected: attribute.description.type, found: value.kindName)))
        }
        columns[attribute.slot] = .value(value)
    }

    /// Sets attribute `key` from a dynamically typed value (converted as `setValue(_:forKey:)`
    /// on a managed object converts it), or to-one relationship `key` from an `ObjectID`.
    public mutating func setValue(_ value: Any?, forKey key: String) {
        if let attribute = info.attribute(named: key) {
            let unwrapped: Any? = value is NSNull ? nil : value
            guard let converted = AttributeValue.converting(unwrapped, to: attribute.description.type) else {
                return problems.append((key, .typeMismatch(expected: attribute.description.type, found: "\(type(of: value ?? NSNull()))")))
            }
            columns[attribute.slot] = .value(converted)
        } else {
            setObjectOrProblem(value, forKey: key)
        }
    }

    /// Sets to-one relationship `key` to the saved object `id` (nil: none).
    public mutating func setObjectID(_ id: ObjectID?, forKey key: String) {
        guard let relationship = info.relationship(named: key) else {
            return problems.append((key, .invalidValue("the entity has no relationship \"\(key)\"")))
        }
        guard relationship.kind == .toOne else {
            return problems.append((key, .invalidValue("a batch insert cannot set a to-many relationship; set its inverse to-one")))
        }
        guard let id else { return columns[relationship.slot] = .value(.null) }
        guard relationship.destinationCodes.contains(id.info.code) else {
            return problems.append((key, .invalidValue("\(id) is not a \(relationship.destinationName)")))
        }
        guard !id.isTemporaryID else { return problems.append((key, .danglingReference(id))) }
        columns[relationship.slot] = .reference(id)
    }

    private mutating func setObjectOrProblem(_ value: Any?, forKey key: String) {
        switch value {
        case let id as ObjectID: setObjectID(id, forKey: key)
        case nil, is NSNull: setObjectID(nil, forKey: key)
        case .some(let other):
            if info.relationship(named: key) != nil {
                problems.append((key, .invalidValue("expected an ObjectID, found \(type(of: other))")))
            } else {
                problems.append((key, .invalidValue("the entity has no property \"\(key)\"")))
            }
        }
    }
}

/// Problems one failed batch request reports at most.
enum BatchRequestLimits {
    static let failures = 100
}

extension PersistentStoreCoordinator {
    /// Inserts the objects of `request` into the store that holds its entity, in one
    /// transaction, bypassing contexts (see `BatchInsertRequest`).
    ///
    /// - Complexity: O(n log n) for n objects: rows are appended in primary-key order and each
    ///   index's entries are sorted before they are inserted, a chunk of objects at a time.
    /// - Throws: `ContextError.unknownEntity`; `ValidationError` listing the objects (by
    ///   `batchIndex`) with an unknown key, a value of the wrong type, a missing required value,
    ///   a reference to an object that is not stored, or a uniqueness violation;
    ///   `StoreError.noStoreForEntity`, `.readOnlyStore`; `.unsupported` when the entity has
    ///   derived attributes or others derive from it; errors thrown by the handler.
    ///   Nothing is stored when it throws.
    public func execute(_ request: BatchInsertRequest) throws -> BatchInsertResult {
        guard let info = managedObjectModel.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        guard !info.isAbstract else {
            throw ValidationError(failures: [ValidationFailure(objectID: nil, entity: info.name, key: "", kind: .abstractEntity)])
        }
        guard let store = persistentStores.first(where: { $0.holds(info) }) else { throw StoreError.noStoreForEntity(info.name) }
        let stale = managedObjectModel.derivations.staleDerivations(.insert, on: info, model: managedObjectModel)
        guard stale.isEmpty else { throw DerivationTable.batchRefusal("a batch insert of \(info.name)", stale) }
        return try store.storage.batchInsert(info, request)
    }
}

extension ManagedObjectContext {
    /// Runs a batch insert through the context's coordinator (see
    /// `PersistentStoreCoordinator.execute(_:)`). The context's objects are not changed.
    public func execute(_ request: BatchInsertRequest) throws -> BatchInsertResult {
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }
        return try coordinator.execute(request)
    }
}
