import Arbor
import ArgumentParser
import Foundation

/// `arbor schema FILE`: the object model stored in the file.
struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Entities, attributes, relationships, indexes and configurations stored in the file.",
        discussion: "Example: arbor schema transit.arbor")

    @OptionGroup var store: StoreOptions

    func run() throws {
        let access = try ObjectStoreAccess.open(store)
        if store.json {
            print(try jsonText(access.schema))
        } else {
            print(Self.render(access), terminator: "")
        }
    }

    /// The schema as text: one block per entity, with row counts.
    static func render(_ access: ObjectStoreAccess) -> String {
        var text = ""
        let context = access.context
        for entity in access.schema.entities {
            var header = "entity \(entity.name)"
            if let superentity = entity.superentity { header += " : \(superentity)" }
            if entity.isAbstract { header += " (abstract)" }
            let count = (try? context.performAndWait {
                var request = FetchRequest(entityName: entity.name)
                request.includesSubentities = false
                return try context.count(for: request)
            }) ?? 0
            text += header + " — \(count) object\(count == 1 ? "" : "s")\n"
            for attribute in entity.attributes {
                var line = "  \(attribute.name): \(attribute.type.rawValue)\(attribute.isOptional ? "?" : "")"
                if let value = attribute.defaultValue { line += " = \(value)" }
                if attribute.isIndexed { line += " (indexed)" }
                text += line + "\n"
            }
            for relationship in entity.relationships {
                let target = relationship.isToMany ? "[\(relationship.destination)]\(relationship.isOrdered ? " ordered" : "")"
                    : relationship.destination + (relationship.isOptional ? "?" : "")
                text += "  \(relationship.name) -> \(target), inverse \(relationship.inverse), delete rule \(relationship.deleteRule.rawValue)\n"
            }
            for index in entity.indexes {
                let kind: String
                switch index.kind {
                case .words: kind = "words index"
                case .substrings: kind = "substrings index"
                case .values: kind = index.isUnique ? "unique" : (index.isNormalized ? "index (folded)" : "index")
                }
                text += "  \(kind) \(index.name) (\(index.properties.joined(separator: ", ")))\n"
            }
        }
        for (name, entities) in access.schema.configurations.sorted(by: { $0.key < $1.key }) {
            text += "configuration \(name): \(entities.joined(separator: ", "))\n"
        }
        return text
    }
}
