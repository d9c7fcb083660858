import Foundation

// What the `@Entity` macro's expansion calls: declarations that build the entity description
// from Swift types, and accessors that reach a property's slot through the entity's table of
// declared properties (`EntityInfo.declaredSlots`). Underscored: public for generated code only.

/// A property as `@Entity` declares it.
public enum _DeclaredProperty: Sendable {
    case attribute(AttributeDescription)
    case relationship(RelationshipDescription)
}

extension EntityDescription {
    /// Appends a property `@Entity` declared.
    public mutating func _$add(_ property: _DeclaredProperty) {
        switch property {
        case .attribute(let attribute): attributes.append(attribute)
        case .relationship(let relationship): relationships.append(relationship)
        }
    }
}

extension ManagedObject {
    // MARK: Declarations

    /// The superentity's name for an `@Entity` class whose superclass is `superclass`.
    public static func _$superentityName(of superclass: ManagedObject.Type) -> String? {
        superclass == ManagedObject.self ? nil : superclass._$entityName
    }

    /// An attribute of type `V` (optional when `V` is), without a default.
    public static func _$declare<V: AttributeConvertible>(_ name: String, _ type: V.Type, indexed: Bool = false,
                                                          originalName: String? = nil, options: [AttributeOption] = []) -> _DeclaredProperty {
        .attribute(AttributeDescription(name, attributeType(of: V.self), optional: V.wrappedAttributeType != nil,
                                        indexed: indexed, renamingIdentifier: originalName).applying(options))
    }

    /// An attribute whose initial value is its default (a nil default is no default).
    public static func _$declare<V: AttributeConvertible>(_ name: String, _ type: V.Type, indexed: Bool = false,
                                                          originalName: String? = nil, options: [AttributeOption] = [],
                                                          initialValue: V) -> _DeclaredProperty {
        let value = initialValue.attributeValue
        return .attribute(AttributeDescription(name, attributeType(of: V.self), optional: V.wrappedAttributeType != nil,
                                               defaultValue: value.isNull ? nil : value, indexed: indexed,
                                               renamingIdentifier: originalName).applying(options))
    }

    /// A to-one relationship to `T`'s entity. An empty inverse is found by the model.
    public static func _$declare<T: ManagedObject>(_ name: String, _ type: T?.Type, inverse: String? = nil,
                                                   deleteRule: DeleteRule = .nullify, optional: Bool = true,
                                                   originalName: String? = nil, initialValue: T? = nil) -> _DeclaredProperty {
        .relationship(.toOne(name, T._$entityName, inverse: inverse ?? "", deleteRule: deleteRule, optional: optional,
                             renamingIdentifier: originalName))
    }

    /// A to-many relationship to `T`'s entity. An empty inverse is found by the model.
    public static func _$declare<T: ManagedObject>(_ name: String, _ type: [T].Type, inverse: String? = nil,
                                                   deleteRule: DeleteRule = .nullify, ordered: Bool = false, minCount: Int = 0,
                                                   maxCount: Int? = nil, originalName: String? = nil,
                                                   initialValue: [T] = []) -> _DeclaredProperty {
        .relationship(.toMany(name, T._$entityName, inverse: inverse ?? "", ordered: ordered, deleteRule: deleteRule,
                              minCount: minCount, maxCount: maxCount, renamingIdentifier: originalName))
    }

    /// The stored type of `V`: the built-in types by identity, others by the kind of their
    /// fallback value.
    static func attributeType(of type: any AttributeConvertible.Type) -> AttributeType {
        if let wrapped = type.wrappedAttributeType { return attributeType(of: wrapped) }
        switch type {
        case is Int16.Type: return .int16
        case is Int32.Type: return .int32
        case is Int64.Type, is Int.Type: return .int64
        case is Double.Type: return .double
        case is Float.Type: return .float
        case is Bool.Type: return .bool
        case is String.Type: return .string
        case is Date.Type: return .date
        case is Data.Type: return .data
        case is UUID.Type: return .uuid
        case is URL.Type: return .url
        case is Decimal.Type: return .decimal
        default: break
        }
        switch type.fallbackValue.attributeValue {
        case .int: return .int64
        case .double: return .double
        case .float: return .float
        case .bool: return .bool
        case .string: return .string
        case .date: return .date
        case .data: return .data
        case .uuid: return .uuid
        case .url: return .url
        case .decimal: return .decimal
        case .null: return .transformable
        }
    }

    // MARK: Accessors

    /// The value of the declared attribute at `index`.
    /// - Complexity: O(1), O(length) for a string or data value.
    @inlinable
    public final func _$get<V: AttributeConvertible>(_ index: Int) -> V { V.reading(_$attributeValue(index)) }

    /// Sets the declared attribute at `index`.
    @inlinable
    public final func _$set<V: AttributeConvertible>(_ index: Int, _ value: V) { _$setAttributeValue(index, value.attributeValue) }

    @usableFromInline
    final func _$attributeValue(_ index: Int) -> AttributeValue {
        let slot = info.declaredAttributeSlots.withUnsafeBufferPointer { slots in index >= 0 && index < slots.count ? slots[index] : -1 }
        guard slot >= 0 else { return .null }
        observeRead(slot)
        if let value = storedAttribute(slot) { return value }
        guard let context = managedObjectContext else { return .null }
        return context.currentAttribute(self, slot: slot)
    }

    @usableFromInline
    final func _$setAttributeValue(_ index: Int, _ value: AttributeValue) {
        let slots = info.declaredSlots
        guard managedObjectContext != nil, index >= 0, index < slots.count, case .attribute(let attribute) = slots[index] else { return }
        if attribute.description.derivation == nil, value.fits(attribute.description.type) {
            setAttribute(value, slot: attribute.slot)
        } else {
            setValue(value, forKey: attribute.description.name)  // records the failure for the next save
        }
    }

    /// The declared relationship at `index`, when this object's entity has it.
    private func declaredRelationship(_ index: Int) -> (ManagedObjectContext, EntityInfo.Relationship)? {
        let slots = info.declaredSlots
        guard let context = managedObjectContext, index >= 0, index < slots.count,
              case .relationship(let relationship) = slots[index] else { return nil }
        return (context, relationship)
    }

    /// The destination of the declared to-one relationship at `index`.
    public final func _$get<T: ManagedObject>(_ index: Int) -> T? {
        guard let (context, relationship) = declaredRelationship(index), relationship.kind == .toOne else { return nil }
        observeRead(relationship)
        return context.toOneTarget(self, relationship).map { context.object(with: $0) } as? T
    }

    /// Sets the declared to-one relationship at `index`; the inverse follows.
    public final func _$set<T: ManagedObject>(_ index: Int, _ value: T?) {
        guard let (context, relationship) = declaredRelationship(index), relationship.kind == .toOne else { return }
        context.graph.setToOne(self, relationship, value)
    }

    /// The members of the declared to-many relationship at `index`.
    public final func _$get<T: ManagedObject>(_ index: Int) -> [T] {
        guard let (context, relationship) = declaredRelationship(index), relationship.kind != .toOne else { return [] }
        observeRead(relationship)
        return context.members(self, relationship).compactMap { context.object(with: $0) as? T }
    }

    /// Replaces the members of the declared to-many relationship at `index`; inverses follow.
    public final func _$set<T: ManagedObject>(_ index: Int, _ value: [T]) {
        guard let (context, relationship) = declaredRelationship(index), relationship.kind != .toOne else { return }
        context.graph.setMembers(self, relationship, value)
    }
}
