/// A bounded LRU cache of validated pages, shared by all transactions of a database.
///
/// Pages are immutable once committed, so the cache needs no per-transaction versions:
/// a page number is only reused after no reader can reach its old contents (see the freelist).
/// Capacity is in bytes; lookups and inserts are O(1) under one mutex.
final class PageCache: Sendable {
    private struct Entry {
        var page: Page?
        var previous: Int
        var next: Int
    }

    private struct State {
        var index: [PageID: Int] = [:]
        var entries: [Entry] = []
        var freeSlots: [Int] = []
        var head = -1   // most recently used
        var tail = -1   // least recently used
        var bytes = 0
        var hits: UInt64 = 0
        var misses: UInt64 = 0
    }

    let capacityBytes: Int
    private let state = Locked(State())

    init(capacityBytes: Int) {
        self.capacityBytes = max(capacityBytes, 0)
    }

    func page(_ id: PageID) -> Page? {
        state.withLock { state in
            guard let slot = state.index[id] else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            Self.moveToFront(&state, slot)
            return state.entries[slot].page
        }
    }

    func insert(_ page: Page) {
        guard page.size <= capacityBytes else { return }
        state.withLock { state in
            if let slot = state.index[page.id] {
                state.bytes += page.size - (state.entries[slot].page?.size ?? 0)
                state.entries[slot].page = page
                Self.moveToFront(&state, slot)
            } else {
                let slot: Int
                if let free = state.freeSlots.popLast() {
                    slot = free
                    state.entries[slot] = Entry(page: page, previous: -1, next: -1)
                } else {
                    slot = state.entries.count
                    state.entries.append(Entry(page: page, previous: -1, next: -1))
                }
                state.index[page.id] = slot
                state.bytes += page.size
                Self.linkAtFront(&state, slot)
            }
            while state.bytes > capacityBytes, state.tail >= 0 {
                Self.evict(&state, state.tail)
            }
        }
    }

    func remove(_ id: PageID) {
        state.withLock { state in
            if let slot = state.index[id] { Self.evict(&state, slot) }
        }
    }

    func removeAll() {
        state.withLock { state in state = State(hits: state.hits, misses: state.misses) }
    }

    var statistics: (bytes: Int, pages: Int, hits: UInt64, misses: UInt64) {
        state.withLock { ($0.bytes, $0.index.count, $0.hits, $0.misses) }
    }

    private static func evict(_ state: inout State, _ slot: Int) {
        unlink(&state, slot)
        if let page = state.entries[slot].page {
            state.bytes -= page.size
            state.index[page.id] = nil
        }
        state.entries[slot].page = nil
        state.freeSlots.append(slot)
    }

    private static func unlink(_ state: inout State, _ slot: Int) {
        let previous = state.entries[slot].previous, next = state.entries[slot].next
        if previous >= 0 { state.entries[previous].next = next } else { state.head = next }
        if next >= 0 { state.entries[next].previous = previous } else { state.tail = previous }
        state.entries[slot].previous = -1
        state.entries[slot].next = -1
    }

    private static func linkAtFront(_ state: inout State, _ slot: Int) {
        state.entries[slot].previous = -1
        state.entries[slot].next = state.head
        if state.head >= 0 { state.entries[state.head].previous = slot }
        state.head = slot
        if state.tail < 0 { state.tail = slot }
    }

    private static func moveToFront(_ state: inout State, _ slot: Int) {
        guard state.head != slot else { return }
        unlink(&state, slot)
        linkAtFront(&state, slot)
    }
}
