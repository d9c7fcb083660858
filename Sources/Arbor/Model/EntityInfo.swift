import ArborEngine

/// An entity resolved within its model: inherited properties, storage slots, indexes and the
/// trees that hold its rows. Immutable once the model is built.
final class EntityInfo: Sendable {
    enum Property: Sendable {
        case attribute(Int)
        case relationship(Int)
        /// An index into `transientAttributes`.
        case transient(Int)

        var isTransient: Bool { if case .transient = self { return true } else { return false } }
    }

    // Attributes, relationships and indexes are classes: fetches and saves pass them around per
    // row, and copying a struct of strings and arrays costs a retain per field.
    final class Attribute: Sendable {
        let description: AttributeDescription
        /// Position in the object's stored values and in the row's columns (for a transient
        /// attribute: after the columns and the to-many relationships, in no row).
        let slot: Int
        /// The validation pattern, compiled once.
        let pattern: CompiledPattern?
        /// Whether the description has validation rules (beyond optionality).
        let hasRules: Bool
        /// `description.name`, `.type` and `.isOptional`, read without the description.
        let name: String
        let type: AttributeType
        let isOptional: Bool

        init(description: AttributeDescription, slot: Int) {
            self.description = description
            self.slot = slot
            pattern = description.validation.pattern.flatMap(CompiledPattern.init)
            hasRules = !description.validation.isEmpty
            name = description.name
            type = description.type
            isOptional = description.isOptional
        }
    }

    /// A property `@Entity` declared, as its accessors find it (see `declaredSlots`).
    enum DeclaredSlot: Sendable {
        case attribute(Attribute)
        case relationship(Relationship)
        /// The class declares it, the entity lacks it (the model refuses such a class).
        case missing(String)
    }

    enum RelationshipKind: Sendable {
        /// Stored as a column of this entity's rows.
        case toOne
        /// The inverse of a to-one: read through the destination's foreign-key index.
        case oneToMany
        /// Stored in a join tree on both sides.
        case manyToMany
    }

    final class Relationship: Sendable {
        let description: RelationshipDescription
        let kind: RelationshipKind
        /// For a to-one: its column slot. For a to-many: its position among to-many states.
        let slot: Int
        /// For a to-one whose inverse is ordered: the slot of the hidden order column.
        let orderSlot: Int?
        let destinationName: String
        /// Root entity of the destination's hierarchy.
        let destinationRoot: String
        /// Codes of the destination entity and its sub-entities (the valid targets).
        let destinationCodes: Set<UInt16>
        /// For many-to-many: the join tree and this side's number (0 or 1) in it.
        let joinTree: String?
        let joinSide: UInt8
        /// For a to-one: the tree of its foreign-key index.
        let foreignKeyTree: String?

        init(description: RelationshipDescription, kind: RelationshipKind, slot: Int, orderSlot: Int?, destinationName: String,
             destinationRoot: String, destinationCodes: Set<UInt16>, joinTree: String?, joinSide: UInt8, foreignKeyTree: String?) {
            self.description = description
            self.kind = kind
            self.slot = slot
            self.orderSlot = orderSlot
            self.destinationName = destinationName
            self.destinationRoot = destinationRoot
            self.destinationCodes = destinationCodes
            self.joinTree = joinTree
            self.joinSide = joinSide
            self.foreignKeyTree = foreignKeyTree
        }
    }

    final class Index: Sendable {
        let name: String
        let tree: String
        /// Column slots of the key, most significant first.
        let slots: [Int]
        let properties: [String]
        let isUnique: Bool
        /// String columns are indexed by their [cd]-folded form.
        let isNormalized: Bool
        /// Values (one entry per row), or the words or substrings of one string column (one
        /// entry per distinct term: see `TextTerms`).
        let kind: IndexDescription.Kind
        /// Foreign-key index of an ordered relationship: the order column follows the key.
        let orderSlot: Int?
        /// The automatic index of a to-one relationship: rows with a nil reference have no entry.
        /// Stored, not derived from the tree name: it is read for every index of every row written.
        let isForeignKey: Bool

        init(name: String, tree: String, slots: [Int], properties: [String], isUnique: Bool, isNormalized: Bool = false,
             kind: IndexDescription.Kind = .values, orderSlot: Int?, isForeignKey: Bool = false) {
            self.name = name
            self.tree = tree
            self.slots = slots
            self.properties = properties
            self.isUnique = isUnique
            self.isNormalized = isNormalized
            self.kind = kind
            self.orderSlot = orderSlot
            self.isForeignKey = isForeignKey
        }

        /// A words or substrings index: entries per term, not per row.
        var isText: Bool { kind != .values }
    }

    let name: String
    let code: UInt16
    let schema: EntitySchema
    let managedObjectClass: ManagedObject.Type
    let superentityName: String?
    let rootName: String
    let rootCode: UInt16
    /// Codes of this entity and every entity below it.
    let descendantCodes: Set<UInt16>
    let isAbstract: Bool
    /// The stored attributes.
    let attributes: [Attribute]
    /// The transient attributes (declared here or inherited): slots `transientBase ..< transientBase + count`.
    let transientAttributes: [Attribute]
    let relationships: [Relationship]
    /// Number of stored columns (attributes, to-one references, order columns).
    let columnCount: Int
    let toManyCount: Int
    /// The first transient slot: after the columns and the to-many relationships, so every
    /// property has a slot (and an observation key) of its own.
    var transientBase: Int { columnCount + toManyCount }
    let propertiesByName: [String: Property]
    /// Every property with its name when the entity has at most `fewPropertiesLimit` (`property(named:)`).
    private let fewProperties: [(name: String, property: Property)]?
    /// Indexes maintained for rows of this entity (declared here or inherited, plus foreign keys).
    let indexes: [Index]
    let rowTree: String
    /// Hash of the root entity's name: IDs of one hierarchy share it.
    let rootHash: Int
    /// Per column slot: whether it holds a to-one reference (a null there is a nil reference).
    let isToOneSlot: [Bool]
    /// The properties of the class's `@Entity` declarations (`_$propertyNames`), by position:
    /// what a generated accessor reads, with no name lookup.
    let declaredSlots: [DeclaredSlot]
    /// For each entry of `declaredSlots`, the attribute's slot, or -1: what a generated
    /// attribute getter reads (a plain integer, so the read copies no description).
    let declaredAttributeSlots: [Int]
    /// Whether a save's validation calls the class's `validateValue(_:forKey:)` for each
    /// property (it may override it), or applies the model's rules itself.
    let callsValidateValue: Bool
    /// The slots undo records and restores: attributes, then to-one relationships (order
    /// columns are the store's business).
    let undoSlots: [Int]
    /// The key paths Observation tracks, one per property: attributes and to-ones by column
    /// slot, to-manys after them (see `ManagedObject.observationKey`).
    let observationKeyPaths: ObservationKeyPaths

    /// An entity's observation key paths, made when an object is first observed: the runtime
    /// instantiates each key path (about 4k instructions), which a process that observes no
    /// object should not pay when it opens a store.
    final class ObservationKeyPaths: Sendable {
        /// Key paths made once and never changed: safe to share between threads, though the
        /// standard library does not mark them `Sendable`.
        private struct Paths: @unchecked Sendable {
            let list: [KeyPath<ManagedObject, Int>]
        }

        private let count: Int
        private let made = Locked<Paths?>(nil)

        init(count: Int) { self.count = count }

        /// Every key path, by observation key. O(properties) the first time, then a lock.
        var all: [KeyPath<ManagedObject, Int>] {
            made.withLock { made in
                if let made { return made.list }
                let paths = Paths(list: (0..<count).map { \ManagedObject.[observationKey: $0] })
                made = paths
                return paths.list
            }
        }
    }

    init(name: String, code: UInt16, schema: EntitySchema, managedObjectClass: ManagedObject.Type, rootName: String, rootCode: UInt16,
         descendantCodes: Set<UInt16>, attributes: [Attribute], relationships: [Relationship], columnCount: Int,
         toManyCount: Int, indexes: [Index], transientAttributes: [Attribute] = []) {
        self.name = name
        self.code = code
        self.schema = schema
        self.managedObjectClass = managedObjectClass
        self.superentityName = schema.superentity
        self.rootName = rootName
        self.rootCode = rootCode
        self.descendantCodes = descendantCodes
        self.isAbstract = schema.isAbstract
        self.attributes = attributes
        self.transientAttributes = transientAttributes
        self.relationships = relationships
        self.columnCount = columnCount
        self.toManyCount = toManyCount
        var byName: [String: Property] = [:]
        for (index, attribute) in attributes.enumerated() { byName[attribute.description.name] = .attribute(index) }
        for (index, relationship) in relationships.enumerated() { byName[relationship.description.name] = .relationship(index) }
        for (index, attribute) in transientAttributes.enumerated() { byName[attribute.description.name] = .transient(index) }
        self.propertiesByName = byName
        self.fewProperties = byName.count <= Self.fewPropertiesLimit ? byName.map { (name: $0.key, property: $0.value) } : nil
        self.indexes = indexes
        self.rowTree = StoreLayout.rowTree(root: rootName)
        self.rootHash = rootName.hashValue
        var toOne = [Bool](repeating: false, count: columnCount)
        for relationship in relationships where relationship.kind == .toOne && relationship.slot < columnCount { toOne[relationship.slot] = true }
        self.isToOneSlot = toOne
        undoSlots = attributes.map(\.slot) + relationships.filter { $0.kind == .toOne }.map(\.slot) + transientAttributes.map(\.slot)
        declaredSlots = managedObjectClass._$propertyNames.map { name in
            switch byName[name] {
            case .attribute(let index): return .attribute(attributes[index])
            case .relationship(let index): return .relationship(relationships[index])
            case .transient(let index): return .attribute(transientAttributes[index])
            case nil: return .missing(name)
            }
        }
        callsValidateValue = managedObjectClass._$overridesValidateValue || managedObjectClass._$entityDescription() == nil
        observationKeyPaths = ObservationKeyPaths(count: columnCount + toManyCount + transientAttributes.count)
        declaredAttributeSlots = declaredSlots.map { slot in
            if case .attribute(let attribute) = slot { return attribute.slot }
            return -1
        }
    }

    /// The property named `name`, if any. O(1): with at most `fewPropertiesLimit`
    /// properties, the names are compared (most are small strings, compared as two words),
    /// which costs less than hashing the key (a `value(forKey:)` a row); else a dictionary
    /// lookup. Names are unique within an entity.
    @inline(__always)
    func property(named name: String) -> Property? {
        guard let fewProperties else { return propertiesByName[name] }
        for entry in fewProperties where entry.name == name { return entry.property }
        return nil
    }

    static let fewPropertiesLimit = 16

    func attribute(named name: String) -> Attribute? {
        if case .attribute(let index)? = property(named: name) { return attributes[index] }
        return nil
    }

    /// The stored or transient attribute `name`: what the object's own accessors may read.
    func anyAttribute(named name: String) -> Attribute? {
        switch property(named: name) {
        case .attribute(let index)?: return attributes[index]
        case .transient(let index)?: return transientAttributes[index]
        default: return nil
        }
    }

    /// The stored or transient attribute at `slot`, if the slot is one.
    func anyAttribute(slot: Int) -> Attribute? {
        if let attribute = transientAttribute(slot: slot) { return attribute }
        return attributes.first { $0.slot == slot }
    }

    /// The transient attribute at `slot`, if the slot is one.
    func transientAttribute(slot: Int) -> Attribute? {
        let index = slot - transientBase
        return index >= 0 && index < transientAttributes.count ? transientAttributes[index] : nil
    }

    func relationship(named name: String) -> Relationship? {
        if case .relationship(let index)? = property(named: name) { return relationships[index] }
        return nil
    }

    /// The inverse of `relationship`, when this entity is (or descends from) its destination.
    func inverse(of relationship: Relationship) -> Relationship? { self.relationship(named: relationship.description.inverse) }

    /// Whether `other` is this entity or one of its sub-entities.
    func includes(_ other: EntityInfo) -> Bool { other.code == code || descendantCodes.contains(other.code) }
}

/// Names of the trees that hold the object graph (see Spec/object-store.md).
enum StoreLayout {
    static let metadataTree = "arbor.metadata"
    static func rowTree(root: String) -> String { "rows.\(root)" }
    static func indexTree(entity: String, index: String) -> String { "index.\(entity).\(index)" }
    static func foreignKeyTree(entity: String, relationship: String) -> String { "fk.\(entity).\(relationship)" }
    static func joinTree(entity: String, relationship: String) -> String { "join.\(entity).\(relationship)" }
}
