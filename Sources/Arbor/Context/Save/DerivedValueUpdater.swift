import Foundation

/// Computes a save's derived attributes (see `DerivationTable`), before validation, so that the
/// values written are those of the graph being saved.
///
/// 1. Every changed object marks the derivations it affects: its own (all of them when it is
///    inserted, those whose inputs changed otherwise, `now()` whenever it is written), and, at
///    depth d ≥ 1 of another object's walk, those of the objects that reach it — found by walking
///    the inverses back, through both the current and the saved partners, so an object that
///    moved updates its old and its new owner.
/// 2. Each marked object gets each marked value, computed over the context's current graph; a
///    value that changed is set as a change of the object (not an undoable edit).
///
/// Objects reached only through their saved partners may be faults: they are loaded.
struct DerivedValueUpdater {
    let context: ManagedObjectContext
    let table: DerivationTable
    /// One time for every `now()` of the save.
    private let now = Date()

    init(context: ManagedObjectContext, table: DerivationTable) {
        self.context = context
        self.table = table
    }

    /// Sets every derived value the changes alter; returns the values that could not be set
    /// (a count or sum too large for its attribute's type).
    func update() -> [ValidationFailure] {
        var marked: [ObjectIdentifier: (object: ManagedObject, derived: [DerivationTable.Derived])] = [:]
        func mark(_ object: ManagedObject, _ derived: DerivationTable.Derived) {
            guard !object.deletedFlag, context.owns(object) else { return }
            let key = ObjectIdentifier(object)
            if marked[key] == nil { marked[key] = (object, []) }
            if marked[key]?.derived.contains(where: { $0 === derived }) == false { marked[key]?.derived.append(derived) }
        }
        for object in Array(context.changed.values) where object.hasChanges {
            for dependency in table.dependencies(of: object.info) where affects(object, dependency) {
                if dependency.depth == 0 {
                    mark(object, dependency.derived)
                } else {
                    for root in roots(of: object, dependency) { mark(root, dependency.derived) }
                }
            }
        }
        var failures: [ValidationFailure] = []
        // In a fixed order, so that the faults loaded and the failures reported do not vary.
        for (object, derived) in marked.values.sorted(by: { $0.object.objectID.primaryKey < $1.object.objectID.primaryKey }) {
            for derived in derived { if let failure = update(derived, on: object) { failures.append(failure) } }
        }
        return failures
    }

    /// Sets `derived` on each of `objects` (loaded as needed), whatever changed: what a
    /// migration that added or changed the derivation leaves to do.
    func recompute(_ derived: DerivationTable.Derived, on objects: [ManagedObject]) -> [ValidationFailure] {
        objects.filter { context.fulfillQuietly($0) }.compactMap { update(derived, on: $0) }
    }

    /// Computes and sets `derived` on `object`; the failure when the value does not fit.
    private func update(_ derived: DerivationTable.Derived, on object: ManagedObject) -> ValidationFailure? {
        do {
            try set(value(of: derived, on: object), of: derived, on: object)
            return nil
        } catch {
            return ValidationFailure(objectID: object.objectID, entity: object.entityName, key: derived.key,
                                     kind: .invalidValue("derived from \(derived.expression): \(error)"))
        }
    }

    // MARK: What a change affects

    /// Whether `object`'s changes alter the derivation it takes part in as `dependency`.
    private func affects(_ object: ManagedObject, _ dependency: DerivationTable.Dependency) -> Bool {
        if dependency.depth == 0 {
            if object.deletedFlag { return false }
            if object.insertedFlag { return true }
            if case .now = dependency.derived.derivation.form { return object.hasStoredChanges || object.toMany.hasChanges }
        } else if object.insertedFlag || object.deletedFlag {
            return true
        }
        return dependency.columnSlots.contains { object.changes[$0] != nil }
            || dependency.toManySlots.contains { object.toMany[$0]?.isChanged == true }
    }

    /// The objects at depth 0 whose walk reaches `object` at its depth: the inverses followed
    /// back, each through its current and its saved partners.
    private func roots(of object: ManagedObject, _ dependency: DerivationTable.Dependency) -> [ManagedObject] {
        var level = [object]
        for depth in stride(from: dependency.depth, to: 0, by: -1) {
            let back = dependency.derived.inverses[depth - 1]
            var seen: Set<ObjectID> = []
            var next: [ManagedObject] = []
            for member in level {
                for id in partners(of: member, through: back) where seen.insert(id).inserted {
                    if let partner = existingObject(id) { next.append(partner) }
                }
            }
            level = next
        }
        return level
    }

    /// The object with `id` if it still exists: registered, or stored (an object inserted and
    /// then deleted before any save is gone, and is not made again).
    private func existingObject(_ id: ObjectID) -> ManagedObject? {
        if let registered = context.registeredObject(for: id) { return registered }
        guard !id.isTemporaryID else { return nil }
        let object = context.object(with: id)
        return context.fulfillQuietly(object) ? object : nil
    }

    /// The current and the saved partners of `object` through `relationship`.
    private func partners(of object: ManagedObject, through relationship: EntityInfo.Relationship) -> [ObjectID] {
        if relationship.kind == .toOne {
            let current = context.toOneTarget(object, relationship)
            let saved = context.committedValue(object, slot: relationship.slot).reference
            return [current, saved].compactMap { $0 }
        }
        return context.members(object, relationship) + context.committedMembers(object, relationship)
    }

    // MARK: Computing a value

    /// The object at the end of the to-one steps `steps` from `object` (nil when one is nil).
    private func follow(_ steps: ArraySlice<EntityInfo.Relationship>, from object: ManagedObject) -> ManagedObject? {
        var current = object
        for step in steps {
            guard let target = context.toOneTarget(current, step) else { return nil }
            current = context.object(with: target)
        }
        return current
    }

    private func value(of derived: DerivationTable.Derived, on object: ManagedObject) -> AttributeValue {
        switch derived.derivation.form {
        case .now:
            return .date(now)
        case .keyPath, .function:
            guard let source = derived.source, let end = follow(derived.steps[...], from: object) else { return .null }
            let value = context.currentAttribute(end, slot: source.slot)
            guard case .function(let function, _) = derived.derivation.form, case .string(let text) = value else { return value }
            switch function {
            case .lowercase: return .string(text.lowercased())
            case .uppercase: return .string(text.uppercased())
            case .canonical: return .string(ValueOrder.fold(text, [.caseInsensitive, .diacriticInsensitive]))
            }
        case .aggregate(_, let function, _):
            guard let toMany = derived.steps.last, let owner = follow(derived.steps.dropLast(), from: object) else { return .null }
            let members = context.members(owner, toMany).filter { context.registeredObject(for: $0)?.deletedFlag != true }
            if function == .count { return .int(Int64(members.count)) }
            guard let source = derived.source else { return .null }
            let values = members.map { context.currentAttribute(context.object(with: $0), slot: source.slot) }.filter { !$0.isNull }
            return PredicateEvaluator.aggregate(function, values)  // as a predicate's aggregate computes it
        }
    }

    /// Sets `value`, as the attribute's type, when it differs from the current one.
    private func set(_ value: AttributeValue, of derived: DerivationTable.Derived, on object: ManagedObject) throws {
        let type = derived.attribute.description.type
        guard let converted = Self.convert(value, to: type) else {
            throw DerivedValueError("\(value) does not fit \(type.rawValue)")
        }
        let slot = derived.attribute.slot
        guard context.currentAttribute(object, slot: slot) != converted else { return }
        object.changes[slot] = .value(converted)
        if !object.insertedFlag, context.committedValue(object, slot: slot) == .value(converted) { object.changes[slot] = nil }
        context.markChanged(object)
        object.observeChange(slot)
    }

    /// `value` as a value of `type`: numbers convert between numeric types when exact enough.
    static func convert(_ value: AttributeValue, to type: AttributeType) -> AttributeValue? {
        if value.fits(type) { return value }
        guard type.isNumeric, let number = ValueOrder.number(value) else { return nil }
        switch type {
        case .int16, .int32, .int64:
            guard let integer = Int64(exactly: number.rounded()) else { return nil }
            let result = AttributeValue.int(integer)
            return result.fits(type) ? result : nil
        case .double: return .double(number)
        case .float: return .float(Float(number))
        case .decimal:
            if case .int(let integer) = value { return .decimal(Decimal(integer)) }
            return .decimal(Decimal(number))
        default: return nil
        }
    }
}

/// Why a derived value could not be set.
struct DerivedValueError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
