extension ManagedObjectModel {
    /// The model of `@Entity` classes: each class's declaration is its entity (superclasses
    /// that are `@Entity` classes are superentities; list them too). A relationship whose
    /// inverse neither side names is paired with the one relationship of its destination that
    /// points back, when there is exactly one on each side.
    /// - Throws: `ModelError.notAnEntityClass`, `.ambiguousInverse`, and every error of
    ///   `init(entities:configurations:fetchRequestTemplates:)`.
    public convenience init(types: [ManagedObject.Type], configurations: [String: [String]] = [:],
                            fetchRequestTemplates: [String: FetchRequest] = [:]) throws {
        var entities: [EntityDescription] = []
        for type in types {
            guard let entity = type._$entityDescription() else { throw ModelError.notAnEntityClass(String(describing: type)) }
            entities.append(entity)
        }
        try Self.pairInverses(&entities)
        try self.init(entities: entities, configurations: configurations, fetchRequestTemplates: fetchRequestTemplates)
    }

    /// Fills the inverses left empty: from the side that names one, else the only candidate.
    static func pairInverses(_ entities: inout [EntityDescription]) throws {
        let byName = Dictionary(entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        func chain(_ name: String) -> [String] {
            var names: [String] = [], next: String? = name
            while let current = next, !names.contains(current), let index = byName[current] {
                names.append(current)
                next = entities[index].superentity
            }
            return names
        }
        for entityIndex in entities.indices {
            for relationshipIndex in entities[entityIndex].relationships.indices where entities[entityIndex].relationships[relationshipIndex].inverse.isEmpty {
                let entity = entities[entityIndex]
                let relationship = entity.relationships[relationshipIndex]
                let mine = Set(chain(entity.name))
                // Every relationship of the destination (and its superentities) that points here.
                let back = chain(relationship.destination).compactMap { byName[$0] }.flatMap { entities[$0].relationships }
                    .filter { mine.contains($0.destination) && !($0.name == relationship.name && relationship.destination == entity.name) }
                if let named = back.first(where: { $0.inverse == relationship.name }) {
                    entities[entityIndex].relationships[relationshipIndex].inverse = named.name
                    continue
                }
                let open = back.filter(\.inverse.isEmpty)
                let siblings = entity.relationships.filter { $0.destination == relationship.destination && $0.inverse.isEmpty }
                guard open.count == 1, siblings.count == 1 else {
                    throw ModelError.ambiguousInverse(entity: entity.name, relationship: relationship.name,
                                                      candidates: open.map { "\(relationship.destination).\($0.name)" })
                }
                entities[entityIndex].relationships[relationshipIndex].inverse = open[0].name
            }
        }
    }
}
