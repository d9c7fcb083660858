import CPageKernels

/// A context's identity map: at most one object per ID, none of them retained.
///
/// An open-addressed table (linear probing, a power-of-two number of slots) of its own rather
/// than a `Dictionary`: an object remembers its slot (`ManagedObject.identitySlot`), so
/// removing it — its release above all, a fetch of many objects releasing them all together —
/// empties its entry without hashing its ID or probing.
///
/// Entries are not weak references: those gave every object a side table (an allocation, and
/// slower retains and releases for its whole life). Instead a deinitializing object leaves its
/// slot and address in a list (`noteDeparture`), and every other operation first empties the
/// entries listed that still hold those addresses (`settleDepartures`), so no operation meets
/// an entry naming a released object. Why a list: a large fetch's objects are released
/// together, each entry then a miss in the CPU's caches, and a tight loop over the list lets
/// those misses overlap where the deinitializers, each with its own work, made them wait one
/// after the other (a quarter of a 150,000-object fetch went to the two misses of each object,
/// its registration and its release). A table the caches hold has no list: its entries are
/// emptied at once. Nor do entries hold
/// the ID: each copy of an ID retains its entity, and a fetch registers every object it makes.
/// An entry keeps the ID's hash bits, which tell most other IDs apart, and compares whole IDs
/// through its object. An emptied entry matches no ID (a probe passes over it); registering an
/// ID takes the first emptied entry its probe passed, or the vacant slot that ended the probe.
/// Emptied entries are dropped when the table is rebuilt, which happens once used entries fill
/// three quarters of the slots. A table rebuilt to register one more object is sized so that
/// the live objects fill at most three eighths of it: three eighths of its slots are then
/// filled before the next rebuild, so rebuilding costs O(1) amortized per object registered. A
/// table rebuilt for a reservation (a fetch about to register its objects) is sized as a
/// dictionary would be, the objects reserved for filling at most three quarters of it.
struct IdentityMap {
    /// A slot: never used since the last rebuild, emptied, or holding an object (not retained).
    private struct Entry {
        /// The hash bits of the object's ID (`ObjectID.hashBits`): equal IDs have equal bits.
        var hashBits: UInt64
        /// nil: vacant or emptied (its object was released or removed).
        var reference: Unmanaged<ManagedObject>?
        /// Whether the slot was filled since the last rebuild (a probe stops at one that was not).
        var isUsed: Bool

        static var vacant: Entry { Entry(hashBits: 0, reference: nil, isUsed: false) }

        var object: ManagedObject? { reference?.takeUnretainedValue() }
        /// Whether the entry is `object` (compared by address: nothing is retained).
        func holds(_ object: ManagedObject) -> Bool { reference?.toOpaque() == Unmanaged.passUnretained(object).toOpaque() }
        /// Whether the entry holds the object of `id`, whose hash bits are `bits`; the object's
        /// ID is compared in place (no copy of it, so no retain of its entity).
        @inline(__always)
        func holds(_ id: ObjectID, bits: UInt64) -> Bool {
            guard hashBits == bits, let reference else { return false }
            return reference._withUnsafeGuaranteedRef { $0.objectID == id }
        }
    }

    private var slots = [Entry](repeating: .vacant, count: IdentityMap.minimumCapacity)
    /// Used entries, emptied ones included (they await the next rebuild).
    private(set) var entryCount = 0

    /// An object released since the last operation: its slot and its address, compared with
    /// the entry's (the entry may have been given to another object since it registered).
    private struct Departure {
        let position: Int
        let address: UnsafeMutableRawPointer
    }
    private var departures: [Departure] = []
    /// At this many departures the deinitializer noting the last settles the list: a bound on
    /// its memory when a context releases many objects and is then left alone.
    static let departuresKept = 4_096

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
        /// The ID's hash bits: filling the slot then copies no ID (a copy retains its entity).
        fileprivate let hashBits: UInt64
    }

    /// The object registered for `id`, if it is alive. O(1) expected.
    subscript(id: ObjectID) -> ManagedObject? {
        mutating get {
            settleDepartures()
            return find(id).found.map { slots[$0].object } ?? nil
        }
    }

    /// The object registered for `id`, if it is alive, and the slot `register(_:at:)` fills
    /// for it: an object made for an ID not found is registered without a second probe.
    /// O(1) expected. Mutating though it changes nothing: called on a context's map, a
    /// non-mutating method was given a copy of the map (a retain and a release of its table).
    mutating func lookup(_ id: ObjectID) -> (object: ManagedObject?, slot: Slot) {
        settleDepartures()
        let (found, free) = find(id)
        if let found { return (slots[found].object, Slot(position: found, moves: moves, hashBits: id.hashBits)) }
        return (nil, Slot(position: free, moves: moves, hashBits: id.hashBits))
    }

    /// Makes `object` the one for its ID (replacing any other). O(1) amortized.
    mutating func register(_ object: ManagedObject) {
        settleDepartures()
        if (entryCount + 1) * 4 > slots.count * 3 { rebuild(forMore: 1, fill: 3.0 / 8) }
        let id = object.objectID
        let (found, free) = find(id)
        fill(found ?? free, with: object, hashBits: id.hashBits)
    }

    /// `register(_:)` at `slot`, which `lookup` gave for the object's ID: probed again only
    /// when entries moved since (another registration, or the table must grow first).
    mutating func register(_ object: ManagedObject, at slot: Slot) {
        // Departures settled since `lookup` only empty entries: its slot still holds.
        settleDepartures()
        guard slot.moves == moves, (entryCount + 1) * 4 <= slots.count * 3 else { return register(object) }
        fill(slot.position, with: object, hashBits: slot.hashBits)
    }

    /// Puts `object`, whose ID's hash bits are `hashBits`, in the slot `position`: its ID's
    /// entry, or the free slot `find` gave for it.
    private mutating func fill(_ position: Int, with object: ManagedObject, hashBits: UInt64) {
        if !slots[position].isUsed {
            slots[position].isUsed = true
            entryCount += 1
        }
        if slots[position].reference == nil { moves &+= 1 }  // a new entry for the ID: slots found before no longer hold
        slots[position].hashBits = hashBits
        slots[position].reference = Unmanaged.passUnretained(object)
        object.identitySlot = position
    }

    /// Empties `object`'s entry in place — for a removal, or for a deinitializing object —
    /// found by the slot the object remembers, when the entry is still that object (a reset, a
    /// rebuild after its removal, or a newer object for the same ID may have taken the slot).
    /// O(1), no hashing.
    mutating func remove(_ object: ManagedObject) {
        settleDepartures()
        empty(object)
    }

    /// `remove(_:)` once departures are settled.
    private mutating func empty(_ object: ManagedObject) {
        let position = object.identitySlot
        guard position >= 0, position < slots.count, slots[position].holds(object) else { return }
        slots[position].reference = nil
    }

    /// Notes that `object`, registered or not, is deinitializing: its entry is emptied before
    /// the next operation. O(1) amortized: the list is settled when it reaches
    /// `departuresKept`, in a loop whose cache misses overlap.
    mutating func noteDeparture(_ object: ManagedObject) {
        let position = object.identitySlot
        guard position >= 0 else { return }
        // A table the CPU's caches hold: emptied at once, which costs less than a list.
        guard outgrowsCaches || !departures.isEmpty else { return empty(object) }
        departures.append(Departure(position: position, address: Unmanaged.passUnretained(object).toOpaque()))
        if departures.count >= Self.departuresKept { settleDepartures() }
    }

    /// Empties the entries of the objects released since the last operation, where they still
    /// hold them. Entries only hold addresses: a released object is never reached, and an
    /// address reused by a newer object cannot be in the table before this runs.
    @inline(__always)
    private mutating func settleDepartures() {
        if !departures.isEmpty { settleListedDepartures() }
    }

    @inline(never)
    private mutating func settleListedDepartures() {
        for departure in departures where departure.position < slots.count
            && slots[departure.position].reference?.toOpaque() == departure.address {
            slots[departure.position].reference = nil
        }
        departures.removeAll(keepingCapacity: true)  // at most `departuresKept` entries (64 KiB)
    }

    /// Whether the table is larger than the CPU's caches hold (more than half a megabyte):
    /// its entries are then misses, worth a list of departures and prefetches.
    var outgrowsCaches: Bool { slots.count > cachedSlotLimit }
    static let cachedSlots = 1 << 15
    /// `IdentityMap.cachedSlots`, or less for tests of the list with small tables.
    private let cachedSlotLimit: Int

    init(cachedSlots: Int = IdentityMap.cachedSlots) {
        cachedSlotLimit = cachedSlots
    }

    /// Asks the CPU to bring into its caches, without waiting, the entry that an ID whose hash
    /// bits are `hashBits` (`ObjectID.hashBits`) probes first: a fetch asks for the entries of
    /// the objects it makes a few rows ahead, so that their misses overlap with its work on the
    /// rows between. It takes the bits, not the ID: a copy of an ID retains its entity.
    mutating func prefetch(hashBits: UInt64) {
        let position = Int(truncatingIfNeeded: mixedHash(hashBits, seed: 0)) & mask
        slots.withUnsafeBufferPointer { entries in
            if let base = entries.baseAddress { arbor_prefetch_for_write(base + position, MemoryLayout<Entry>.size) }
        }
    }

    /// The live objects, retained: a loop over them may release objects (their prefetched
    /// relatives), which then leave the map while it is being walked.
    var liveObjects: [ManagedObject] {
        mutating get {
            settleDepartures()
            return slots.compactMap(\.object)
        }
    }

    /// Makes room for `count` more objects (a fetch would otherwise rebuild at every doubling).
    mutating func reserveCapacity(forMore count: Int) {
        settleDepartures()
        if (entryCount + count) * 4 > slots.count * 3 { rebuild(forMore: count, fill: 3.0 / 4) }
    }

    /// Forgets every object. A context reset between fetches refills the map to about the same
    /// size: a modest table is kept, sparing it a rebuild at every doubling.
    mutating func removeAll() {
        departures.removeAll()
        if slots.count <= Self.keptCapacity {
            vacateAll()
        } else {
            slots = [Entry](repeating: .vacant, count: Self.minimumCapacity)
        }
        entryCount = 0
        moves &+= 1
    }

    /// Makes every slot vacant, keeping the table's storage.
    private mutating func vacateAll() {
        for position in slots.indices { slots[position] = .vacant }
    }

    /// The slot holding `id`'s object (nil if none), and the slot a new entry for it would take:
    /// the first emptied one the probe passed, or the vacant one that ended it.
    private func find(_ id: ObjectID) -> (found: Int?, free: Int) {
        let bits = id.hashBits
        var position = Int(truncatingIfNeeded: mixedHash(bits, seed: 0)) & mask
        var emptied: Int?
        while slots[position].isUsed {
            if slots[position].reference == nil {
                if emptied == nil { emptied = position }
            } else if slots[position].holds(id, bits: bits) {
                return (position, position)
            }
            position = (position &+ 1) & mask
        }
        return (nil, emptied ?? position)
    }

    /// Rebuilds the table without its emptied entries, with room for the live objects and
    /// `more`: they fill at most the fraction `fill` of the new slots. Live objects learn their
    /// new slot.
    private mutating func rebuild(forMore more: Int, fill: Double) {
        let live = slots.filter { $0.reference != nil }
        var capacity = Self.minimumCapacity
        while Double(live.count + more) > Double(capacity) * fill { capacity *= 2 }
        if capacity == slots.count {
            vacateAll()  // the same size: cleared in place, sparing a large table's pages a fresh fault each
        } else {
            slots = [Entry](repeating: .vacant, count: capacity)
        }
        entryCount = live.count
        moves &+= 1
        for var entry in live {
            // Live IDs are distinct: each goes to the first vacant slot from its home.
            var position = Int(truncatingIfNeeded: mixedHash(entry.hashBits, seed: 0)) & mask
            while slots[position].isUsed { position = (position &+ 1) & mask }
            entry.isUsed = true
            slots[position] = entry
            entry.reference?.takeUnretainedValue().identitySlot = position
        }
    }

    /// Checks that every live entry is the one its ID's probe finds and is remembered by its
    /// object, that its hash bits are its object's, and that `entryCount` counts the used
    /// entries (tests), once the departures noted are settled (in a copy).
    func checkInvariants() -> Bool {
        var settled = self
        settled.settleDepartures()
        return settled.checkSettledInvariants()
    }

    private func checkSettledInvariants() -> Bool {
        var counted = 0
        for (position, entry) in slots.enumerated() where entry.isUsed {
            counted += 1
            guard let object = entry.object else { continue }
            guard entry.hashBits == object.objectID.hashBits, find(object.objectID).found == position,
                  object.identitySlot == position else { return false }
        }
        return counted == entryCount && entryCount * 4 <= slots.count * 3
    }
}
