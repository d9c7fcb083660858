import Foundation

/// Inserts many objects of one entity straight into the store, without managed objects or a
/// context's change tracking: Core Data's `NSBatchInsertRequest`, for imports.
///
/// The objects come from an array of dictionaries or from a handler called once per object.
/// Unlike Core Data's, a batch insert here may set to-one relationships (to saved objects, by
/// `ObjectID`); an ordered inverse gets each new object appended, as `stopTime.stop = stop`
/// does in a context. Every index, foreign-key entry and uniqueness constraint is maintained.
///
/// The whole request is one transaction: it is stored completely or not at all. Contexts are
/// not told (as in Core Data): objects they hold stay as they were until refreshed, and a
/// context that had read a destination's to-many list sees the new members after
/// `refresh(_:mergeChanges:)` or `reset()`.
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

    public let entityName: String
    public var resultType: ResultType = .count
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
    /// The number of objects inserted.
    public let count: Int
    /// Their IDs in insertion order, with `.objectIDs` as the result type; nil otherwise.
    public let objectIDs: [ObjectID]?
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
