/// A model declaration that cannot be used; each case names the entity and property at fault.
public enum ModelError: Error, Equatable, Sendable, CustomStringConvertible {
    case duplicateEntity(String)
    case unknownSuperentity(entity: String, superentity: String)
    case inheritanceCycle(entity: String)
    case duplicateProperty(entity: String, property: String)
    case invalidName(entity: String, name: String)
    case unknownDestination(entity: String, relationship: String, destination: String)
    case missingInverse(entity: String, relationship: String, inverse: String)
    case inverseMismatch(entity: String, relationship: String, detail: String)
    case unknownIndexProperty(entity: String, index: String, property: String)
    /// A words or substrings index that does not name exactly one string attribute, or is unique.
    case invalidTextIndex(entity: String, index: String, detail: String)
    case invalidDefault(entity: String, attribute: String, detail: String)
    case unknownConfigurationEntity(configuration: String, entity: String)
    case tooManyEntities(Int)
    /// A class given to `ManagedObjectModel(types:)` without `@Entity`.
    case notAnEntityClass(String)
    /// An `@Entity` class persists a property its entity's description lacks.
    case classPropertyNotInEntity(entity: String, property: String)
    /// A relationship whose inverse neither side names, and that cannot be paired alone.
    case ambiguousInverse(entity: String, relationship: String, candidates: [String])
    /// Validation rules that cannot apply to the attribute (a pattern on a number, a minimum above
    /// the maximum, an invalid regular expression).
    case invalidValidation(entity: String, attribute: String, detail: String)
    /// A derived attribute whose expression does not parse, names what the entity cannot reach,
    /// or computes a value of another type.
    case invalidDerivation(entity: String, attribute: String, detail: String)

    public var description: String {
        switch self {
        case .duplicateEntity(let name): return "entity \(name) is declared twice"
        case .unknownSuperentity(let entity, let parent): return "entity \(entity): superentity \(parent) is not in the model"
        case .inheritanceCycle(let entity): return "entity \(entity): its superentity chain loops"
        case .duplicateProperty(let entity, let property): return "entity \(entity): property \(property) is declared twice (or repeats an inherited one)"
        case .invalidName(let entity, let name): return "entity \(entity): \"\(name)\" is not a valid name (letters, digits, _; not starting with a digit)"
        case .unknownDestination(let entity, let relationship, let destination):
            return "\(entity).\(relationship): destination entity \(destination) is not in the model"
        case .missingInverse(let entity, let relationship, let inverse):
            return "\(entity).\(relationship): inverse \(inverse) is not a relationship of the destination"
        case .inverseMismatch(let entity, let relationship, let detail): return "\(entity).\(relationship): \(detail)"
        case .unknownIndexProperty(let entity, let index, let property):
            return "entity \(entity), index \(index): \(property) is not an attribute or to-one relationship"
        case .invalidTextIndex(let entity, let index, let detail): return "entity \(entity), index \(index): \(detail)"
        case .invalidDefault(let entity, let attribute, let detail): return "\(entity).\(attribute): invalid default value: \(detail)"
        case .unknownConfigurationEntity(let configuration, let entity):
            return "configuration \(configuration) names entity \(entity), which is not in the model"
        case .tooManyEntities(let count): return "a model holds at most 65535 entities, not \(count)"
        case .notAnEntityClass(let name): return "class \(name) has no @Entity declaration: add @Entity, or describe it with EntityDescription"
        case .classPropertyNotInEntity(let entity, let property):
            return "entity \(entity): its class persists \(property), which the entity description lacks"
        case .ambiguousInverse(let entity, let relationship, let candidates):
            let options = candidates.isEmpty ? "the destination has no relationship back" : "candidates: " + candidates.joined(separator: ", ")
            return "\(entity).\(relationship): no inverse (\(options)); name it with @Relationship(inverse: \\Destination.property)"
        case .invalidValidation(let entity, let attribute, let detail): return "\(entity).\(attribute): invalid validation rule: \(detail)"
        case .invalidDerivation(let entity, let attribute, let detail): return "\(entity).\(attribute): invalid derivation: \(detail)"
        }
    }
}
