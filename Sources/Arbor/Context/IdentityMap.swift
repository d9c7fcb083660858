/// A context's identity map: at most one object per ID, none of them retained.
///
/// An open-addressed table (linear probing, a power-of-two number of slots) of its own rather
/// than a `Dictionary`: an object remembers its slot (`ManagedObject.identitySlot`), so
/// removing it — its release above all, a fetch of many objects releasing them all together —
/// empties its entry without hashing its ID or probing.
///
/// Entries are not weak references: those gave every object a side table (an allocation, and
/// slower retains and releases for its whole life). Instead an object empties its own entry as
/// it deinitializes (`remove`), so every entry names a live object or none. Emptied entries
/// keep their ID (a probe passes over them, and registering that ID again refills them); they
/// are dropped when the table is rebuilt, which happens once entries fill three quarters of
/// the slots. A table rebuilt to register one more object is sized so that the live objects
/// fill at most three eighths of it: three eighths of its slots are then filled before the next
/// rebuild, so rebuilding costs O(1) amortized per object registered. A table rebuilt for a
/// reservation (a fetch about to register its objects) is sized as a dictionary would be, the
/// objects reserved for filling at most three quarters of it.
struct IdentityMap {
    /// A slot: the ID and its object (not retained), or nothing yet.
    private struct Entry {
        /// nil: the slot was never filled since the last rebuild (a probe stops here).
        var id: ObjectID?
        /// nil: emptied (its object was released or removed).
        var reference: Unmanaged<ManagedObject>?

        static var vacant: Entry { Entry(id: nil, reference: nil) }

        var object: ManagedObject? { reference?.takeUnretainedValue() }
        /// Whether the entry is `object` (compared by address: nothing is retained).
        func holds(_ object: ManagedObject) -> Bool { reference?.toOpaque() == Unmanaged.passUnretained(object).toOpaque() }
    }

    private var slots = [Entry](repeating: .vacant, count: IdentityMap.minimumCapacity)
    /// Entries with an ID, emptied ones included (they await the next rebuild).
    private(set) var entryCount = 0

    static let minimumCapacity = 16
    /// Past this many slots, `removeAll` starts again from the minimum instead of clearing.
    static let keptCapacity = 8_192

    /// `slots.count - 1` (a power of two minus one).
    private var mask: Int { slots.count &- 1 }

    /// Changes that move or add entries (registrations, rebuilds): a `Slot` from before one
    /// no longer says where an ID's entry goes.
    private var moves = 0

    /// Where an ID's entry is or would go, as `lookup` found it.
    struct Slot {
        fileprivate let position: Int
        fileprivate let moves: Int
    }

    /// The object registered for `id`, if it is alive. O(1) expected.
    subscript(id: ObjectID) -> ManagedObject? { slots[find(id)].object }

    /// The object registered for `id`, if it is alive, and the slot `register(_:at:)` fills
    /// for it: an object made for an ID not found is registered without a second probe.
    /// O(1) expected.
    func lookup(_ id: ObjectID) -> (object: ManagedObject?, slot: Slot) {
        let position = find(id)
        return (slots[position].object, Slot(position: position, moves: moves))
    }

    /// Makes `object` the one for its ID (replacing any other). O(1) amortized.
    mutating func register(_ object: ManagedObject) {
        if (entryCount + 1) * 4 > slots.count * 3 { rebuild(forMore: 1, fill: 3.0 / 8) }
        fill(find(object.objectID), with: object)
    }

    /// `register(_:)` at `slot`, which `lookup` gave for the object's ID: probed again only
    /// when entries moved since (another registration, or the table must grow first).
    mutating func register(_ object: ManagedObject, at slot: Slot) {
        guard slot.moves == moves, (entryCount + 1) * 4 <= slots.count * 3 else { return register(object) }
        fill(slot.position, with: object)
    }

    /// Puts `object` in the slot of its ID's entry (`position`, found by `find`).
    private mutating func fill(_ position: Int, with object: ManagedObject) {
        if slots[position].id == nil {
            slots[position].id = object.objectID
            entryCount += 1
            moves &+= 1
        }
        slots[position].reference = Unmanaged.passUnretained(object)
        object.identitySlot = position
    }

    /// Empties `object`'s entry in place — for a removal, or for a deinitializing object —
    /// found by the slot the object remembers, when the entry is still that object (a reset, a
    /// rebuild after its removal, or a newer object for the same ID may have taken the slot).
    /// O(1), no hashing.
    mutating func remove(_ object: ManagedObject) {
        let position = object.identitySlot
        guard position >= 0, position < slots.count, slots[position].holds(object) else { return }
        slots[position].reference = nil
    }

    /// The live objects, retained: a loop over them may release objects (their prefetched
    /// relatives), which then leave the map while it is being walked.
    var liveObjects: [ManagedObject] { slots.compactMap(\.object) }

    /// Makes room for `count` more objects (a fetch would otherwise rebuild at every doubling).
    mutating func reserveCapacity(forMore count: Int) {
        if (entryCount + count) * 4 > slots.count * 3 { rebuild(forMore: count, fill: 3.0 / 4) }
    }

    /// Forgets every object. A context reset between fetches refills the map to about the same
    /// size: a modest table is kept, sparing it a rebuild at every doubling.
    mutating func removeAll() {
        if slots.count <= Self.keptCapacity {
            for position in slots.indices { slots[position] = .vacant }
        } else {
            slots = [Entry](repeating: .vacant, count: Self.minimumCapacity)
        }
        entryCount = 0
        moves &+= 1
    }

    /// The slot of `id`'s entry, or the vacant slot where its entry would go.
    private func find(_ id: ObjectID) -> Int {
        var position = Int(truncatingIfNeeded: mixedHash(id.hashBits, seed: 0)) & mask
        while let stored = slots[position].id {
            if stored.primaryKey == id.primaryKey, stored == id { return position }
            position = (position &+ 1) & mask
        }
        return position
    }

    /// Rebuilds the table without its emptied entries, with room for the live objects and
    /// `more`: they fill at most the fraction `fill` of the new slots. Live objects learn their
    /// new slot.
    private mutating func rebuild(forMore more: Int, fill: Double) {
        let live = slots.filter { $0.reference != nil }
        var capacity = Self.minimumCapacity
        while Double(live.count + more) > Double(capacity) * fill { capacity *= 2 }
        slots = [Entry](repeating: .vacant, count: capacity)
        entryCount = live.count
        moves &+= 1
        for entry in live {
            guard let id = entry.id, let reference = entry.reference else { continue }
            let position = find(id)
            slots[position] = entry
            reference.takeUnretainedValue().identitySlot = position
        }
    }

    /// Checks that every entry can be found from its ID's home slot, that `entryCount` counts
    /// the entries, and that each live object remembers its slot (tests).
    func checkInvariants() -> Bool {
        var counted = 0
        for (position, entry) in slots.enumerated() {
            guard let id = entry.id else { continue }
            counted += 1
            guard find(id) == position else { return false }
            if let object = entry.object, object.identitySlot != position { return false }
        }
        return counted == entryCount && entryCount * 4 <= slots.count * 3
    }
}
