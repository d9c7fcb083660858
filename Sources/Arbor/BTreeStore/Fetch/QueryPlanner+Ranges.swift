import ArborEngine
import Foundation

/// Key ranges of an index that cover the rows meeting column conditions.
extension QueryPlanner {
    /// Key ranges of `index` that cover the rows meeting `conditions`, with a score (higher is
    /// more selective); nil when the index's first column has no condition.
    /// Also returns the key positions whose every condition the ranges encode exactly (a
    /// key filter there would only repeat the range).
    static func ranges(for index: EntityInfo.Index, _ conditions: ColumnConditions)
        -> (Int, [KeyRange], [ConditionLabel], exact: KeyPositions)? {
        guard let layout = IndexLayout(index, conditions), let ranges = layout.ranges(of: index, conditions.stated) else { return nil }
        return (layout.score, ranges, layout.used.map(conditions.label), layout.exact)
    }

    /// `condition` as `index` can serve it, or nil: a normalized index serves folded
    /// conditions on its string columns (and raw ones on other columns); a plain index serves
    /// raw conditions only.
    @inline(__always)
    static func usable(_ condition: Condition, by index: EntityInfo.Index) -> Condition? {
        switch condition {
        case .foldedEqual(let value): return index.isNormalized ? .equal(.string(value)) : nil
        case .foldedPrefix(let value): return index.isNormalized ? .prefix(value) : nil
        case .equal(.string), .oneOf, .range, .prefix: return index.isNormalized ? nil : condition
        default: return condition
        }
    }

    /// The encoding of a string component without its terminator: every key whose string
    /// starts with `prefix` starts with these bytes.
    static func encodedStringPrefix(_ prefix: String) -> [UInt8] {
        Array(TupleKey.encode(component: .string(prefix)).dropLast(2))
    }

    /// The range of keys that start with the encoded components `base` and continue with a
    /// component within the bounds.
    static func rangeFor(prefix base: [UInt8], lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?) -> KeyRange {
        // The tuple encoding is the concatenation of its components'.
        func extended(_ value: TupleValue) -> [UInt8] {
            var key = base
            key.reserveCapacity(base.count + 16)  // one allocation, not growth from empty
            TupleKey.append(value, descending: false, to: &key)
            return key
        }
        var range = KeyRange()
        if let (value, inclusive) = lower {
            let key = extended(value)
            // Keys extend the tuple with more components: "> v" starts after every extension of v.
            range.lower = inclusive ? KeyRange.Bound(key, inclusive: true) : successor(key).map { KeyRange.Bound($0, inclusive: true) }
            if !inclusive, range.lower == nil { range.lower = KeyRange.Bound(key, inclusive: false) }
        } else if !base.isEmpty {
            range.lower = KeyRange.Bound(base, inclusive: true)
        }
        if let (value, inclusive) = upper {
            let key = extended(value)
            range.upper = inclusive ? successor(key).map { KeyRange.Bound($0, inclusive: false) } : KeyRange.Bound(key, inclusive: false)
        } else if !base.isEmpty {
            range.upper = successor(base).map { KeyRange.Bound($0, inclusive: false) }
        }
        return range
    }

    /// The smallest byte string greater than every string starting with `bytes` (made in
    /// place when the caller gives up its last copy: an upper bound's key is built for this).
    static func successor(_ bytes: consuming [UInt8]) -> [UInt8]? {
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }
}
