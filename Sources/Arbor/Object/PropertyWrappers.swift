import Foundation

/// An attribute of a `ManagedObject` subclass, read and written through the object's context:
/// `@Attribute("name") var name: String`. The key names the attribute in the model.
@propertyWrapper
public struct Attribute<Value: AttributeConvertible> {
    public let key: String

    public init(_ key: String) { self.key = key }

    /// Only usable inside a `ManagedObject` subclass, where the enclosing-instance subscript
    /// below is used instead; the compiler rejects any other use.
    @available(*, unavailable, message: "@Attribute is only available on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("unreachable: wrappedValue is unavailable") }
        set { preconditionFailure("unreachable: wrappedValue is unavailable") }
    }

    // Inlinable: specialized in the subclass's module for the concrete object and value types,
    // and the wrapped key path, which it never uses, is then never instantiated (a key path
    // argument costs a runtime call, `swift_getKeyPath`, at every read).
    @inlinable
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Attribute<Value>>
    ) -> Value {
        get {
            if let value = object.loadedAttribute(cachedBy: storageKeyPath) { return Value.reading(value) }
            guard let value = object.contextAttribute(storageKeyPath, key: { object[keyPath: storageKeyPath].key }) else {
                return Value.fallbackValue
            }
            return Value.reading(value)
        }
        set { object.setTypedAttribute(newValue.attributeValue, forKey: object[keyPath: storageKeyPath].key) }
    }
}

/// A `Codable` value stored as JSON (Core Data's transformable attribute):
/// `@Transformable("tags") var tags: [String]?`. Values that fail to decode read as nil.
@propertyWrapper
public struct Transformable<Value: Codable> {
    public let key: String

    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@Transformable is only available on ManagedObject subclasses")
    public var wrappedValue: Value? {
        get { preconditionFailure("unreachable: wrappedValue is unavailable") }
        set { preconditionFailure("unreachable: wrappedValue is unavailable") }
    }

    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Transformable<Value>>
    ) -> Value? {
        get {
            let key = object[keyPath: storageKeyPath].key
            guard let data: Data? = object.typedAttribute(key), let data else { return nil }
            return try? JSONDecoder().decode(Value.self, from: data)
        }
        set {
            let key = object[keyPath: storageKeyPath].key
            let data = newValue.flatMap { try? JSONEncoder().encode($0) }
            object.setTypedAttribute(data.map(AttributeValue.data) ?? .null, forKey: key)
        }
    }
}

/// A type a `@Relationship` property can have: `T?` for a to-one, `[T]` for a to-many.
public protocol RelationshipValue {
    static func read(from object: ManagedObject, key: String) -> Self
    func write(to object: ManagedObject, key: String)
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
    public static func read(from object: ManagedObject, key: String) -> Wrapped? {
        object.value(forKey: key) as? Wrapped
    }
    public func write(to object: ManagedObject, key: String) { object.setValue(self, forKey: key) }
}

extension Array: RelationshipValue where Element: ManagedObject {
    public static func read(from object: ManagedObject, key: String) -> [Element] {
        (object.value(forKey: key) as? [ManagedObject])?.compactMap { $0 as? Element } ?? []
    }
    public func write(to object: ManagedObject, key: String) { object.setValue(self as [ManagedObject], forKey: key) }
}

/// A relationship of a `ManagedObject` subclass: `@Relationship("stop") var stop: Stop?` or
/// `@Relationship("stopTimes") var stopTimes: [StopTime]`. Setting it keeps the inverse in step.
@propertyWrapper
public struct Relationship<Value: RelationshipValue> {
    public let key: String

    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@Relationship is only available on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("unreachable: wrappedValue is unavailable") }
        set { preconditionFailure("unreachable: wrappedValue is unavailable") }
    }

    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Relationship<Value>>
    ) -> Value {
        get { Value.read(from: object, key: object[keyPath: storageKeyPath].key) }
        set { newValue.write(to: object, key: object[keyPath: storageKeyPath].key) }
    }
}

extension ManagedObject {
    func typedAttribute<Value: AttributeConvertible>(_ key: String) -> Value {
        guard let context = managedObjectContext, let attribute = info.attribute(named: key) else { return Value.fallbackValue }
        let value = context.currentAttribute(self, slot: attribute.slot)
        return Value(attributeValue: value) ?? Value.fallbackValue
    }

    /// The common case of an `@Attribute` read, without the context (and the load of its weak
    /// reference): the object is loaded and unchanged, and its slot is cached by the wrapper's
    /// key path. nil otherwise (`contextAttribute` answers).
    @usableFromInline
    final func loadedAttribute(cachedBy keyPath: AnyKeyPath) -> AttributeValue? {
        guard let link = contextLink, link.isAlive, let slot = link.cachedSlot(keyPath, info: info) else { return nil }
        return storedAttribute(slot)
    }

    /// An `@Attribute` read through the context: the slot comes from the context's cache by
    /// key path (reading the wrapper through the key path and looking its name up cost more
    /// than the value itself). nil when the object has no context or no such attribute.
    @usableFromInline
    final func contextAttribute(_ keyPath: AnyKeyPath, key: () -> String) -> AttributeValue? {
        guard let context = managedObjectContext, let slot = context.attributeSlot(keyPath, of: self, key: key) else { return nil }
        return context.currentAttribute(self, slot: slot)
    }

    /// An `@Attribute` write: the value when it fits the attribute's type, else recorded as
    /// a failure for the next save (as `setValue(_:forKey:)` does).
    @usableFromInline
    func setTypedAttribute(_ value: AttributeValue, forKey key: String) {
        guard managedObjectContext != nil else { return }
        if let attribute = info.attribute(named: key), value.fits(attribute.description.type) {
            setAttribute(value, slot: attribute.slot)
        } else {
            setValue(value, forKey: key)  // records the failure for the next save
        }
    }
}
