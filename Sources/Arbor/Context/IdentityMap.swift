/// A context's identity map: at most one object per ID, none of them retained.
///
/// Entries are not weak references: those gave every object a side table (an allocation, and
/// slower retains and releases for its whole life). Instead an object empties its own entry as
/// it deinitializes (`forget`), so every entry names a live object or none. Emptied entries
/// stay in place (removing from the open-addressed table moves and rehashes the entries after
/// it, which cost more than the rest of an object's release) and are swept when the map has
/// doubled since the last sweep, so sweeping costs O(1) amortized per object.
struct IdentityMap {
    /// An entry: the object, not retained, or empty.
    private struct Entry {
        private let reference: Unmanaged<ManagedObject>?
        init(_ object: ManagedObject?) { reference = object.map { Unmanaged.passUnretained($0) } }
        var object: ManagedObject? { reference?.takeUnretainedValue() }
        /// Whether the entry is `object` (compared by address: nothing is retained).
        func holds(_ object: ManagedObject) -> Bool { reference?.toOpaque() == Unmanaged.passUnretained(object).toOpaque() }
    }

    private var entries: [ObjectID: Entry] = [:]
    /// The size that triggers the next sweep: twice what survived the last one (at least 2,048).
    private var sweepThreshold = 2_048

    /// Entries, emptied ones included (they await the next sweep).
    var entryCount: Int { entries.count }

    /// The object registered for `id`, if it is alive. O(1).
    subscript(id: ObjectID) -> ManagedObject? { entries[id]?.object }

    /// Makes `object` the one for its ID (replacing any other). O(1) amortized.
    mutating func register(_ object: ManagedObject) {
        entries[object.objectID] = Entry(object)
        if entries.count > sweepThreshold { sweepEmptyEntries() }
    }

    /// Removes `object`'s entry, when the entry is that object.
    mutating func remove(_ object: ManagedObject) {
        if entries[object.objectID]?.holds(object) == true { entries[object.objectID] = nil }
    }

    /// Empties a deinitializing object's entry in place, when the entry is that object (a
    /// reset or a newer object for the same ID may have replaced it).
    mutating func forget(_ object: ManagedObject) {
        guard let index = entries.index(forKey: object.objectID), entries.values[index].holds(object) else { return }
        entries.values[index] = Entry(nil)
    }

    /// The live objects, retained: a loop over them may release objects (their prefetched
    /// relatives), which then leave the map while it is being walked.
    var liveObjects: [ManagedObject] { entries.values.compactMap(\.object) }

    /// Makes room for `count` more objects (a fetch would otherwise rehash at every doubling).
    mutating func reserveCapacity(forMore count: Int) { entries.reserveCapacity(entries.count + count) }

    /// Forgets every object. A context reset between fetches refills the map to about the same
    /// size: a modest table is kept, sparing it a rehash at every doubling.
    mutating func removeAll() { entries.removeAll(keepingCapacity: entries.capacity <= 4_096) }

    /// Drops emptied entries, rebuilding the table at its present capacity: the map refills to
    /// about the same size before the next sweep, and growing it again from empty would rehash
    /// it at every doubling.
    private mutating func sweepEmptyEntries() {
        var live = [ObjectID: Entry](minimumCapacity: entries.capacity)
        for (id, entry) in entries where entry.object != nil { live[id] = entry }
        entries = live
        sweepThreshold = max(2_048, entries.count * 2)
    }
}
