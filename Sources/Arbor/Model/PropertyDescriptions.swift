import Foundation

/// An attribute of an entity.
public struct AttributeDescription: Codable, Hashable, Sendable {
    public var name: String
    public var type: AttributeType
    /// Whether nil is a valid value at save time.
    public var isOptional: Bool
    /// The value a newly inserted object starts with (nil: no default, the attribute starts nil).
    public var defaultValue: AttributeValue?
    /// Whether the attribute gets a single-column index.
    public var isIndexed: Bool
    /// The attribute's former name, for lightweight migration (Core Data's renaming identifier).
    public var renamingIdentifier: String?
    /// The rules a value must satisfy at save (ranges, lengths, a pattern). Not stored in the
    /// file: they do not change the model's `versionHash`.
    public var validation: AttributeValidation = AttributeValidation()
    /// A transient attribute lives in memory only (Core Data's transient attributes): its changes
    /// are tracked, observed and undone like any other, and kept across saves, but never
    /// written, fetched or stored in the file's model. An object loaded from a store starts
    /// with the default value. Fetch predicates and sorts cannot name it.
    public var isTransient: Bool = false
    /// For a derived attribute: the expression its value is computed from at every save (Core
    /// Data's `NSDerivedAttributeDescription`), for example `stopTimes.@count`,
    /// `stop.name`, `canonical:(name)` or `now()`; see `Derivation`. Derived values are stored
    /// (so they can be indexed, fetched and sorted by) and cannot be set by the app.
    public var derivation: String?

    public init(_ name: String, _ type: AttributeType, optional: Bool = false, defaultValue: AttributeValue? = nil,
                indexed: Bool = false, renamingIdentifier: String? = nil, validation: AttributeValidation = AttributeValidation(),
                transient: Bool = false, derivedFrom derivation: String? = nil) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.isIndexed = indexed
        self.renamingIdentifier = renamingIdentifier
        self.validation = validation
        self.isTransient = transient
        self.derivation = derivation
    }

    /// The stored form: validation rules and transience are the code's business (transient
    /// attributes are not stored at all); a derivation is stored only when there is one, so the
    /// stored form of every attribute written before derivations existed is unchanged.
    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional, defaultValue, isIndexed, renamingIdentifier, derivation
    }

    /// The attribute as the file's model holds it: without validation rules.
    var stored: AttributeDescription {
        var copy = self
        copy.validation = AttributeValidation()
        return copy
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Codable, Sendable, CaseIterable {
    /// Remove the deleted object from the inverse relationship of each related object.
    case nullify
    /// Delete the related objects too.
    case cascade
    /// Refuse to save while related objects exist.
    case deny
    /// Leave related objects as they are (their inverse then points at a deleted object).
    case noAction
}

/// A relationship from one entity to another. Every relationship names its inverse, and both
/// sides are kept in step by the context.
public struct RelationshipDescription: Codable, Hashable, Sendable {
    public var name: String
    public var destination: String
    public var inverse: String
    public var isToMany: Bool
    /// Whether a to-many relationship keeps its members in the order they were set.
    public var isOrdered: Bool
    public var deleteRule: DeleteRule
    /// For a to-one relationship: whether nil is valid at save time.
    public var isOptional: Bool
    /// For a to-many relationship: the bounds on its member count checked at save time.
    public var minCount: Int
    public var maxCount: Int?
    public var renamingIdentifier: String?

    /// A to-one relationship.
    public static func toOne(_ name: String, _ destination: String, inverse: String, deleteRule: DeleteRule = .nullify,
                             optional: Bool = true, renamingIdentifier: String? = nil) -> RelationshipDescription {
        RelationshipDescription(name: name, destination: destination, inverse: inverse, isToMany: false, isOrdered: false,
                                deleteRule: deleteRule, isOptional: optional, minCount: 0, maxCount: nil,
                                renamingIdentifier: renamingIdentifier)
    }

    /// A to-many relationship, ordered or not.
    public static func toMany(_ name: String, _ destination: String, inverse: String, ordered: Bool = false,
                              deleteRule: DeleteRule = .nullify, minCount: Int = 0, maxCount: Int? = nil,
                              renamingIdentifier: String? = nil) -> RelationshipDescription {
        RelationshipDescription(name: name, destination: destination, inverse: inverse, isToMany: true, isOrdered: ordered,
                                deleteRule: deleteRule, isOptional: true, minCount: minCount, maxCount: maxCount,
                                renamingIdentifier: renamingIdentifier)
    }
}

/// A compound index (or uniqueness constraint) over attributes and to-one relationships, or a
/// text index over one string attribute.
public struct IndexDescription: Codable, Hashable, Sendable {
    /// What an index's entries hold.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// One entry per row: the values of the indexed properties, in order.
        case values
        /// One entry per distinct word of a string attribute, folded as `[cd]` folds
        /// (words as Spec/predicates.md defines them): serves `WORDSBEGINWITH[cd]`.
        case words
        /// One entry per distinct run of up to three scalars of a string attribute, folded as
        /// `[cd]` folds: serves `CONTAINS[cd]` and `LIKE[cd]`.
        case substrings
    }

    public var name: String
    /// Property names, most significant first (for a geo box: `["longitude", "latitude"]`).
    public var properties: [String]
    public var isUnique: Bool
    /// Index string columns by their case- and diacritic-folded form, so `BEGINSWITH[cd]` and
    /// `==[cd]` comparisons use the index (no hand-maintained normalized attribute needed).
    public var isNormalized: Bool
    /// What the entries hold: values (the default), words or substrings. A words or substrings
    /// index names one string attribute and is never unique.
    public var kind: Kind

    public init(name: String? = nil, _ properties: [String], unique: Bool = false, normalized: Bool = false, kind: Kind = .values) {
        self.properties = properties
        self.isUnique = unique
        self.isNormalized = normalized
        self.kind = kind
        let prefix: String
        switch kind {
        case .values: prefix = unique ? "unique_" : normalized ? "folded_" : "by_"
        case .words: prefix = "words_"
        case .substrings: prefix = "substrings_"
        }
        self.name = name ?? (prefix + properties.concatenated(separator: "_"))
    }

    private enum CodingKeys: String, CodingKey {
        case name, properties, isUnique, isNormalized, kind
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        properties = try container.decode([String].self, forKey: .properties)
        isUnique = try container.decode(Bool.self, forKey: .isUnique)
        isNormalized = try container.decode(Bool.self, forKey: .isNormalized)
        kind = try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .values
    }

    /// A values index is encoded without its kind, so the stored form (and the model hash) of
    /// every model written before kinds existed is unchanged.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(properties, forKey: .properties)
        try container.encode(isUnique, forKey: .isUnique)
        try container.encode(isNormalized, forKey: .isNormalized)
        if kind != .values { try container.encode(kind, forKey: .kind) }
    }
}

/// An entity as declared in code: its class, attributes, relationships and indexes.
///
/// Properties of a superentity are inherited and must not be repeated.
public struct EntityDescription: Sendable {
    public var name: String
    /// The class instantiated for objects of this entity (a `ManagedObject` subclass).
    public var managedObjectClass: ManagedObject.Type
    public var superentity: String?
    /// An abstract entity has no instances of its own, only of its sub-entities.
    public var isAbstract: Bool
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    /// Compound indexes and uniqueness constraints (single-column indexes: `isIndexed`).
    public var indexes: [IndexDescription]
    public var renamingIdentifier: String?

    public init(_ name: String, class managedObjectClass: ManagedObject.Type = ManagedObject.self, superentity: String? = nil,
                isAbstract: Bool = false, attributes: [AttributeDescription] = [],
                relationships: [RelationshipDescription] = [], indexes: [IndexDescription] = [],
                uniquenessConstraints: [[String]] = [], renamingIdentifier: String? = nil) {
        self.name = name
        self.managedObjectClass = managedObjectClass
        self.superentity = superentity
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.indexes = indexes + uniquenessConstraints.map { IndexDescription($0, unique: true) }
        self.renamingIdentifier = renamingIdentifier
    }

    /// The stored form: transient attributes left out, validation rules dropped.
    var schema: EntitySchema {
        EntitySchema(name: name, superentity: superentity, isAbstract: isAbstract,
                     attributes: attributes.filter { !$0.isTransient }.map(\.stored),
                     relationships: relationships, indexes: indexes, renamingIdentifier: renamingIdentifier)
    }
}

/// The stored, code-independent form of an entity (what the file's catalog holds).
public struct EntitySchema: Codable, Hashable, Sendable {
    public var name: String
    public var superentity: String?
    public var isAbstract: Bool
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    public var indexes: [IndexDescription]
    public var renamingIdentifier: String?
}

/// The stored form of a whole model.
public struct ModelSchema: Codable, Hashable, Sendable {
    public var entities: [EntitySchema]
    /// Configuration name → entity names.
    public var configurations: [String: [String]]
}
