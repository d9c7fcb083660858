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
/// eight bytes in place with one load, masked to the key's length.
extension Page {
    /// The first eight bytes of `key` as a big-endian number, zero-padded.
    @inline(__always)
    static func searchPrefix(_ key: UnsafeRawBufferPointer) -> UInt64 {
        guard let base = key.baseAddress else { return 0 }
        if key.count >= 8 { return UInt64(bigEndian: base.loadUnaligned(as: UInt64.self)) }
        var value: UInt64 = 0
        for offset in 0..<key.count {
            value |= UInt64(base.load(fromByteOffset: offset, as: UInt8.self)) << UInt64(56 - 8 * offset)
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
    func compactLeafLowerBound(_ key: UnsafeRawBufferPointer) -> Int {
        guard let base = UnsafeRawPointer(bytes.baseAddress) else { return 0 }
        let target = Self.searchPrefix(key), targetLength = key.count
        // A key with eight readable bytes before the page ends takes the fast step.
        let lastWord = size &- 8
        let raw = self.raw
        var low = 0, high = count
        while low < high {
            let mid = (low &+ high) &>> 1
            let cell = compactLeafCell(in: raw, at: cellOffset(mid), limit: size)
            let keyStart = cell.key, keyLength = cell.keyLength
            // The prefixes' verdict: negative when the key is before the target, positive when
            // not, 0 when they cannot tell (a tie with a long key, or no eight readable bytes).
            var order = 0
            if keyStart <= lastWord {
                let word = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: keyStart, as: UInt64.self))
                // Validated keys are never empty: the shift is 8 to 56 bits.
                let prefix = keyLength >= 8 ? word : word & ~(UInt64.max &>> UInt64(8 &* keyLength))
                if prefix != target {
                    order = prefix < target ? -1 : 1
                } else if keyLength <= 8 && targetLength <= 8 {
                    order = keyLength < targetLength ? -1 : 1
                }
            }
            let before = order != 0 ? order < 0 : compareBytes(UnsafeRawBufferPointer(start: base + keyStart, count: keyLength), key) < 0
            if before { low = mid &+ 1 } else { high = mid }
        }
        return low
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
