/// How the model stored in a file maps onto the app's model, decided before anything is written:
/// which old entity and property each new one continues (by name, or by its renaming
/// identifier), where each new column's value comes from, and which changes are not lightweight.
struct MigrationPlan {
    /// Where one column of a migrated row comes from.
    enum ColumnSource {
        /// The old row's column at this slot; `fill` replaces a nil (optional → non-optional).
        case old(slot: Int, fill: AttributeValue?)
        /// A new column: this value (nil for nil).
        case new(AttributeValue?)
    }

    let old: ManagedObjectModel
    let new: ManagedObjectModel
    /// Old entity name → the new entity continuing it (absent: the entity was removed).
    private(set) var successor: [String: String] = [:]
    /// New entity name → the old entity it continues (absent: the entity is new).
    private(set) var predecessor: [String: String] = [:]
    /// Old entity code → new entity code, for the entities that continue.
    private(set) var codes: [UInt16: UInt16] = [:]
    /// New entity name → the source of each of its columns, in slot order.
    private(set) var columns: [String: [ColumnSource]] = [:]
    /// "Entity.property" of the new model → the name of the old property (of the entity's
    /// predecessor) it continues, for attributes and relationships.
    private(set) var propertyOrigins: [String: String] = [:]
    /// Changes that are not lightweight; the migration is refused when there is any.
    private(set) var refusals: [String] = []
    /// Every change, in words, for the model history.
    private(set) var changes: [String] = []
    /// "Entity.attribute" of each derived attribute added to a stored entity, or whose
    /// expression changed: its values are computed once the migration has committed (§9).
    private(set) var pendingDerivations: [String] = []

    init(old: ManagedObjectModel, new: ManagedObjectModel) {
        self.old = old
        self.new = new
        matchEntities()
        for info in new.infos { planEntity(info) }
        if changes.isEmpty { changes.append("the stored model's layout changed") }
    }

    // MARK: Entities

    private mutating func matchEntities() {
        func link(_ origin: String, _ name: String) {
            successor[origin] = name
            predecessor[name] = origin
            if origin != name { changes.append("entity \(origin) renamed to \(name)") }
        }
        // Renaming identifiers first: an entity renamed away frees its old name for a new one.
        for info in new.infos {
            guard let origin = info.schema.renamingIdentifier, origin != info.name, old.info(named: origin) != nil,
                  successor[origin] == nil else { continue }
            link(origin, info.name)
        }
        for info in new.infos where predecessor[info.name] == nil {
            if old.info(named: info.name) != nil, successor[info.name] == nil {
                link(info.name, info.name)
            } else {
                changes.append("entity \(info.name) added")
            }
        }
        for info in old.infos where successor[info.name] == nil { changes.append("entity \(info.name) removed") }
        // Trees are named after entities: a name must not pass from one entity to another in one step.
        for info in new.infos where old.info(named: info.name) != nil && predecessor[info.name] != info.name {
            refusals.append("entity \(info.name) takes the name of another stored entity (rename in two migrations)")
        }
        for (oldName, newName) in successor {
            if let oldCode = old.info(named: oldName)?.code, let newCode = new.info(named: newName)?.code { codes[oldCode] = newCode }
        }
    }

    private mutating func planEntity(_ info: EntityInfo) {
        guard let originName = predecessor[info.name], let origin = old.info(named: originName) else { return }
        let entity = info.name
        let oldSuper = origin.superentityName.map { successor[$0] ?? "(removed \($0))" }
        if oldSuper != info.superentityName {
            refusals.append("\(entity): superentity changed from \(origin.superentityName ?? "none") to \(info.superentityName ?? "none")")
        }
        if origin.isAbstract != info.isAbstract {
            refusals.append("\(entity): changed from \(origin.isAbstract ? "abstract" : "concrete") to \(info.isAbstract ? "abstract" : "concrete")")
        }
        var sources = Array(repeating: ColumnSource.new(nil), count: info.columnCount)
        var matchedOld: Set<String> = []
        let oldAttributes = origin.attributes.map(\.description.name)
        let attributesRenamedAway = Set(info.attributes.compactMap(\.description.renamingIdentifier))
        for attribute in info.attributes {
            let description = attribute.description
            let isOwn = info.schema.attributes.contains { $0.name == description.name }
            guard let previous = Self.match(description.name, description.renamingIdentifier, in: oldAttributes,
                                            renamedAway: attributesRenamedAway).flatMap(origin.attribute(named:)) else {
                if isOwn {
                    changes.append("\(entity).\(description.name) added")
                    if description.derivation != nil { pendingDerivations.append("\(entity).\(description.name)") }
                    if !description.isOptional && description.defaultValue == nil && description.derivation == nil {
                        refusals.append("\(entity).\(description.name): added as non-optional without a default value")
                    }
                }
                sources[attribute.slot] = .new(description.defaultValue)
                continue
            }
            matchedOld.insert(previous.description.name)
            propertyOrigins["\(entity).\(description.name)"] = previous.description.name
            let was = previous.description
            if isOwn && was.name != description.name { changes.append("\(entity).\(was.name) renamed to \(description.name)") }
            // Inherited properties are judged once, on the entity that declares them.
            if isOwn && was.type != description.type {
                refusals.append("\(entity).\(description.name): type changed from \(was.type.rawValue) to \(description.type.rawValue)")
            }
            if isOwn && was.derivation != description.derivation {
                changes.append("\(entity).\(description.name) " + (description.derivation.map { "derived from \($0)" } ?? "no longer derived"))
                if description.derivation != nil { pendingDerivations.append("\(entity).\(description.name)") }
            }
            var fill: AttributeValue?
            if was.isOptional && !description.isOptional {
                if let value = description.defaultValue {
                    fill = value
                    if isOwn { changes.append("\(entity).\(description.name) made non-optional (nil becomes its default)") }
                } else if isOwn {
                    refusals.append("\(entity).\(description.name): made non-optional without a default value")
                }
            }
            sources[attribute.slot] = .old(slot: previous.slot, fill: fill)
        }
        for attribute in origin.schema.attributes where !matchedOld.contains(attribute.name) {
            changes.append("\(entity).\(attribute.name) removed")
        }

        var matchedRelationships: Set<String> = []
        let oldRelationships = origin.relationships.map(\.description.name)
        let relationshipsRenamedAway = Set(info.relationships.compactMap(\.description.renamingIdentifier))
        for relationship in info.relationships {
            let description = relationship.description
            let isOwn = info.schema.relationships.contains { $0.name == description.name }
            guard let previous = Self.match(description.name, description.renamingIdentifier, in: oldRelationships,
                                            renamedAway: relationshipsRenamedAway).flatMap(origin.relationship(named:)) else {
                if isOwn {
                    changes.append("\(entity).\(description.name) added")
                    if !description.isToMany && !description.isOptional {
                        refusals.append("\(entity).\(description.name): a non-optional to-one relationship added (relationships have no default)")
                    }
                }
                continue
            }
            matchedRelationships.insert(previous.description.name)
            propertyOrigins["\(entity).\(description.name)"] = previous.description.name
            let was = previous.description
            if isOwn && was.name != description.name { changes.append("\(entity).\(was.name) renamed to \(description.name)") }
            guard isOwn else {
                if relationship.kind == .toOne, previous.kind == .toOne {
                    sources[relationship.slot] = .old(slot: previous.slot, fill: nil)
                    if let orderSlot = relationship.orderSlot, let previousOrder = previous.orderSlot {
                        sources[orderSlot] = .old(slot: previousOrder, fill: nil)
                    }
                }
                continue
            }
            if successor[was.destination] != description.destination {
                refusals.append("\(entity).\(description.name): destination changed from \(was.destination) to \(description.destination)")
            }
            if was.isToMany != description.isToMany {
                refusals.append("\(entity).\(description.name): changed from \(was.isToMany ? "to-many" : "to-one") to \(description.isToMany ? "to-many" : "to-one")")
            }
            if was.isOrdered != description.isOrdered {
                refusals.append("\(entity).\(description.name): ordering changed")
            }
            if !description.isToMany && was.isOptional && !description.isOptional {
                refusals.append("\(entity).\(description.name): a to-one relationship made non-optional (relationships have no default)")
            }
            // The inverse's kind decides the storage: a change there shows as a kind change.
            if previous.kind != relationship.kind, was.isToMany == description.isToMany {
                refusals.append("\(entity).\(description.name): its inverse changed between to-one and to-many")
            }
            if relationship.kind == .toOne, previous.kind == .toOne {
                sources[relationship.slot] = .old(slot: previous.slot, fill: nil)
                if let orderSlot = relationship.orderSlot, let previousOrder = previous.orderSlot {
                    sources[orderSlot] = .old(slot: previousOrder, fill: nil)
                }
            }
        }
        for relationship in origin.schema.relationships where !matchedRelationships.contains(relationship.name) {
            changes.append("\(entity).\(relationship.name) removed")
        }
        let oldIndexes = Set(origin.schema.indexes.map(\.name)), newIndexes = Set(info.schema.indexes.map(\.name))
        for name in newIndexes.subtracting(oldIndexes).sorted() { changes.append("\(entity): index \(name) added") }
        for name in oldIndexes.subtracting(newIndexes).sorted() { changes.append("\(entity): index \(name) removed") }
        columns[info.name] = sources
    }

    /// The old property a new one continues: the one its renaming identifier names, else the
    /// one with its name — unless another new property's renaming identifier claims that name.
    static func match(_ name: String, _ renamingIdentifier: String?, in oldNames: [String], renamedAway: Set<String>) -> String? {
        if let renamingIdentifier, oldNames.contains(renamingIdentifier) { return renamingIdentifier }
        return oldNames.contains(name) && !renamedAway.contains(name) ? name : nil
    }

    // MARK: Rows

    /// Whether every row of the hierarchy `root` (continuing `origin`) stays byte for byte: same
    /// tree, same entity codes, identical column sources, and every entity a reference column
    /// can point at keeps its code (dropped rows are checked by the caller).
    func keepsRows(of root: EntityInfo, origin: EntityInfo) -> Bool {
        guard root.rowTree == origin.rowTree else { return false }
        for info in new.infos where root.includes(info) {
            guard let previousName = predecessor[info.name], let previous = old.info(named: previousName),
                  previous.code == info.code, previous.columnCount == info.columnCount,
                  let sources = columns[info.name] else { return false }
            for (slot, source) in sources.enumerated() {
                guard case .old(let from, let fill) = source, from == slot, fill == nil else { return false }
            }
            for relationship in info.relationships where relationship.kind == .toOne {
                guard let destination = new.info(named: relationship.destinationName) else { return false }
                for code in destination.descendantCodes {
                    guard let name = new.infosByCode[code]?.name, let before = predecessor[name],
                          old.info(named: before)?.code == code else { return false }
                }
            }
        }
        // Old entities of the hierarchy that are gone leave rows to delete.
        return old.infos.filter { origin.includes($0) }.allSatisfy { successor[$0.name] != nil }
    }

    /// The row `row` (of the old model) becomes in the new model; nil when its entity was removed.
    /// `isDropped` tells whether a referenced row (by old code and key) is dropped.
    func migrate(_ row: StoredRow, isDropped: (UInt16, Int64) -> Bool) -> StoredRow? {
        guard let oldInfo = old.infosByCode[row.entityCode], let newName = successor[oldInfo.name],
              let newCode = codes[row.entityCode], let sources = columns[newName] else { return nil }
        var result: [ColumnValue] = []
        result.reserveCapacity(sources.count)
        for source in sources {
            switch source {
            case .new(let value):
                result.append(.value(value ?? .null))
            case .old(let slot, let fill):
                guard slot < row.columns.count else {
                    result.append(.null)
                    continue
                }
                switch row.columns[slot] {
                case .reference(let code, let key):
                    if let mapped = codes[code], !isDropped(code, key) {
                        result.append(.reference(code: mapped, key: key))
                    } else {
                        result.append(.null)
                    }
                case .value(let value):
                    result.append(value.isNull ? .value(fill ?? .null) : .value(value))
                }
            }
        }
        return StoredRow(entityCode: newCode, version: row.version, columns: result)
    }
}
