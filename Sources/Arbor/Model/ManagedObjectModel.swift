import ArborEngine
import Foundation

/// A validated set of entities: the schema of an object graph (Core Data's `NSManagedObjectModel`).
///
/// Declared in code, checked once (every relationship has a matching inverse, every index names
/// real properties, defaults fit their types), and stored in each store file with its
/// `versionHash`, so tools can read a store without the app and a changed model is detected.
public final class ManagedObjectModel: Sendable {
    /// The name of the configuration that holds every entity.
    public static let defaultConfiguration = "Default"

    public let entities: [EntityDescription]
    /// The code-independent form stored in files.
    public let schema: ModelSchema
    /// A hash of `schema`: equal hashes mean identical stored layouts.
    public let versionHash: String
    let infos: [EntityInfo]
    let infosByName: [String: EntityInfo]
    let infosByCode: EntityCodeTable
    /// Entities by class, for each class that is the class of exactly one entity. An array
    /// searched in order: models have tens of entities, and a dictionary keyed by class cost a
    /// search of every loaded protocol conformance the first time a process built one.
    let infosByClass: [(type: ObjectIdentifier, info: EntityInfo)]
    /// The derived attributes and what their values depend on.
    let derivations: DerivationTable
    /// The fetch request templates, prepared (see `fetchRequestTemplate(named:)`).
    private let templates = Locked<[String: PreparedFetchRequest]>([:])

    /// Builds and validates a model.
    /// - Parameters:
    ///   - entities: every entity of the model; relationships name their destinations and
    ///     inverses among them.
    ///   - configurations: named subsets of entities, for stores that hold only some.
    /// - Throws: `ModelError` naming the first problem found.
    /// - Parameter fetchRequestTemplates: named fetch requests, with `$variables` for what
    ///   changes between uses (Core Data's fetch request templates), checked and prepared now.
    public init(entities: [EntityDescription], configurations: [String: [String]] = [:],
                fetchRequestTemplates: [String: FetchRequest] = [:]) throws {
        self.entities = entities
        guard entities.count < Int(UInt16.max) else { throw ModelError.tooManyEntities(entities.count) }
        var declared: [String: EntityDescription] = [:]
        for entity in entities {
            guard Self.isValidName(entity.name) else { throw ModelError.invalidName(entity: entity.name, name: entity.name) }
            guard declared[entity.name] == nil else { throw ModelError.duplicateEntity(entity.name) }
            declared[entity.name] = entity
        }
        for (name, members) in configurations {
            for member in members where declared[member] == nil {
                throw ModelError.unknownConfigurationEntity(configuration: name, entity: member)
            }
        }
        let resolver = try ModelResolver(declared: declared)
        infos = try resolver.resolve()
        for info in infos {
            for case .missing(let property) in info.declaredSlots {
                throw ModelError.classPropertyNotInEntity(entity: info.name, property: property)
            }
        }
        infosByName = Dictionary(uniqueKeysWithValues: infos.map { ($0.name, $0) })
        infosByCode = EntityCodeTable(infos)
        derivations = try DerivationTable(infos)
        // O(entities²) comparisons of two words: nothing beside resolving the model.
        let classes = infos.map { ObjectIdentifier($0.managedObjectClass) }
        let unspecific = ObjectIdentifier(ManagedObject.self)
        infosByClass = zip(classes, infos).filter { type, _ in
            type != unspecific && classes.lazy.filter { $0 == type }.count == 1
        }.map { (type: $0, info: $1) }
        schema = ModelSchema(entities: infos.map(\.schema), configurations: configurations)
        versionHash = Self.hash(of: schema)
        var prepared: [String: PreparedFetchRequest] = [:]
        for (name, request) in fetchRequestTemplates { prepared[name] = try PreparedFetchRequest(request, model: self) }
        templates.withLock { $0 = prepared }
    }

    /// A model without entities (needs no validation).
    private init() {
        entities = []
        infos = []
        infosByName = [:]
        infosByCode = EntityCodeTable([])
        infosByClass = []
        derivations = DerivationTable()
        schema = ModelSchema(entities: [], configurations: [:])
        versionHash = Self.hash(of: schema)
    }

    /// The model without entities.
    static let empty = ManagedObjectModel()

    /// The names of the entities in `configuration` (all of them for `defaultConfiguration`).
    public func entityNames(inConfiguration configuration: String) -> [String]? {
        if configuration == Self.defaultConfiguration { return infos.map(\.name) }
        return schema.configurations[configuration]
    }

    /// The entity named `name`.
    public func entity(named name: String) -> EntityDescription? { entities.first { $0.name == name } }

    /// The names of the fetch request templates, sorted.
    public var fetchRequestTemplateNames: [String] { templates.withLock { $0.keys.sorted() } }

    /// The fetch request template `name`, prepared (nil when the model has none by that name):
    /// pass it to `fetch(_:_:as:)` with the values of its variables.
    public func fetchRequestTemplate(named name: String) -> PreparedFetchRequest? { templates.withLock { $0[name] } }

    /// The fetch request template `name` with its variables replaced by `substitutionVariables`
    /// (Core Data's `fetchRequestFromTemplate(withName:substitutionVariables:)`).
    /// - Throws: `FetchTemplateError.unknownTemplate`, `.missingVariable`, `.mistypedVariable`.
    public func fetchRequestTemplate(named name: String, substitutionVariables: [String: Any]) throws -> FetchRequest {
        guard let template = fetchRequestTemplate(named: name) else { throw FetchTemplateError.unknownTemplate(name) }
        return try template.request(substitutionVariables: substitutionVariables)
    }

    func info(named name: String) -> EntityInfo? { infosByName[name] }

    /// The entity whose class is `type`, if exactly one entity has it.
    /// - Complexity: O(entities).
    func info(for type: ManagedObject.Type) -> EntityInfo? {
        let key = ObjectIdentifier(type)
        for entry in infosByClass where entry.type == key { return entry.info }
        return nil
    }

    /// The inverse of `relationship`, as its destination entity declares it.
    func inverse(of relationship: EntityInfo.Relationship) -> EntityInfo.Relationship? {
        info(named: relationship.destinationName)?.inverse(of: relationship)
    }

    /// The hash stored with a model: XXH3-64 of its canonical JSON, in hex.
    static func hash(of schema: ModelSchema) -> String {
        let bytes = (try? canonicalJSON(schema)) ?? []
        let value = XXH3.hash(bytes)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func canonicalJSON(_ schema: ModelSchema) throws -> [UInt8] {
        if let bytes = CanonicalModelJSON.encode(schema) { return bytes }
        return try encodedByFoundation(schema)
    }

    /// `canonicalJSON` through `JSONEncoder`: what `CanonicalModelJSON` must equal, and what
    /// writes the values it leaves alone.
    static func encodedByFoundation(_ schema: ModelSchema) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(schema))
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !(("0"..."9").contains(first)), name.utf8.count <= 200 else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }
}

/// Entities by code: an array indexed by code (codes are 1 ... n, see `ModelResolver`), so that
/// reading a row's entity — several times per row fetched — costs no hashing.
struct EntityCodeTable: Sendable {
    private let byCode: [EntityInfo?]

    init(_ infos: [EntityInfo]) {
        var byCode = [EntityInfo?](repeating: nil, count: (infos.map { Int($0.code) }.max() ?? -1) + 1)
        for info in infos { byCode[Int(info.code)] = info }
        self.byCode = byCode
    }

    /// The entity with `code`, or nil when the model has none (a code read from a damaged file).
    /// - Complexity: O(1).
    subscript(code: UInt16) -> EntityInfo? {
        Int(code) < byCode.count ? byCode[Int(code)] : nil
    }
}
