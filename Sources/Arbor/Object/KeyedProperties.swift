import Foundation

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

extension ManagedObject {
    // MARK: What `@Attribute("key")` and `@Relationship("key")` expand to

    /// The attribute `key` (hand-written form); `keyPath`, the property's own, caches its slot.
    /// - Complexity: O(1) once the slot is cached, O(length) for a string or data value.
    @inlinable
    public final func _$keyedAttribute<Object: ManagedObject, V: AttributeConvertible>(_ keyPath: KeyPath<Object, V>,
                                                                                       _ key: String) -> V {
        if let value = loadedAttribute(cachedBy: keyPath) { return V.reading(value) }
        guard let value = contextAttribute(keyPath, key: { key }) else { return V.fallbackValue }
        return V.reading(value)
    }

    /// Sets the attribute `key` (hand-written form).
    @inlinable
    public final func _$setKeyedAttribute<V: AttributeConvertible>(_ key: String, _ value: V) {
        setTypedAttribute(value.attributeValue, forKey: key)
    }

    /// The relationship `key` (hand-written form): its destination or members.
    public final func _$keyedRelationship<V: RelationshipValue>(_ key: String) -> V { V.read(from: self, key: key) }

    /// Sets the relationship `key` (hand-written form); inverses follow.
    public final func _$setKeyedRelationship<V: RelationshipValue>(_ key: String, _ value: V) { value.write(to: self, key: key) }

    func typedAttribute<Value: AttributeConvertible>(_ key: String) -> Value {
        guard let context = managedObjectContext, let attribute = info.anyAttribute(named: key) else { return Value.fallbackValue }
        let value = context.currentAttribute(self, slot: attribute.slot)
        return Value(attributeValue: value) ?? Value.fallbackValue
    }

    /// The common case of an `@Attribute` read, without the context (and the load of its weak
    /// reference): the object is loaded and unchanged, and its slot is cached by the property's
    /// key path. nil otherwise (`contextAttribute` answers).
    @usableFromInline
    final func loadedAttribute(cachedBy keyPath: AnyKeyPath) -> AttributeValue? {
        guard let link = contextLink, link.isAlive, let slot = link.cachedSlot(keyPath, info: info) else { return nil }
        observeRead(slot)
        return storedAttribute(slot)
    }

    /// An `@Attribute` read through the context: the slot comes from the context's cache by
    /// key path (reading the wrapper through the key path and looking its name up cost more
    /// than the value itself). nil when the object has no context or no such attribute.
    @usableFromInline
    final func contextAttribute(_ keyPath: AnyKeyPath, key: () -> String) -> AttributeValue? {
        guard let context = managedObjectContext, let slot = context.attributeSlot(keyPath, of: self, key: key) else { return nil }
        observeRead(slot)
        return context.currentAttribute(self, slot: slot)
    }

    /// An `@Attribute` write: the value when it fits the attribute's type, else recorded as
    /// a failure for the next save (as `setValue(_:forKey:)` does).
    @usableFromInline
    func setTypedAttribute(_ value: AttributeValue, forKey key: String) {
        guard managedObjectContext != nil else { return }
        if let attribute = info.anyAttribute(named: key), attribute.description.derivation == nil, value.fits(attribute.description.type) {
            setAttribute(value, slot: attribute.slot)
        } else {
            setValue(value, forKey: key)  // records the failure for the next save
        }
    }
}
