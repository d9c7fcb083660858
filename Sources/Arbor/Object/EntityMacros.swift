/// Declares the entity of a `ManagedObject` subclass from its stored properties, as SwiftData's
/// `@Model` does:
/// ```swift
/// @Entity
/// final class Stop: ManagedObject {
///     @Unique var stopID: String
///     @Index(.normalized, .words) var name: String = ""
///     var latitude: Double?
///     @Relationship(inverse: \StopTime.stop, deleteRule: .cascade, ordered: true) var stopTimes: [StopTime]
///     @Transient var visits = 0
/// }
/// let model = try ManagedObjectModel(types: [Stop.self, StopTime.self])
/// ```
/// Every stored `var` is persisted: `AttributeConvertible` types (optional or not) as
/// attributes, an initial value as the attribute's default; `T?` and `[T]` of a
/// `ManagedObject` subclass as relationships. The generated accessors read the object's slot
/// directly.
///
/// - Parameters:
///   - name: the entity's name (default: the class's).
///   - abstract: an entity with no objects of its own, only of its sub-entities.
///   - indexes: compound indexes, most significant property first (`[[\Stop.longitude, \Stop.latitude]]`).
///   - unique: compound uniqueness constraints.
///   - originalName: the entity's former name, for lightweight migration.
@attached(member, names: named(_$entityName), named(_$propertyNames), named(_$propertyCount), named(_$entityDescription))
@attached(memberAttribute)
public macro Entity(_ name: String? = nil, abstract: Bool = false, indexes: [[AnyKeyPath]] = [], unique: [[AnyKeyPath]] = [],
                    originalName: String? = nil) = #externalMacro(module: "ArborMacros", type: "EntityMacro")

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

/// Makes a property of an `@Entity` class unique among the objects of its entity.
@attached(peer)
public macro Unique() = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// Keeps a property of an `@Entity` class in memory only: never stored, never fetched.
@attached(peer)
public macro Transient() = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// A relationship of an `@Entity` class.
/// - Parameters:
///   - inverse: the relationship on the destination that points back (needed on one side when
///     the pair cannot be told apart, for example two relationships between the same entities).
///   - deleteRule: what deleting this object does to its destination objects.
///   - ordered: a to-many relationship keeps its members in the order set.
///   - optional: false makes a to-one required at save.
///   - minCount, maxCount: a to-many relationship's bounds at save.
///   - originalName: the relationship's former name, for lightweight migration.
@attached(peer)
public macro Relationship(inverse: AnyKeyPath? = nil, deleteRule: DeleteRule = .nullify, ordered: Bool = false,
                          optional: Bool = true, minCount: Int = 0, maxCount: Int? = nil, originalName: String? = nil) =
    #externalMacro(module: "ArborMacros", type: "MarkerMacro")

/// Renames an attribute of an `@Entity` class: its former name, for lightweight migration.
@attached(peer)
public macro Attribute(originalName: String) = #externalMacro(module: "ArborMacros", type: "MarkerMacro")

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
