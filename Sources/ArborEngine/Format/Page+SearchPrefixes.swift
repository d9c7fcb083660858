import CPageKernels

/// Search prefixes of branch pages.
///
/// Every lookup binary-searches the branch pages on its way down, and the upper branches are
/// searched by nearly every lookup of their tree. Each step of that search would locate a
/// separator in the page and compare its bytes with the key. Instead, when a branch page is
/// loaded, the first eight bytes of each separator are read once into an array of big-endian
/// numbers (zero-padded when shorter); a search step then compares two integers, and reads
/// the separator's bytes only when the prefixes are equal.
///
/// Why it is exact: keys compare as byte strings (memcmp, a prefix first). When the padded
/// prefixes of `a` and `b` differ, they differ first at some byte `i < 8`. If both keys have
/// byte `i`, it decides; if `a` ends before `i`, `a` is a proper prefix of `b` (their bytes
/// agree up to `a`'s end) and so smaller, and `a`'s padding byte 0 is below `b`'s byte, which
/// is the same verdict. So prefix order, where prefixes differ, is key order.
///
/// Tuple keys of format 2 encode most integers in under eight bytes, so row keys and
/// foreign-key entries are usually decided by their prefix alone.
///
/// Compact leaves are searched the same way without an array: a leaf is usually searched once
/// or twice per load, too few times to pay for one. Each step reads the probed key's first
/// eight bytes in place with one load, masked to the key's length. A leaf whose first and last
/// keys fit in their prefixes (a table's, keyed by one integer) keeps those two prefixes, and
/// its search starts where the key's prefix falls between them (`InterpolationSearch`): for
/// dense row keys, two probes instead of eight, each a likely cache miss.
///
/// A leaf's search first asks the CPU for the whole page (`arbor_prefetch`, pages of up to
/// 8 KiB). A leaf in the page cache is often cold in the CPU's caches (a query that probes an
/// index once per candidate reaches leaves no earlier query touched), and a bisection's loads
/// wait for memory one after the other: a slot, then its key, eight times. Fetched together,
/// the lines arrive in about the time of one. The compound SUBQUERY of `arbor-bench transit`
/// took 8 to 11% less time for it (two sets of six alternating runs of 2,000 queries). A
/// cursor searching again the leaf it searched last (keys sought in ascending order) does not
/// ask: the page is in the caches, and its 64 prefetches cost more than the search.
extension Page {
    /// The largest page whose search prefetches it whole (128 prefetches).
    static let prefetchedPageLimit = 8192

    /// The first eight bytes of `key` as a big-endian number, zero-padded.
    @inline(__always)
    static func searchPrefix(_ key: UnsafeRawBufferPointer) -> UInt64 {
        guard let base = key.baseAddress else { return 0 }
        if key.count >= 8 { return UInt64(bigEndian: base.loadUnaligned(as: UInt64.self)) }
        return shortSearchPrefix(base, count: key.count)
    }

    /// `searchPrefix` of a key of `count` (< 8) bytes at `base`, by at most three loads, never
    /// past the key's end: four bytes, then two, then one, as the length's bits say. (Out of
    /// line: inlined, it made the searches that call `searchPrefix` too large to inline their
    /// comparisons.) A row key is usually four bytes.
    @inline(never)
    static func shortSearchPrefix(_ base: UnsafeRawPointer, count: Int) -> UInt64 {
        var value: UInt64 = 0, offset = 0
        if count & 4 != 0 {
            value = UInt64(UInt32(bigEndian: base.loadUnaligned(as: UInt32.self))) << 32
            offset = 4
        }
        if count & 2 != 0 {
            value |= UInt64(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self))) << UInt64(48 &- 8 &* offset)
            offset &+= 2
        }
        if count & 1 != 0 {
            value |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) << UInt64(56 &- 8 &* offset)
        }
        return value
    }

    /// The separator prefixes of a branch page whose layout has been validated (or that this
    /// process wrote itself), for `separatorPrefixes`; nil for other pages. Made once, when the
    /// page is made, before it is shared.
    /// - Complexity: O(count); a page's cells parsed once, which is small next to the checksum
    ///   and layout check every loaded page already costs.
    func makeSeparatorPrefixes() -> UnsafeMutableBufferPointer<UInt64>? {
        guard type == .branch, level > 0, count > 0 else { return nil }
        let prefixes = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: count)
        for index in 0..<count {
            prefixes.initializeElement(at: index, to: withKey(index) { Self.searchPrefix($0) })
        }
        return prefixes
    }

    /// `lowerBound(_:)` of a compact leaf (validated: every cell lies inside the page): keys
    /// are compared by search prefix, read in place; whole keys only when the prefixes tie
    /// and one of the keys is longer than eight bytes. Two keys of at most eight bytes with
    /// equal padded prefixes differ only in zero bytes past the shorter one's end, so the
    /// shorter one is first.
    func compactLeafLowerBound(_ key: UnsafeRawBufferPointer, prefetching: Bool = true) -> Int {
        guard let base = UnsafeRawPointer(bytes.baseAddress) else { return 0 }
        if prefetching, size <= Self.prefetchedPageLimit { arbor_prefetch(base, size) }
        let target = Self.searchPrefix(key)
        let count = self.count
        if let ends = leafKeyPrefixes, let guess = InterpolationSearch.guess(target, first: ends.first, last: ends.last, count: count) {
            return compactLeafLowerBound(key, target: target, guess: guess, base: base)
        }
        var low = 0, high = count
        while low < high {
            let mid = (low &+ high) &>> 1
            if compactKey(mid, isBefore: key, target: target, base: base) { low = mid &+ 1 } else { high = mid }
        }
        return low
    }

    /// `compactLeafLowerBound` from a guessed position, between the first key (before the
    /// target: its prefix says so) and the last (not before). Kept out of line so that the
    /// bisection's comparisons stay inlined in its loop.
    @inline(never)
    private func compactLeafLowerBound(_ key: UnsafeRawBufferPointer, target: UInt64, guess: Int, base: UnsafeRawPointer) -> Int {
        InterpolationSearch.lowerBound(low: 1, high: count &- 1, guess: guess) {
            compactKey($0, isBefore: key, target: target, base: base)
        }
    }

    /// Whether key `index` of this compact leaf (validated) is before `key`, whose search
    /// prefix is `target`: by prefixes, and by bytes only when they cannot tell (a tie with a
    /// key longer than eight bytes, or no eight readable bytes before the page ends).
    @inline(__always)
    func compactKey(_ index: Int, isBefore key: UnsafeRawBufferPointer, target: UInt64, base: UnsafeRawPointer) -> Bool {
        let (keyStart, keyLength, prefix) = compactKey(index, base: base)
        if let prefix {
            if prefix != target { return prefix < target }
            if keyLength <= 8 && key.count <= 8 { return keyLength < key.count }
        }
        return compareBytes(UnsafeRawBufferPointer(start: base + keyStart, count: keyLength), key) < 0
    }

    /// Key `index` of this compact leaf (validated): its start, its length, and its search
    /// prefix, read in place with one load (nil without eight readable bytes before the end).
    @inline(__always)
    func compactKey(_ index: Int, base: UnsafeRawPointer) -> (start: Int, length: Int, prefix: UInt64?) {
        let cell = compactLeafCell(in: raw, at: cellOffset(index), limit: size)
        guard cell.key <= size &- 8 else { return (cell.key, cell.keyLength, nil) }
        let word = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: cell.key, as: UInt64.self))
        // Validated keys are never empty: the shift is 8 to 56 bits.
        return (cell.key, cell.keyLength, cell.keyLength >= 8 ? word : word & ~(UInt64.max &>> UInt64(8 &* cell.keyLength)))
    }

    /// The search prefixes of the first and last keys of a compact leaf (validated, or written
    /// by this process) of at least eight cells, for `leafKeyPrefixes`: kept with the page so
    /// that an interpolated search reads neither key again. nil for other pages, and when
    /// either key is longer than eight bytes: keys of several components (an index's) share
    /// long prefixes, which predict positions badly; one integer (a table's row key) is whole
    /// in its prefix.
    func makeLeafKeyPrefixes() -> (first: UInt64, last: UInt64)? {
        guard compactCells, level == 0, count >= 8 else { return nil }
        let first = withKey(0) { $0.count <= 8 ? Self.searchPrefix($0) : nil }
        let last = withKey(count - 1) { $0.count <= 8 ? Self.searchPrefix($0) : nil }
        guard let first, let last else { return nil }
        return (first, last)
    }

    /// Whether a key whose search prefix is `target` lies between this compact leaf's first and
    /// last keys (inclusive), told by the two prefixes the leaf keeps: nil when they cannot
    /// tell (the target ties one of them) or the leaf keeps none.
    @inline(__always)
    func leafSpans(target: UInt64) -> Bool? {
        guard let ends = leafKeyPrefixes else { return nil }
        if target < ends.first || target > ends.last { return false }
        return target > ends.first && target < ends.last ? true : nil
    }

    /// Whether child `index` (0...count) of this branch covers a key whose search prefix is
    /// `target` — the separator before it is <= the key and the one after it > the key — told
    /// by the separator prefixes: nil when they cannot tell (a tie) or the page keeps none.
    @inline(__always)
    func childCovers(_ index: Int, target: UInt64) -> Bool? {
        guard let prefixes = separatorPrefixes, index >= 0, index <= prefixes.count else { return nil }
        var told = true
        if index > 0 {
            let before = prefixes[index &- 1]
            if before > target { return false }
            if before == target { told = false }
        }
        if index < prefixes.count {
            let after = prefixes[index]
            if after < target { return false }
            if after == target { told = false }
        }
        return told ? true : nil
    }

    /// `childIndex(for:)` over the separator prefixes: the first separator greater than `key`.
    ///
    /// The separators whose prefix is below the key's are counted first, by a bisection that
    /// compares prefixes only (no tie test in the loop); separators with the key's own prefix
    /// (keys longer than eight bytes, or the key itself) are then bisected by whole keys.
    @inline(__always)
    func childIndex(for key: UnsafeRawBufferPointer, prefixes: UnsafeMutableBufferPointer<UInt64>) -> Int {
        let target = Self.searchPrefix(key)
        let count = self.count
        guard count > 0, let first = prefixes.baseAddress else { return 0 }
        // Invariant: the index of the first prefix not below the target (count if none) is
        // in base ... base + length.
        var base = 0, length = count
        while length > 1 {
            let half = length &>> 1
            if first[base &+ half &- 1] < target { base &+= half }
            length &-= half
        }
        var low = first[base] < target ? base &+ 1 : base
        guard low < count, first[low] == target else { return low }
        var high = count
        while low < high {
            let mid = (low &+ high) &>> 1
            let notAbove = first[mid] != target ? first[mid] < target : withKey(mid, { compareBytes($0, key) }) <= 0
            if notAbove { low = mid &+ 1 } else { high = mid }
        }
        return low
    }
}
