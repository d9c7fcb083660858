/// A position in one tree of a transaction, for ordered iteration and range scans.
///
/// A cursor keeps the path from the root to its leaf, so `next` and `previous` are amortized
/// O(1) and every step is bounded by the tree depth (no sibling pointers to follow on disk).
/// Modifying the tree in the same write transaction invalidates the cursor (`cursorInvalidated`).
public final class Cursor {
    let transaction: Transaction
    let box: TreeBox
    let version: Int
    /// The path from the root to the current leaf position. Unchecked: a cursor is used by one
    /// caller at a time and its methods never overlap their own accesses to the path, so the
    /// run-time check (about 100 instructions at each row lookup) guards nothing.
    @exclusivity(unchecked) private var stack: [(ref: NodeRef, index: Int)] = []
    /// The branch levels (from the root) where the last `descend(to:)` chose the same child as
    /// the descent before it: where keys come in order, worth testing first next time.
    @exclusivity(unchecked) private var sharedLevels = 0

    init(transaction: Transaction, box: TreeBox) {
        self.transaction = transaction
        self.box = box
        self.version = box.version
    }

    /// Whether the cursor is on an entry.
    public var isPositioned: Bool {
        guard let top = stack.last else { return false }
        return top.ref.level == 0 && top.index < top.ref.count
    }

    /// The key at the cursor, or nil when it is not on an entry.
    public var key: [UInt8]? {
        guard isPositioned, let top = stack.last else { return nil }
        return top.ref.key(top.index)
    }

    /// Calls `body` with the key bytes in place (no copy), or returns nil when not positioned.
    public func withKey<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard isPositioned, let top = stack.last else { return nil }
        return try top.ref.withKey(top.index, body)
    }

    /// The value at the cursor, reading its overflow chain if it has one.
    /// - Throws: `cursorInvalidated`, `corruptPage`; returns an empty array when not positioned.
    public func value() throws -> [UInt8] {
        try check()
        guard isPositioned, let top = stack.last else { return [] }
        return try transaction.resolve(top.ref.leafValue(top.index))
    }

    /// Calls `body` with the value at the cursor in place (valid only during the call) and
    /// returns its result, or nil when the cursor is not on an entry.
    /// - Throws: `cursorInvalidated`, `corruptPage` (an overflow chain is read into a copy).
    public func withValue<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try check()
        guard isPositioned, let top = stack.last else { return nil }
        return try transaction.withEntry(top.ref, top.index) { _, value in try body(value) }
    }

    /// Moves to the first entry; false when the tree is empty.
    @discardableResult
    public func first() throws -> Bool {
        try check()
        stack.removeAll(keepingCapacity: true)
        guard box.info.root != 0 else { return false }
        try descend(from: box.info.root, level: box.info.depth - 1, leftmost: true)
        return isPositioned
    }

    /// Moves to the last entry; false when the tree is empty.
    @discardableResult
    public func last() throws -> Bool {
        try check()
        stack.removeAll(keepingCapacity: true)
        guard box.info.root != 0 else { return false }
        try descend(from: box.info.root, level: box.info.depth - 1, leftmost: false)
        return isPositioned
    }

    /// Moves to the first entry whose key is >= `key`; false when there is none.
    ///
    /// The descent starts from the cursor's current path: each level whose chosen child still
    /// covers `key` is kept without a search, so seeking keys in ascending order (the rows of a
    /// batch, the members of one owner) costs a search in the levels where the paths part, and
    /// in the leaf, instead of a walk from the root each time.
    /// - Complexity: O(log n) page visits; O(log b) for b entries per page when `key` falls in
    ///   the cursor's current leaf.
    @discardableResult
    public func seek(_ key: [UInt8]) throws -> Bool {
        try check()
        guard box.info.root != 0 else {
            stack.removeAll(keepingCapacity: true)
            return false
        }
        try key.withUnsafeBytes { try descend(to: $0) }
        if let top = stack.last, top.index >= top.ref.count { return try nextLeaf() }
        return true
    }

    /// Calls `body` with the value stored under `key` in place (valid only during the call)
    /// and returns its result, or nil when `key` is absent. Leaves the cursor where `key` is or
    /// would be, so that the next lookup reuses the path as `seek` does: point lookups in
    /// ascending key order share the upper levels of their descents.
    /// - Complexity: as `seek`, plus reading an overflow chain when the value has one.
    public func withValue<R>(forKey key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try check()
        guard box.info.root != 0 else { return nil }
        try descend(to: key)
        guard let top = stack.last, top.index < top.ref.count, top.ref.withKey(top.index, { compareBytes($0, key) }) == 0 else {
            return nil
        }
        return try transaction.withEntry(top.ref, top.index) { _, value in try body(value) }
    }

    /// Moves to the next entry; false (and unpositioned) past the end.
    @discardableResult
    public func next() throws -> Bool {
        try check()
        guard isPositioned else { return false }
        stack[stack.count - 1].index += 1
        if let top = stack.last, top.index < top.ref.count { return true }
        return try nextLeaf()
    }

    /// Moves to the previous entry; false (and unpositioned) before the start.
    @discardableResult
    public func previous() throws -> Bool {
        try check()
        guard isPositioned else { return false }
        if stack[stack.count - 1].index > 0 {
            stack[stack.count - 1].index -= 1
            return true
        }
        // Climb to the nearest branch with a child to the left, then descend its rightmost path.
        stack.removeLast()
        while let top = stack.last {
            if top.index > 0 {
                let index = top.index - 1
                stack[stack.count - 1].index = index
                try descend(from: top.ref.child(index), level: top.ref.level - 1, leftmost: false)
                return isPositioned
            }
            stack.removeLast()
        }
        return false
    }

    // MARK: Ranges

    /// Positions on the first entry inside `range`; false when the range is empty.
    func seekFirst(in range: KeyRange) throws -> Bool {
        var positioned: Bool
        if let lower = range.lower {
            positioned = try seek(lower.key)
            if positioned, !lower.inclusive, key == lower.key { positioned = try next() }
        } else {
            positioned = try first()
        }
        // The key where it lies: a probe per owner of a semi-join passes here each time.
        guard positioned, let inside = withKey({ range.isBelowUpper($0) }) else { return false }
        return inside
    }

    /// Positions on the last entry inside `range`; false when the range is empty.
    func seekLast(in range: KeyRange) throws -> Bool {
        var positioned: Bool
        if let upper = range.upper {
            positioned = try seek(upper.key)
            if positioned {
                if !(upper.inclusive && key == upper.key) { positioned = try previous() }
            } else {
                positioned = try last()
            }
        } else {
            positioned = try last()
        }
        guard positioned, let key else { return false }
        return range.isAboveLower(key)
    }

    /// Visits the entries of each of `ranges` in turn, until `body` returns false: the ranges'
    /// entries in order, a leaf at a time, without copying keys or values. One cursor serves
    /// them all: each range after the first is found by a seek from where the previous one
    /// ended, which keeps the levels of the path that still cover its start, so many ranges
    /// close together (the points of a long IN list) cost a search in a leaf each rather than
    /// a descent from the root.
    ///
    /// For entries in key order, give ranges that are ascending and disjoint (descending with
    /// `reverse`); other ranges are still visited in the order given.
    /// - Complexity: O(log n) for the first range, then O(log b) for a range starting in the
    ///   leaf where the previous one ended (b entries per page), O(log n) otherwise; amortized
    ///   O(1) per entry visited.
    public func scan(_ ranges: [KeyRange], reverse: Bool = false, filter: (any ScanKeyFilter)? = nil,
                     _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        var stopped = false
        for range in ranges {
            try scan(in: range, reverse: reverse, filter: filter) { key, value in
                if try body(key, value) { return true }
                stopped = true
                return false
            }
            if stopped { return }
        }
    }

    /// Visits the entries of `range` in order, a leaf at a time, without copying keys or values.
    /// The upper (or, in reverse, lower) bound is looked for only in the leaf where it ends, by
    /// binary search: no key is compared with it on the way.
    func scan(in range: KeyRange, reverse: Bool, filter: (any ScanKeyFilter)? = nil,
              _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard try reverse ? seekLast(in: range) : seekFirst(in: range) else { return }
        // The filter is called by optional chaining: binding it (`if let`) per entry would
        // retain and release it each time, which costs about as much as most filters.
        // Its own range test, read at each leaf, is applied first (see `ScanKeyFilter.scanRange`),
        // with the entries it rejects counted until the filter is next called.
        var scanRejected = 0
        defer { if scanRejected > 0 { filter?.scanRejected(scanRejected) } }
        while let top = stack.last, isPositioned {
            let ref = top.ref
            let edge = reverse ? 0 : ref.count - 1
            let boundInside = ref.withKey(edge) { key in
                reverse ? !range.isAboveLower(key) : !range.isBelowUpper(key)
            }
            let step = reverse ? -1 : 1
            var index = top.index
            // Where the bound falls inside this leaf, find it once by binary search: the entries
            // before it then need no comparison each.
            let end = boundInside ? Self.boundEdge(ref, from: index, in: range, reverse: reverse) : (reverse ? -1 : ref.count)
            switch ref {
            case .page(let page):
                // The entries are read in place: the page stays alive on the path (`stack`),
                // which nothing changes during the loop.
                if let scanRange = filter?.scanRange {
                    guard let rest = try visitTesting(page, from: index, to: end, step: step, range: scanRange,
                                                      filter: filter, rejected: &scanRejected, body) else { return }
                    index = rest
                }
                // Without a range test (most scans, or the rest of a leaf whose filter stopped
                // offering one): a loop of its own, as lean as can be.
                while index != end {
                    let (key, inline) = page.leafEntry(index)
                    if try filter?.admits(key) != false {
                        guard try visit(page, index, key, inline, body) else { return }
                    }
                    index += step
                }
            case .node(let node):
                while index != end {
                    let keepGoing = try node.keys.withBytes(index) { key in
                        if try filter?.admits(key) == false { return true }
                        if let result = try node.values.withInline(index, { try body(key, $0) }) { return result }
                        return try transaction.resolve(node.values[index]).withUnsafeBytes { try body(key, $0) }
                    }
                    guard keepGoing else { return }
                    index += step
                }
            }
            if boundInside { return }
            stack[stack.count - 1].index = edge
            guard try reverse ? previous() : next() else { return }
        }
    }

    /// `scan`'s loop over entries `start` toward `end` of a leaf when its filter offers a range
    /// to test: a run of entries the range rejects is skipped in one call and counted in
    /// `rejected` (every 1,024th goes to the filter instead, see `ScanKeyFilter.scanRejected`).
    /// Returns `end`, or the index to go on from without a range when the filter stops
    /// offering one (the body may change what it admits); nil when the body ends the scan.
    private func visitTesting(_ page: Page, from start: Int, to end: Int, step: Int, range: FixedComponentRange,
                              filter: (any ScanKeyFilter)?, rejected: inout Int,
                              _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Int? {
        var index = start, range = range
        while index != end {
            let next = page.firstNotRejected(from: index, to: end, step: step, by: range, atMost: 1023 - rejected)
            rejected += (next - index) * step
            index = next
            if index == end { break }
            if rejected > 0 {
                filter?.scanRejected(rejected)
                rejected = 0
            }
            let (key, inline) = page.leafEntry(index)
            index += step
            if try filter?.admits(key) != false {
                guard try visit(page, index - step, key, inline, body) else { return nil }
                guard let current = filter?.scanRange else { return index }
                range = current
            }
        }
        return end
    }

    /// Calls `body` with a leaf entry: its inline value in place, or an overflowing value read.
    @inline(__always)
    private func visit(_ page: Page, _ index: Int, _ key: UnsafeRawBufferPointer, _ inline: UnsafeRawBufferPointer?,
                       _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool {
        if let inline { return try body(key, inline) }
        return try transaction.resolve(page.leafValue(index)).withUnsafeBytes { try body(key, $0) }
    }

    /// The first index past `range` going from `start` through leaf `ref` (forward: the first
    /// key not below the upper bound, else `count`; reverse: the last key not above the lower
    /// bound, else -1). Keys are sorted, so the bound test flips once: a binary search.
    static func boundEdge(_ ref: NodeRef, from start: Int, in range: KeyRange, reverse: Bool) -> Int {
        if reverse {
            // Largest index in [-1, start] whose key is not above the lower bound.
            var low = -1, high = start
            while low < high {
                let mid = (low + high + 1) >> 1
                if ref.withKey(mid, { range.isAboveLower($0) }) { high = mid - 1 } else { low = mid }
            }
            return low
        }
        // Smallest index in [start, count] whose key is not below the upper bound.
        var low = start, high = ref.count
        while low < high {
            let mid = (low + high) >> 1
            if ref.withKey(mid, { range.isBelowUpper($0) }) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Counts the entries in `range` from the cursor's start, a whole leaf at a time.
    func countForward(in range: KeyRange) throws -> Int {
        guard try seekFirst(in: range) else { return 0 }
        var total = 0
        while let top = stack.last, isPositioned {
            let ref = top.ref
            let lastInLeaf = ref.count - 1
            if ref.withKey(lastInLeaf, { range.isBelowUpper($0) }) {
                total += ref.count - top.index
                stack[stack.count - 1].index = lastInLeaf
                guard try next() else { break }
            } else {
                // The range ends inside this leaf: binary search its end.
                var low = top.index, high = lastInLeaf
                while low < high {
                    let mid = (low + high) >> 1
                    if ref.withKey(mid, { range.isBelowUpper($0) }) { low = mid + 1 } else { high = mid }
                }
                total += low - top.index
                break
            }
        }
        return total
    }

    // MARK: Internals

    private func check() throws {
        try transaction.ensureOpen()
        guard box.version == version, !box.isDropped else { throw ArborError.cursorInvalidated }
    }

    /// Sets the path to the leaf covering `key`, the index there its lower bound (which may be
    /// the leaf's count). Nodes of the current path that a descent to `key` passes through again
    /// are taken from the path, not loaded; where the last descent shared a level with the one
    /// before, the chosen child is first tested for still covering `key` (two comparisons instead
    /// of a binary search). Either way the choices are those of a descent from the root.
    private func descend(to key: UnsafeRawBufferPointer) throws {
        // Edited as a local: each access to a stored property costs a run-time exclusivity check.
        var path: [(ref: NodeRef, index: Int)] = []
        swap(&path, &stack)
        defer { swap(&path, &stack) }
        let depth = box.info.depth
        let reuse = path.count == depth
        if !reuse {
            path.removeAll(keepingCapacity: true)
            // One allocation for the whole descent (appending level by level grew it 1, 2, 4…).
            if path.capacity < depth { path.reserveCapacity(depth) }
        }
        do {
            try descend(to: key, along: &path, reuse: reuse)
        } catch {
            // A page failed to load partway: the path may mix two descents. Start afresh next time.
            path.removeAll()
            throw error
        }
    }

    /// `descend(to:)` over `path` (the stack, moved out): `reuse` when it holds a whole path.
    private func descend(to key: UnsafeRawBufferPointer, along path: inout [(ref: NodeRef, index: Int)], reuse: Bool) throws {
        let depth = box.info.depth
        // A key between the first and last keys of the current leaf is in that leaf: a descent
        // would choose every level of the path again. Keys sought in ascending order that fall
        // close together (the points of an IN list, a batch of rows) then cost one search in
        // the leaf each.
        // Both tests read the prefixes pages keep (see `Page+SearchPrefixes`) before any key:
        // for keys sought in random order they fail, and should cost little.
        let target = reuse ? Page.searchPrefix(key) : 0
        if reuse, Self.position(&path[depth - 1], inLeafSpanning: key, target: target) {
            sharedLevels = depth - 1
            return
        }
        let sharedBefore = reuse ? sharedLevels : 0
        var ref = reuse ? path[0].ref : try transaction.node(box.info.root, level: depth - 1)
        // Whether `ref` is the node the path holds at this level.
        var onPath = reuse
        var shared = depth - 1
        // `step`: levels below the root.
        for step in 0..<(depth - 1) {
            let previous = onPath ? path[step].index : -1
            let index: Int
            if onPath, step < sharedBefore, Self.child(previous, of: ref, covers: key, target: target) {
                index = previous
            } else {
                index = ref.childIndex(for: key)
            }
            let next: NodeRef
            if onPath, index == previous {
                next = path[step + 1].ref
            } else {
                if onPath { shared = step }
                onPath = false
                next = try transaction.node(ref.child(index), level: depth - 2 - step)
            }
            if reuse { path[step] = (ref, index) } else { path.append((ref, index)) }
            ref = next
        }
        let leaf = (ref: ref, index: ref.lowerBound(key))
        if reuse { path[depth - 1] = leaf } else { path.append(leaf) }
        sharedLevels = reuse ? shared : 0
    }

    /// Moves `slot`'s index to `key` when its leaf spans `key` (see `leaf(_:spans:target:)`);
    /// whether it did. The leaf is read in the path, not copied out of it (a retain and a release).
    private static func position(_ slot: inout (ref: NodeRef, index: Int), inLeafSpanning key: UnsafeRawBufferPointer, target: UInt64) -> Bool {
        guard slot.ref.count > 0, leaf(slot.ref, spans: key, target: target) else { return false }
        // The leaf the cursor searched last: its bytes are in the CPU's caches, not worth asking for.
        slot.index = slot.ref.lowerBound(key, prefetching: false)
        return true
    }

    /// Whether `key` (search prefix `target`) lies between leaf `ref`'s first and last keys.
    private static func leaf(_ ref: NodeRef, spans key: UnsafeRawBufferPointer, target: UInt64) -> Bool {
        if case .page(let page) = ref, let told = page.leafSpans(target: target) { return told }
        return ref.withKey(0, { compareBytes($0, key) }) <= 0 && ref.withKey(ref.count - 1, { compareBytes(key, $0) }) <= 0
    }

    /// Whether child `index` of branch `ref` covers `key` (search prefix `target`): the
    /// separator before it is <= `key` and the one after it is > `key` (a descent picks the
    /// child after every separator <= key).
    private static func child(_ index: Int, of ref: NodeRef, covers key: UnsafeRawBufferPointer, target: UInt64) -> Bool {
        if case .page(let page) = ref, let told = page.childCovers(index, target: target) { return told }
        if index > 0, ref.withKey(index - 1, { compareBytes($0, key) }) > 0 { return false }
        if index < ref.count, ref.withKey(index, { compareBytes(key, $0) }) >= 0 { return false }
        return true
    }

    private func descend(from start: PageID, level startLevel: Int, leftmost: Bool) throws {
        var id = start
        var level = startLevel
        while true {
            let ref = try transaction.node(id, level: level)
            if level == 0 {
                stack.append((ref, leftmost ? 0 : max(ref.count - 1, 0)))
                return
            }
            let index = leftmost ? 0 : ref.count
            stack.append((ref, index))
            id = ref.child(index)
            level -= 1
        }
    }

    /// From a leaf position past its last entry, moves to the first entry of the next leaf.
    private func nextLeaf() throws -> Bool {
        stack.removeLast()
        while let top = stack.last {
            if top.index < top.ref.count {
                let index = top.index + 1
                stack[stack.count - 1].index = index
                try descend(from: top.ref.child(index), level: top.ref.level - 1, leftmost: true)
                return isPositioned
            }
            stack.removeLast()
        }
        return false
    }
}
