/// The model's derived attributes resolved against its entities, and, for each entity, which
/// derived values a change to one of its objects can alter (what a save must recompute).
///
/// A derivation walks relationships `r0 … rk-1` from its object (entities `E0 … Ek`) and reads
/// an attribute at the end (or counts the members). An object of `Ed` at depth `d` affects the
/// derived value of the objects that reach it: when it is inserted or deleted (d ≥ 1), when the
/// relationship it is walked through changes (`rd`, or the inverse of `rd-1` that leads back),
/// or when the attribute read at the end changes (d = k).
struct DerivationTable: Sendable {
    /// One derived attribute, resolved.
    final class Derived: Sendable {
        /// The entity that declares it (sub-entities inherit it).
        let entity: EntityInfo
        let attribute: EntityInfo.Attribute
        let derivation: Derivation
        /// The relationships walked from the object: to-ones, then, for an aggregate, a to-many.
        let steps: [EntityInfo.Relationship]
        /// For each step, its inverse (on the step's destination): the way back to the object.
        let inverses: [EntityInfo.Relationship]
        /// The attribute read at the end of the walk (nil for `@count` and `now()`).
        let source: EntityInfo.Attribute?

        init(entity: EntityInfo, attribute: EntityInfo.Attribute, derivation: Derivation, steps: [EntityInfo.Relationship],
             inverses: [EntityInfo.Relationship], source: EntityInfo.Attribute?) {
            self.entity = entity
            self.attribute = attribute
            self.derivation = derivation
            self.steps = steps
            self.inverses = inverses
            self.source = source
        }

        var key: String { attribute.description.name }
        var expression: String { attribute.description.derivation ?? "" }
    }

    /// Objects of an entity at `depth` of `derived`'s walk: changes to these stored slots (or to
    /// these to-many lists) alter the value.
    struct Dependency: Sendable {
        let derived: Derived
        let depth: Int
        let columnSlots: [Int]
        let toManySlots: [Int]
    }

    /// Derived attributes by entity code, inherited ones included.
    private(set) var derivedByCode: [UInt16: [Derived]] = [:]
    /// By entity code (sub-entities included): the derivations an object of it takes part in at
    /// depth ≥ 0 (depth 0: its own derived attributes).
    private(set) var dependenciesByCode: [UInt16: [Dependency]] = [:]

    var isEmpty: Bool { derivedByCode.isEmpty }

    /// A model without derived attributes.
    init() {}

    /// Resolves every derived attribute of `infos`.
    /// - Throws: `ModelError.invalidDerivation` naming the attribute and the reason.
    init(_ infos: [EntityInfo]) throws {
        let byName = Dictionary(uniqueKeysWithValues: infos.map { ($0.name, $0) })
        for info in infos {
            // Each derived attribute is resolved once, in the entity that declares it.
            let parent = info.superentityName.flatMap { byName[$0] }
            for attribute in info.attributes where attribute.description.derivation != nil && parent?.attribute(named: attribute.description.name) == nil {
                let derived = try Self.resolve(attribute, of: info, entities: byName)
                for code in info.descendantCodes.union([info.code]) {
                    derivedByCode[code, default: []].append(derived)
                }
                addDependencies(of: derived, entities: byName)
            }
        }
    }

    private mutating func addDependencies(of derived: Derived, entities: [String: EntityInfo]) {
        var entity = derived.entity
        let depthCount = derived.steps.count
        for depth in 0...depthCount {
            var columns: [Int] = [], toManys: [Int] = []
            func note(_ relationship: EntityInfo.Relationship) {
                if relationship.kind == .toOne { columns.append(relationship.slot) } else { toManys.append(relationship.slot) }
            }
            if depth < depthCount { note(derived.steps[depth]) }
            if depth > 0 { note(derived.inverses[depth - 1]) }
            if depth == depthCount, let source = derived.source { columns.append(source.slot) }
            let dependency = Dependency(derived: derived, depth: depth, columnSlots: columns, toManySlots: toManys)
            for code in entity.descendantCodes.union([entity.code]) { dependenciesByCode[code, default: []].append(dependency) }
            if depth < depthCount, let next = entities[derived.steps[depth].destinationName] { entity = next }
        }
    }

    private static func resolve(_ attribute: EntityInfo.Attribute, of info: EntityInfo,
                                entities: [String: EntityInfo]) throws -> Derived {
        let description = attribute.description
        func fail(_ detail: String) -> ModelError {
            ModelError.invalidDerivation(entity: info.name, attribute: description.name, detail: detail)
        }
        guard let expression = description.derivation else { throw fail("no expression") }
        let derivation: Derivation
        switch Derivation.parse(expression) {
        case .success(let parsed): derivation = parsed
        case .failure(let error): throw fail(error.detail)
        }
        guard !description.isTransient else { throw fail("a derived attribute is stored; it cannot be transient") }
        // Walks `names` from `info`: every name but the last a relationship (to-one, or a
        // to-many last when `endsWithToMany`); returns the steps, their inverses and the end.
        func walk(_ names: [String], endsWithToMany: Bool) throws -> ([EntityInfo.Relationship], [EntityInfo.Relationship], EntityInfo) {
            var steps: [EntityInfo.Relationship] = [], inverses: [EntityInfo.Relationship] = []
            var entity = info
            for (offset, name) in names.enumerated() {
                guard let relationship = entity.relationship(named: name) else {
                    throw fail("\(entity.name) has no relationship \(name)")
                }
                let last = offset == names.count - 1
                if relationship.kind == .toOne ? (last && endsWithToMany) : !(last && endsWithToMany) {
                    throw fail("\(entity.name).\(name) is \(relationship.kind == .toOne ? "to-one" : "to-many"); "
                               + "a key path walks to-one relationships, an aggregate ends with a to-many")
                }
                guard let destination = entities[relationship.destinationName], let inverse = destination.inverse(of: relationship) else {
                    throw fail("\(entity.name).\(name) has no inverse")
                }
                steps.append(relationship)
                inverses.append(inverse)
                entity = destination
            }
            return (steps, inverses, entity)
        }
        func sourceAttribute(_ name: String, in entity: EntityInfo) throws -> EntityInfo.Attribute {
            guard let source = entity.attribute(named: name) else { throw fail("\(entity.name) has no stored attribute \(name)") }
            guard source.description.derivation == nil else { throw fail("\(entity.name).\(name) is derived itself") }
            return source
        }
        let type = description.type
        func requireNumeric(_ what: String) throws {
            guard type.isNumeric && type != .bool else { throw fail("\(what) is a number; the attribute is \(type.rawValue)") }
        }
        switch derivation.form {
        case .now:
            guard type == .date else { throw fail("now() is a date; the attribute is \(type.rawValue)") }
            return Derived(entity: info, attribute: attribute, derivation: derivation, steps: [], inverses: [], source: nil)
        case .keyPath(let path), .function(_, let path):
            let (steps, inverses, end) = try walk(Array(path.dropLast()), endsWithToMany: false)
            let source = try sourceAttribute(path[path.count - 1], in: end)
            if case .function(let function, _) = derivation.form {
                guard source.description.type == .string, type == .string else {
                    throw fail("\(function.rawValue): takes and gives a string")
                }
            } else if source.description.type != type && !(source.description.type.isNumeric && type.isNumeric) {
                throw fail("\(path.joined(separator: ".")) is \(source.description.type.rawValue); the attribute is \(type.rawValue)")
            }
            if source === attribute { throw fail("the attribute derives from itself") }
            return Derived(entity: info, attribute: attribute, derivation: derivation, steps: steps, inverses: inverses, source: source)
        case .aggregate(let path, let function, let key):
            let (steps, inverses, end) = try walk(path, endsWithToMany: true)
            var source: EntityInfo.Attribute?
            if let key { source = try sourceAttribute(key, in: end) }
            switch function {
            case .count: try requireNumeric("@count")
            case .sum, .avg:
                try requireNumeric(function.rawValue)
                guard let sourceType = source?.description.type, sourceType.isNumeric else {
                    throw fail("\(function.rawValue) adds numbers; \(key ?? "") is \(source?.description.type.rawValue ?? "missing")")
                }
            case .min, .max:
                let sourceType = source?.description.type
                guard sourceType == type || (sourceType?.isNumeric == true && type.isNumeric) else {
                    throw fail("\(function.rawValue) of \(key ?? "") is \(sourceType?.rawValue ?? "missing"); the attribute is \(type.rawValue)")
                }
            }
            return Derived(entity: info, attribute: attribute, derivation: derivation, steps: steps, inverses: inverses, source: source)
        }
    }

    /// The derived attributes of objects of `info`.
    func derived(of info: EntityInfo) -> [Derived] { derivedByCode[info.code] ?? [] }

    /// The derivations objects of `info` take part in.
    func dependencies(of info: EntityInfo) -> [Dependency] { dependenciesByCode[info.code] ?? [] }
}

extension DerivationTable {
    /// What a batch request does to the objects of its entity.
    enum BatchChange {
        case insert
        case update(keys: Set<String>)
        case delete
    }

    /// The derived attributes a batch request on objects of `info` (and its sub-entities) would
    /// leave out of date: batch requests bypass contexts, where derived values are computed.
    /// A delete is judged broadly: any derivation that reaches the entities its cascades delete
    /// or whose relationships it nullifies.
    func staleDerivations(_ change: BatchChange, on info: EntityInfo, model: ManagedObjectModel) -> [Derived] {
        guard !isEmpty else { return [] }
        var codes = info.descendantCodes.union([info.code])
        var slots: Set<Int>?
        switch change {
        case .insert:
            codes = [info.code]  // a batch insert makes objects of its entity only
            slots = nil
        case .update(let keys):
            slots = Set(keys.compactMap { key in
                info.attribute(named: key)?.slot ?? info.relationship(named: key).flatMap { $0.kind == .toOne ? $0.slot : nil }
            })
        case .delete:
            // The entities the delete reaches: its cascades, then whatever they relate to.
            var work = Array(codes)
            while let code = work.popLast() {
                guard let entity = model.infosByCode[code] else { continue }
                for relationship in entity.relationships {
                    guard let destination = model.info(named: relationship.destinationName) else { continue }
                    for related in destination.descendantCodes.union([destination.code]) where codes.insert(related).inserted {
                        if relationship.description.deleteRule == .cascade { work.append(related) }
                    }
                }
            }
        }
        var stale: [Derived] = []
        for code in codes.sorted() {
            for dependency in dependenciesByCode[code] ?? [] where !stale.contains(where: { $0 === dependency.derived }) {
                let touched: Bool
                if let slots {
                    if case .now = dependency.derived.derivation.form { touched = true } else {
                        touched = !slots.isDisjoint(with: dependency.columnSlots)
                    }
                } else {
                    touched = true
                }
                if touched { stale.append(dependency.derived) }
            }
        }
        return stale
    }

    /// `StoreError.unsupported` naming the derived attributes a batch request would leave stale.
    static func batchRefusal(_ request: String, _ stale: [Derived]) -> StoreError {
        let names = stale.map { "\($0.entity.name).\($0.key) (\($0.expression))" }.joined(separator: ", ")
        return StoreError.unsupported("\(request) would leave derived attributes out of date: \(names); "
                                      + "make these changes through a context, whose save computes them")
    }
}
