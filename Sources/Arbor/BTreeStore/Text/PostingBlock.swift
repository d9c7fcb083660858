import ArborEngine

/// The value of a text index's tree entry: the primary keys of one term's block of postings
/// (Spec/object-store.md §4, "Text indexes").
///
/// A block's entry has the key (term, first primary key) and the value
///
///     count (varint, ≥ 1) · gap₁ … gap₍count−1₎ (varints, each ≥ 1)
///
/// where key i + 1 = key i + gap i + 1, so the keys are strictly ascending. Most gaps of a
/// common term take one byte: a posting costs a byte or two where an entry per (term, key)
/// cost the term again, the key and a cell.
enum PostingBlock {
    /// A writer closes a block at this many keys: a save rewrites at most two blocks of a term,
    /// and a search reads keys a block at a time.
    static let maximumCount = 128
    /// ... or at this many bytes, so a block is always stored in its leaf (a 4 KiB page stores
    /// values up to 1,002 bytes inline), whatever its gaps.
    static let maximumBytes = 512

    /// `keys` (ascending, distinct, positive) as a block's value.
    static func encode(_ keys: ArraySlice<Int64>, into value: inout [UInt8]) {
        RowCodec.appendVarint(UInt64(keys.count), &value)
        var previous = keys.first ?? 0
        for key in keys.dropFirst() {
            RowCodec.appendVarint(UInt64(key - previous - 1), &value)
            previous = key
        }
    }

    /// The blocks `keys` (ascending, distinct, positive) are written as: as many keys as fit
    /// in each, in order (ranges of `keys`' indices).
    static func chunks(_ keys: [Int64]) -> [Range<Int>] {
        var chunks: [Range<Int>] = []
        var start = 0
        while start < keys.count {
            var end = start + 1, bytes = 2
            while end < keys.count && end - start < maximumCount {
                bytes += ArborEngine.varintLength(UInt64(keys[end] - keys[end - 1] - 1))
                if bytes > maximumBytes { break }
                end += 1
            }
            chunks.append(start..<end)
            start = end
        }
        return chunks
    }

    /// The count a block's value begins with; nil when it is malformed (no count, a count of
    /// 0, or more gaps than bytes left).
    @inline(__always)
    static func count(_ value: UnsafeRawBufferPointer) -> Int? {
        var reader = ByteReader(bytes: value)
        guard let count = try? reader.varint(), count >= 1, count - 1 <= UInt64(reader.remaining) else { return nil }
        return Int(count)
    }

    /// Appends the keys of the block whose first key is `first` and whose value is `value`.
    /// False, leaving `keys` as it was, when the value is malformed: a count that does not
    /// match the gaps, a gap running past the end, or a key past `Int64.max`.
    static func decode(_ value: UnsafeRawBufferPointer, first: Int64, into keys: inout [Int64]) -> Bool {
        guard first > 0, let count = count(value) else { return false }
        let start = keys.count
        var reader = ByteReader(bytes: value)
        _ = try? reader.varint()
        keys.append(first)
        var key = first
        for _ in 1..<count {
            guard let gap = try? reader.varint(), gap < UInt64(Int64.max),
                  case (let sum, false) = key.addingReportingOverflow(Int64(gap)),
                  case (let next, false) = sum.addingReportingOverflow(1) else {
                keys.removeSubrange(start...)
                return false
            }
            keys.append(next)
            key = next
        }
        guard reader.isAtEnd else {
            keys.removeSubrange(start...)
            return false
        }
        return true
    }
}
