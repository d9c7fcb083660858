/// A bounded cache of validated pages, shared by all transactions of a database.
///
/// Pages are immutable once committed, so the cache needs no per-transaction versions:
/// a page number is only reused after no reader can reach its old contents (see the freelist).
/// Capacity is in bytes. Every point lookup of every transaction passes through here, so a hit
/// costs one mutex, one probe of an open-addressed table with a multiplicative hash (no
/// `Hasher`) and setting a bit: eviction is CLOCK (second chance), which approximates LRU
/// without relinking a list on every hit. Lookups and inserts are O(1) on average.
final class PageCache: Sendable {
    private let state: Locked<PageTable>
    let capacityBytes: Int

    init(capacityBytes: Int) {
        self.capacityBytes = max(capacityBytes, 0)
        state = Locked(PageTable())
    }

    func page(_ id: PageID) -> Page? {
        state.withLock { table in
            guard let slot = table.find(id) else {
                table.misses &+= 1
                return nil
            }
            table.hits &+= 1
            table.entries[slot].referenced = true
            return table.entries[slot].page
        }
    }

    func insert(_ page: Page) {
        guard page.size <= capacityBytes else { return }
        let capacity = capacityBytes
        state.withLock { table in
            // Room is made first: evicting after the insert could take the new page itself (it
            // sits just behind the hand, unreferenced, and is the last the sweep meets).
            while table.bytes + page.size > capacity, table.evictOne() {}
            table.insert(page)
        }
    }

    func remove(_ id: PageID) {
        state.withLock { table in table.remove(id) }
    }

    func removeAll() {
        state.withLock { table in
            var empty = PageTable()
            (empty.hits, empty.misses) = (table.hits, table.misses)
            table = empty
        }
    }

    var statistics: (bytes: Int, pages: Int, hits: UInt64, misses: UInt64) {
        state.withLock { ($0.bytes, $0.count, $0.hits, $0.misses) }
    }
}

/// The cache's state: entries (a page and its CLOCK bit) in slots, and an open-addressed table
/// from page number to slot with linear probing, at most half full. Each bucket holds the page
/// number beside the slot, so a probe reads the table only, never a page.
struct PageTable: Sendable {
    struct Entry {
        var page: Page?
        var referenced = false
    }

    var entries: [Entry] = []
    var freeSlots: [Int] = []
    /// Per bucket: the page number in the high 32 bits, slot + 1 in the low 32; 0 is an empty
    /// bucket. The count is a power of two.
    private var buckets = [UInt64](repeating: 0, count: 16)
    private var hand = 0
    private(set) var count = 0
    private(set) var bytes = 0
    var hits: UInt64 = 0
    var misses: UInt64 = 0

    private var mask: Int { buckets.count - 1 }

    /// Fibonacci hashing: page numbers are dense, the multiply spreads them over the buckets.
    private func home(_ id: PageID) -> Int { Int(truncatingIfNeeded: (UInt64(id) &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask }

    /// A bucket's contents for page `id` in `slot`.
    private static func bucketValue(_ id: PageID, slot: Int) -> UInt64 { UInt64(id) << 32 | UInt64(slot + 1) }
    /// The page number of a used bucket's contents.
    private static func pageID(_ value: UInt64) -> PageID { PageID(truncatingIfNeeded: value >> 32) }
    /// The slot of a used bucket's contents.
    private static func slot(_ value: UInt64) -> Int { Int(UInt32(truncatingIfNeeded: value)) - 1 }

    /// The bucket holding `id`, or the empty bucket where it would go.
    private func bucket(_ id: PageID) -> (index: Int, found: Bool) {
        var index = home(id)
        // At most half the buckets are used, so an empty one comes within `buckets.count` steps.
        for _ in 0..<buckets.count {
            let value = buckets[index]
            if value == 0 { return (index, false) }
            if Self.pageID(value) == id { return (index, true) }
            index = (index + 1) & mask
        }
        return (index, false)
    }

    func find(_ id: PageID) -> Int? {
        let (index, found) = bucket(id)
        return found ? Self.slot(buckets[index]) : nil
    }

    mutating func insert(_ page: Page) {
        let (index, found) = bucket(page.id)
        if found {
            let slot = Self.slot(buckets[index])
            bytes += page.size - (entries[slot].page?.size ?? 0)
            entries[slot] = Entry(page: page, referenced: true)
            return
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            entries[slot] = Entry(page: page)
        } else {
            slot = entries.count
            entries.append(Entry(page: page))
        }
        buckets[index] = Self.bucketValue(page.id, slot: slot)
        count += 1
        bytes += page.size
        if count * 2 > buckets.count { grow() }
    }

    mutating func remove(_ id: PageID) {
        let (index, found) = bucket(id)
        if found { evict(slot: Self.slot(buckets[index]), id: id) }
    }

    /// Evicts the first page the CLOCK hand finds unreferenced (clearing the bits it passes);
    /// false when the cache is empty. Two sweeps at most.
    mutating func evictOne() -> Bool {
        guard count > 0 else { return false }
        for _ in 0..<(2 * entries.count + 1) {
            if hand >= entries.count { hand = 0 }
            let current = hand
            hand += 1
            guard let page = entries[current].page else { continue }
            if entries[current].referenced {
                entries[current].referenced = false
                continue
            }
            evict(slot: current, id: page.id)
            return true
        }
        return false
    }

    /// Frees `slot` (holding page `id`) and its bucket. The entry goes even if no bucket were
    /// found, so eviction always makes progress.
    private mutating func evict(slot: Int, id: PageID) {
        let (index, found) = bucket(id)
        bytes -= entries[slot].page?.size ?? 0
        entries[slot] = Entry()
        freeSlots.append(slot)
        count -= 1
        guard found, buckets[index] == Self.bucketValue(id, slot: slot) else { return }
        // Backward-shift deletion: later entries of the probe run move up, so lookups never
        // stop early at the hole. The table is at most half full: an empty bucket ends the run.
        var hole = index
        var next = (index + 1) & mask
        buckets[hole] = 0
        for _ in 0..<buckets.count {
            if buckets[next] == 0 { break }
            let wanted = home(Self.pageID(buckets[next]))
            // Move it when its home is not cyclically within (hole, next].
            let stays = hole <= next ? (hole < wanted && wanted <= next) : (hole < wanted || wanted <= next)
            if !stays {
                buckets[hole] = buckets[next]
                buckets[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    private mutating func grow() {
        buckets = [UInt64](repeating: 0, count: buckets.count * 2)
        for (slot, entry) in entries.enumerated() {
            guard let page = entry.page else { continue }
            let (index, _) = bucket(page.id)
            buckets[index] = Self.bucketValue(page.id, slot: slot)
        }
    }
}
