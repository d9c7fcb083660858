import Foundation

/// A stored property's value inside an object: an attribute value, a to-one reference (by ID,
/// so related objects never retain each other), or a value that could not be converted (reported
/// by validation at save time).
enum PropertyValue: Hashable {
    case value(AttributeValue)
    case reference(ObjectID?)
    case invalid(String)

    static let null = PropertyValue.value(.null)

    var reference: ObjectID? {
        if case .reference(let id) = self { return id }
        return nil
    }

    var attributeValue: AttributeValue {
        if case .value(let value) = self { return value }
        return .null
    }

    /// The value with a reference's ID passed through `map`.
    func remapped(_ map: (ObjectID) -> ObjectID) -> PropertyValue {
        if case .reference(let target?) = self { return .reference(map(target)) }
        return self
    }
}

/// The to-many relationship states of an object, by relationship slot. Storage is allocated
/// on the first state written: most fetched objects never touch their to-many relationships.
struct ToManySlots {
    private var states: [ToManyState?] = []

    /// The slots that may hold a state (the others read as nil).
    var indices: Range<Int> { states.indices }

    /// Whether any relationship has unsaved changes.
    var hasChanges: Bool { states.contains { $0?.isChanged == true } }

    subscript(slot: Int) -> ToManyState? {
        get { slot < states.count ? states[slot] : nil }
        set {
            if slot >= states.count {
                guard newValue != nil else { return }
                states.append(contentsOf: repeatElement(nil, count: slot + 1 - states.count))
            }
            states[slot] = newValue
        }
    }
}

/// The in-memory state of one to-many relationship of one object.
///
/// Changes made before the relationship was read are kept as a delta (`added`, `removed`), so
/// setting `stopTime.stop = stop` costs no I/O on the stop; reading the relationship loads the
/// stored members once and applies the delta.
struct ToManyState {
    /// The stored members as last read (nil: not read yet).
    var committed: [ObjectID]?
    /// The current members (nil: not materialized; then `committed` ∪ `added` − `removed`).
    var current: [ObjectID]?
    var added: [ObjectID] = []
    var removed: Set<ObjectID> = []
    /// The app set or reordered an ordered relationship: save the full order.
    var orderChanged = false
    var isChanged = false

    /// Appends a member (no effect when it is already one). A member removed earlier and
    /// appended again moves to the end, as in an ordered set.
    mutating func append(_ id: ObjectID) {
        isChanged = true
        if current != nil {
            if current?.contains(id) == false { current?.append(id) }
            return
        }
        if !added.contains(id) { added.append(id) }
    }

    mutating func remove(_ id: ObjectID) {
        isChanged = true
        if current != nil {
            current?.removeAll { $0 == id }
            return
        }
        if let position = added.firstIndex(of: id) { added.remove(at: position) }
        removed.insert(id)
    }

    /// Materializes `current` from the stored members.
    mutating func materialize(stored: [ObjectID]) {
        guard current == nil else { return }
        committed = stored
        let removedSet = removed
        var list = stored.filter { !removedSet.contains($0) }
        let present = Set(list)
        list.append(contentsOf: added.filter { !present.contains($0) })
        current = list
        added = []
        removed = []
    }

    /// For a materialized list: the members added since it was read, when they are all at the
    /// end and the stored members kept their order (so saving can append); nil when the order
    /// changed otherwise (saving must rewrite the whole order).
    var appendedMembers: [ObjectID]? {
        guard let current else { return added }
        if orderChanged { return nil }
        let stored = committed ?? []
        let storedSet = Set(stored), currentSet = Set(current)
        let newMembers = current.filter { !storedSet.contains($0) }
        guard current.filter(storedSet.contains) == stored.filter(currentSet.contains),
              Array(current.suffix(newMembers.count)) == newMembers else { return nil }
        return newMembers
    }

    /// Passes every member ID through `map` (an object that took another ID), keeping each
    /// member once.
    mutating func remap(_ map: (ObjectID) -> ObjectID) {
        func unique(_ ids: [ObjectID]) -> [ObjectID] {
            var seen = Set<ObjectID>()
            return ids.map(map).filter { seen.insert($0).inserted }
        }
        committed = committed.map(unique)
        current = current.map(unique)
        added = unique(added)
        removed = Set(removed.map(map))
    }

    /// After a successful save: the current members are the stored ones.
    mutating func commit(remap: (ObjectID) -> ObjectID) {
        if let current {
            let mapped = current.map(remap)
            self.current = mapped
            committed = mapped
        } else {
            // Not materialized: the stored list is unknown here; forget it and re-read on access.
            committed = nil
        }
        added = []
        removed = []
        orderChanged = false
        isChanged = false
    }
}
