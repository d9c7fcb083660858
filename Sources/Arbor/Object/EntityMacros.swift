/// Declares the entity of a `ManagedObject` subclass from its stored properties, as SwiftData's
/// `@Model` does:
/// ```swift
/// @Entity
/// final class Stop: ManagedObject {
///     #Index<Stop>([\.longitude, \.latitude])
///     @Unique var stopID: String
///     @Index(.normalized, .words) var name: String = ""
///     var latitude: Double?
///     var longitude: Double?
///     @Relationship(inverse: \StopTime.stop, deleteRule: .cascade, ordered: true) var stopTimes: [StopTime]
///     @Transient var visits = 0
/// }
/// let model = try ManagedObjectModel(types: [Stop.self, StopTime.self])
/// ```
/// Every stored `var` is persisted: `AttributeConvertible` types (optional or not) as
/// attributes, an initial value as the attribute's default; `T?` and `[T]` of a
/// `ManagedObject` subclass as relationships. The generated accessors read the object's slot
/// directly. Compound indexes and uniqueness constraints are declared in the body with
/// `#Index` and `#Unique`.
///
/// - Parameters:
///   - name: the entity's name (default: the class's).
///   - abstract: an entity with no objects of its own, only of its sub-entities.
///   - originalName: the entity's former name, for lightweight migration.
@attached(member, names: named(_$entityName), named(_$propertyNames), named(_$propertyCount), named(_$entityDescription),
          named(_$overridesValidateValue))
@attached(memberAttribute)
public macro Entity(_ name: String? = nil, abstract: Bool = false, originalName: String? = nil) = #externalMacro(module: "ArborMacros", type: "EntityMacro")

/// The accessors `@Entity` gives its n-th persisted property (not written by hand).
@attached(accessor, names: named(init), named(get), named(set))
public macro _PersistedProperty(_ position: Int, after superclass: ManagedObject.Type? = nil) =
    #externalMacro(module: "ArborMacros", type: "PersistedPropertyMacro")

/// What an index on one property of an `@Entity` class holds.
public enum PropertyIndex: Sendable {
    /// The property's values (a single-column index): equality, ranges and sorts.
    case values
    /// A string's case- and diacritic-folded values: `BEGINSWITH[cd]`, `==[cd]`.
    case normalized
    /// Each word of a string: `WORDSBEGINWITH[cd]`.
    case words
    /// Runs of up to three characters of a string: `CONTAINS[cd]`, `LIKE[cd]`.
    case substrings
}

/// Indexes a property of an `@Entity` class (`@Index` alone: its values).
@attached(peer)
public macro Index(_ kinds: PropertyIndex...) = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// Compound indexes of an `@Entity` class, one per argument, most significant property first:
/// `#Index<Stop>([\.longitude, \.latitude])`. Written in the class's body (a key path in
/// `@Entity`'s own arguments would have the class refer to itself while it is being declared).
@freestanding(declaration)
public macro Index<Root: ManagedObject>(_ indexes: [PartialKeyPath<Root>]...) =
    #externalMacro(module: "ArborMacros", type: "CompoundDeclarationMacro")

/// Compound uniqueness constraints of an `@Entity` class, one per argument: no two objects of
/// the entity have equal values in all of the listed properties. `#Unique<Trip>([\.route, \.number])`.
@freestanding(declaration)
public macro Unique<Root: ManagedObject>(_ constraints: [PartialKeyPath<Root>]...) =
    #externalMacro(module: "ArborMacros", type: "CompoundDeclarationMacro")

/// Makes a property of an `@Entity` class unique among the objects of its entity.
@attached(peer)
public macro Unique() = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// Keeps a property of an `@Entity` class out of the model: a plain Swift property, never stored,
/// tracked or undone (SwiftData's `@Transient`). For a transient attribute the context tracks,
/// observes and undoes, write `@Attribute(.ephemeral)`.
@attached(peer)
public macro Transient() = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// A relationship of an `@Entity` class.
/// - Parameters:
///   - inverse: the relationship on the destination that points back. Name it on one side only
///     (naming it on both makes each class refer to the other while it is being declared, which
///     the compiler reports as a circular reference); it is needed only when the pair cannot
///     be told apart, for example two relationships between the same entities.
///   - deleteRule: what deleting this object does to its destination objects.
///   - ordered: a to-many relationship keeps its members in the order set.
///   - optional: false makes a to-one required at save.
///   - minCount, maxCount: a to-many relationship's bounds at save.
///   - originalName: the relationship's former name, for lightweight migration.
@attached(peer)
public macro Relationship(inverse: AnyKeyPath? = nil, deleteRule: DeleteRule = .nullify, ordered: Bool = false,
                          optional: Bool = true, minCount: Int = 0, maxCount: Int? = nil, originalName: String? = nil) =
    #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// Options of an attribute of an `@Entity` class, and its former name for lightweight migration:
/// ```swift
/// @Attribute(.range(-90...90)) var latitude: Double = 0
/// @Attribute(.length(1...64), .pattern("[A-Z0-9]+")) var code: String = ""
/// @Attribute(.ephemeral) var isSelected = false
/// @Attribute(.derived("stopTimes.@count")) var departureCount: Int = 0
/// @Attribute(originalName: "title") var name: String = ""
/// ```
@attached(peer)
public macro Attribute(_ options: AttributeOption..., originalName: String? = nil) =
    #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// An attribute of a hand-written `ManagedObject` subclass, whose entity is described with
/// `EntityDescription`: `@Attribute("name") var name: String`. The key names the attribute in
/// the model; reads and writes go through the object's context, the slot cached per property.
/// (In an `@Entity` class, write `var name: String`.)
@attached(accessor, names: named(get), named(set))
public macro Attribute(_ key: String) = #externalMacro(module: "ArborMacros", type: "KeyedPropertyMacro")

/// A relationship of a hand-written `ManagedObject` subclass: `@Relationship("stop") var stop:
/// Stop?` or `@Relationship("stopTimes") var stopTimes: [StopTime]`. Setting it keeps the
/// inverse in step. (In an `@Entity` class, write `var stop: Stop?`.)
@attached(accessor, names: named(get), named(set))
public macro Relationship(_ key: String) = #externalMacro(module: "ArborMacros", type: "KeyedPropertyMacro")
