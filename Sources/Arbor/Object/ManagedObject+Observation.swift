import Observation

/// An object's registrar, made on its first read that Observation registers, and its entity's
/// key paths (taken once per object, not under the entity's lock at every read).
final class ObjectObservation {
    let registrar = ObservationRegistrar()
    let keyPaths: [KeyPath<ManagedObject, Int>]

    init(keyPaths: [KeyPath<ManagedObject, Int>]) {
        self.keyPaths = keyPaths
    }
}

// Managed objects work with Swift's Observation when their context `observesObjects`:
// - a property read registers the property's key path with the object's registrar;
// - a change to the property tells the registrar, so observers of that property, and only of
//   it, fire. Edits fire as they are made; refreshes, merges, rollbacks and resets compare
//   what observers may have read before and after (`ObservedValues`) and fire for what differs.
// Each property has one key path per entity (`EntityInfo.observationKeyPaths`): the registrar
// is per object, so the key path only has to tell the object's properties apart.
extension ManagedObject: Observable {
    /// The key Observation tracks a property by: its number in `EntityInfo.observationKeyPaths`
    /// (a column's slot; a to-many relationship's slot after the columns).
    subscript(observationKey key: Int) -> Int { key }

    /// Whether observers may be watching this object (a read was registered once).
    var isObserved: Bool { observation != nil }

    /// Registers a read of the property with observation key `key`, when this object's context
    /// observes its objects.
    /// - Complexity: O(1); about 110 instructions, 1,000 more for an object's first.
    @inline(__always)
    final func observeRead(_ key: Int) {
        guard let link = contextLink, link.observesObjects else { return }
        registerRead(key)
    }

    /// Registers a read of `relationship` (a to-one by its column, a to-many after the columns).
    final func observeRead(_ relationship: EntityInfo.Relationship) {
        observeRead(relationship.kind == .toOne ? relationship.slot : info.columnCount + relationship.slot)
    }

    private func registerRead(_ key: Int) {
        let observation = self.observation ?? ObjectObservation(keyPaths: info.observationKeyPaths.all)
        self.observation = observation
        let keyPaths = observation.keyPaths
        guard key >= 0, key < keyPaths.count else { return }
        observation.registrar.access(self, keyPath: keyPaths[key])
    }

    /// Tells the observers of the property with observation key `key` that it changed.
    final func observeChange(_ key: Int) {
        guard let observation else { return }
        let keyPaths = observation.keyPaths
        guard key >= 0, key < keyPaths.count else { return }
        observation.registrar.willSet(self, keyPath: keyPaths[key])
        observation.registrar.didSet(self, keyPath: keyPaths[key])
    }

    /// Tells the observers of the to-many relationship at `slot` that its members changed.
    final func observeMembersChange(_ slot: Int) {
        observeChange(info.columnCount + slot)
    }

    // MARK: Changes made wholesale

    /// What observers of this object may have read: its columns and its loaded to-many lists,
    /// read without loading anything (nil where not loaded).
    func observedValues() -> ObservedValues {
        var columns: [PropertyValue?] = []
        columns.reserveCapacity(info.columnCount)
        let committed = insertedFlag ? nil : committedValues
        for slot in 0..<info.columnCount {
            if let changed = changes[slot] {
                columns.append(changed)
            } else if insertedFlag {
                columns.append(.null)
            } else if let committed, slot < committed.count {
                columns.append(committed[slot])
            } else {
                columns.append(nil)
            }
        }
        let transients = info.transientAttributes.map { changes[$0.slot] ?? .value(committedTransientValue($0)) }
        return ObservedValues(columns: columns, lists: (0..<info.toManyCount).map { toMany[$0]?.current }, transients: transients)
    }

    /// Tells observers which properties differ from `before`, loading again what `before` had
    /// loaded (so an observed object refreshed into a fault is read at once, and its lists too).
    /// Properties not loaded before were not read since the last such comparison: they stay
    /// unloaded and do not fire.
    func notifyObservers(since before: ObservedValues) {
        guard isObserved else { return }
        let context = managedObjectContext
        if let context, before.columns.contains(where: { $0 != nil }) { context.fulfillQuietly(self) }
        let after = observedValues()
        for slot in before.columns.indices {
            guard let old = before.columns[slot] else { continue }
            let new = context == nil ? PropertyValue.null : (slot < after.columns.count ? after.columns[slot] : nil)
            if new != old { observeChange(slot) }
        }
        for (attribute, old) in zip(info.transientAttributes, before.transients) {
            let new = context == nil ? PropertyValue.null : changes[attribute.slot] ?? .value(committedTransientValue(attribute))
            if new != old { observeChange(attribute.slot) }
        }
        for relationship in info.relationships where relationship.kind != .toOne {
            guard relationship.slot < before.lists.count, let old = before.lists[relationship.slot] else { continue }
            let new = context.map { $0.members(self, relationship) } ?? []
            if new != old { observeMembersChange(relationship.slot) }
        }
    }
}

/// The values of an object its observers may have read (see `ManagedObject.observedValues`).
struct ObservedValues {
    /// Per column slot; nil when not loaded.
    var columns: [PropertyValue?]
    /// Per to-many slot; nil when not loaded.
    var lists: [[ObjectID]?]
    /// Per transient attribute (always in memory).
    var transients: [PropertyValue] = []
}

extension ManagedObjectContext {
    /// Makes `change` to `object`, then fires its observers for the properties that changed.
    /// Objects nobody observed pay one test.
    func changingObserved<Result>(_ object: ManagedObject, _ change: () throws -> Result) rethrows -> Result {
        guard object.isObserved else { return try change() }
        let before = object.observedValues()
        defer { object.notifyObservers(since: before) }
        return try change()
    }
}
