/// Resolves declared entities into `EntityInfo`s: inheritance, slots, relationship kinds and
/// the trees of indexes and joins. Entities are processed superentity first.
struct ModelResolver {
    let declared: [String: EntityDescription]
    /// Entity names, each after its superentity.
    let order: [String]
    let codes: [String: UInt16]

    init(declared: [String: EntityDescription]) throws {
        self.declared = declared
        var order: [String] = []
        var placed: Set<String> = []
        func place(_ name: String, depth: Int) throws {
            if placed.contains(name) { return }
            guard depth <= declared.count, let entity = declared[name] else { throw ModelError.inheritanceCycle(entity: name) }
            if let parent = entity.superentity {
                guard declared[parent] != nil else { throw ModelError.unknownSuperentity(entity: name, superentity: parent) }
                try place(parent, depth: depth + 1)
            }
            placed.insert(name)
            order.append(name)
        }
        for name in declared.keys.sorted() { try place(name, depth: 0) }
        self.order = order
        codes = Dictionary(uniqueKeysWithValues: declared.keys.sorted().enumerated().map { ($0.element, UInt16($0.offset + 1)) })
    }

    func chain(_ name: String) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var current: String? = name
        while let name = current, let entity = declared[name], result.count <= declared.count {
            result.insert(entity, at: 0)
            current = entity.superentity
        }
        return result
    }

    func root(_ name: String) -> String { chain(name).first?.name ?? name }

    /// The entity in `name`'s chain that declares the relationship `relationship`.
    func declaringEntity(of relationship: String, in name: String) -> EntityDescription? {
        chain(name).first { $0.relationships.contains { $0.name == relationship } }
    }

    /// Codes of `name` and every entity below it.
    func descendants(of name: String) -> Set<UInt16> {
        Set(declared.keys.filter { chain($0).contains { $0.name == name } }.compactMap { codes[$0] })
    }

    func allRelationships(_ name: String) -> [RelationshipDescription] { chain(name).flatMap(\.relationships) }

    func resolve() throws -> [EntityInfo] {
        var resolved: [String: EntityInfo] = [:]
        for name in order {
            guard let entity = declared[name], let code = codes[name] else { continue }
            let parent = entity.superentity.flatMap { resolved[$0] }
            var attributes = parent?.attributes ?? []
            var relationships = parent?.relationships ?? []
            var indexes = parent?.indexes ?? []
            var names = Set(attributes.map(\.description.name) + relationships.map(\.description.name))
            var nextColumn = parent?.columnCount ?? 0
            var nextToMany = parent?.toManyCount ?? 0

            var transients = parent?.transientAttributes.map(\.description) ?? []
            names.formUnion(transients.map(\.name))
            for attribute in entity.attributes {
                guard ManagedObjectModel.isValidName(attribute.name) else { throw ModelError.invalidName(entity: name, name: attribute.name) }
                guard names.insert(attribute.name).inserted else { throw ModelError.duplicateProperty(entity: name, property: attribute.name) }
                if let value = attribute.defaultValue, !value.fits(attribute.type) {
                    throw ModelError.invalidDefault(entity: name, attribute: attribute.name,
                                                    detail: "\(value.kindName) does not fit \(attribute.type.rawValue)")
                }
                if let problem = attribute.validation.problem(for: attribute.type) {
                    throw ModelError.invalidValidation(entity: name, attribute: attribute.name, detail: problem)
                }
                if attribute.isTransient {
                    guard attribute.derivation == nil else {
                        throw ModelError.invalidDerivation(entity: name, attribute: attribute.name,
                                                           detail: "a derived attribute is stored; it cannot be transient")
                    }
                    guard !attribute.isIndexed else {
                        throw ModelError.unknownIndexProperty(entity: name, index: attribute.name, property: attribute.name)
                    }
                    transients.append(attribute)
                    continue
                }
                attributes.append(EntityInfo.Attribute(description: attribute, slot: nextColumn))
                nextColumn += 1
            }
            var ownToOne: [EntityInfo.Relationship] = []
            for relationship in entity.relationships {
                guard ManagedObjectModel.isValidName(relationship.name) else { throw ModelError.invalidName(entity: name, name: relationship.name) }
                guard names.insert(relationship.name).inserted else { throw ModelError.duplicateProperty(entity: name, property: relationship.name) }
                let resolvedRelationship = try resolveRelationship(relationship, of: name, column: &nextColumn, toMany: &nextToMany)
                relationships.append(resolvedRelationship)
                if resolvedRelationship.kind == .toOne { ownToOne.append(resolvedRelationship) }
            }
            // Order columns come after every to-one column of the entity.
            for (offset, relationship) in relationships.enumerated() where relationship.kind == .toOne && relationship.orderSlot == -1 {
                relationships[offset] = EntityInfo.Relationship(
                    description: relationship.description, kind: .toOne, slot: relationship.slot, orderSlot: nextColumn,
                    destinationName: relationship.destinationName, destinationRoot: relationship.destinationRoot,
                    destinationCodes: relationship.destinationCodes,
                    joinTree: nil, joinSide: 0, foreignKeyTree: relationship.foreignKeyTree)
                nextColumn += 1
            }
            let slotOf: (String) -> Int? = { property in
                if let attribute = attributes.first(where: { $0.description.name == property }) { return attribute.slot }
                if let relationship = relationships.first(where: { $0.description.name == property }), relationship.kind == .toOne {
                    return relationship.slot
                }
                return nil
            }
            for attribute in entity.attributes where attribute.isIndexed {
                guard let slot = slotOf(attribute.name) else { continue }
                indexes.append(EntityInfo.Index(name: attribute.name, tree: StoreLayout.indexTree(entity: name, index: attribute.name),
                                                slots: [slot], properties: [attribute.name], isUnique: false, orderSlot: nil))
            }
            for index in entity.indexes {
                var slots: [Int] = []
                for property in index.properties {
                    guard let slot = slotOf(property) else {
                        throw ModelError.unknownIndexProperty(entity: name, index: index.name, property: property)
                    }
                    slots.append(slot)
                }
                guard !slots.isEmpty else { throw ModelError.unknownIndexProperty(entity: name, index: index.name, property: "") }
                guard indexes.allSatisfy({ $0.name != index.name }) else { throw ModelError.duplicateProperty(entity: name, property: index.name) }
                if index.kind != .values {
                    guard slots.count == 1, attributes.first(where: { $0.slot == slots[0] })?.description.type == .string else {
                        throw ModelError.invalidTextIndex(entity: name, index: index.name, detail: "a \(index.kind.rawValue) index names one string attribute")
                    }
                    guard !index.isUnique else {
                        throw ModelError.invalidTextIndex(entity: name, index: index.name, detail: "a \(index.kind.rawValue) index cannot be unique")
                    }
                }
                indexes.append(EntityInfo.Index(name: index.name, tree: StoreLayout.indexTree(entity: name, index: index.name),
                                                slots: slots, properties: index.properties, isUnique: index.isUnique,
                                                isNormalized: index.isNormalized, kind: index.kind, orderSlot: nil))
            }
            for relationship in relationships where relationship.kind == .toOne && entity.relationships.contains(where: { $0.name == relationship.description.name }) {
                guard let tree = relationship.foreignKeyTree else { continue }
                let resolvedOrder = relationships.first { $0.description.name == relationship.description.name }?.orderSlot
                indexes.append(EntityInfo.Index(name: relationship.description.name, tree: tree, slots: [relationship.slot],
                                                properties: [relationship.description.name], isUnique: false, orderSlot: resolvedOrder,
                                                isForeignKey: true))
            }
            let descendants = descendants(of: name)
            // Transient slots follow the columns and to-many relationships, so each entity of a
            // hierarchy numbers its inherited transients again after its own stored properties.
            let transientAttributes = transients.enumerated().map {
                EntityInfo.Attribute(description: $0.element, slot: nextColumn + nextToMany + $0.offset)
            }
            resolved[name] = EntityInfo(
                name: name, code: code, schema: entity.schema, managedObjectClass: entity.managedObjectClass,
                rootName: root(name), rootCode: codes[root(name)] ?? code, descendantCodes: descendants, attributes: attributes, relationships: relationships,
                columnCount: nextColumn, toManyCount: nextToMany, indexes: indexes, transientAttributes: transientAttributes)
        }
        return declared.keys.sorted().compactMap { resolved[$0] }
    }

    private func resolveRelationship(_ relationship: RelationshipDescription, of name: String, column: inout Int,
                                     toMany: inout Int) throws -> EntityInfo.Relationship {
        guard declared[relationship.destination] != nil else {
            throw ModelError.unknownDestination(entity: name, relationship: relationship.name, destination: relationship.destination)
        }
        guard let inverse = allRelationships(relationship.destination).first(where: { $0.name == relationship.inverse }) else {
            throw ModelError.missingInverse(entity: name, relationship: relationship.name, inverse: relationship.inverse)
        }
        guard inverse.inverse == relationship.name, chain(name).contains(where: { $0.name == inverse.destination }) else {
            throw ModelError.inverseMismatch(entity: name, relationship: relationship.name,
                                             detail: "its inverse \(relationship.destination).\(inverse.name) points at \(inverse.destination).\(inverse.inverse)")
        }
        if relationship.isOrdered && !relationship.isToMany {
            throw ModelError.inverseMismatch(entity: name, relationship: relationship.name, detail: "a to-one relationship cannot be ordered")
        }
        if relationship.isToMany, let maximum = relationship.maxCount, maximum < relationship.minCount {
            throw ModelError.inverseMismatch(entity: name, relationship: relationship.name, detail: "maxCount is below minCount")
        }
        let destinationRoot = root(relationship.destination)
        if !relationship.isToMany {
            defer { column += 1 }
            return EntityInfo.Relationship(
                description: relationship, kind: .toOne, slot: column, orderSlot: inverse.isToMany && inverse.isOrdered ? -1 : nil,
                destinationName: relationship.destination, destinationRoot: destinationRoot,
                destinationCodes: descendants(of: relationship.destination), joinTree: nil, joinSide: 0,
                foreignKeyTree: StoreLayout.foreignKeyTree(entity: name, relationship: relationship.name))
        }
        defer { toMany += 1 }
        guard inverse.isToMany else {
            return EntityInfo.Relationship(
                description: relationship, kind: .oneToMany, slot: toMany, orderSlot: nil,
                destinationName: relationship.destination, destinationRoot: destinationRoot,
                destinationCodes: descendants(of: relationship.destination), joinTree: nil, joinSide: 0,
                foreignKeyTree: nil)
        }
        // One join tree per many-to-many pair, named after the side that sorts first.
        let inverseOwner = declaringEntity(of: inverse.name, in: relationship.destination)?.name ?? relationship.destination
        let mine = "\(name).\(relationship.name)"
        let theirs = "\(inverseOwner).\(inverse.name)"
        let tree = mine <= theirs ? StoreLayout.joinTree(entity: name, relationship: relationship.name)
                                  : StoreLayout.joinTree(entity: inverseOwner, relationship: inverse.name)
        return EntityInfo.Relationship(
            description: relationship, kind: .manyToMany, slot: toMany, orderSlot: nil,
            destinationName: relationship.destination, destinationRoot: destinationRoot,
                destinationCodes: descendants(of: relationship.destination), joinTree: tree,
            joinSide: mine <= theirs ? 0 : 1, foreignKeyTree: nil)
    }
}
