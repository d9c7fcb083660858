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
        // Most indexes of an entity are not led by a bounded column: ruled out before any work.
        // A text index holds terms, not values (see `textSearch`).
        guard !index.isText, let first = index.slots.first, conditions.contains(slot: first) else { return nil }
        // The encoded leading columns of each search, ascending: equalities extend each, an
        // IN list multiplies them (lists are sorted, so the products stay in key order, and
        // their ranges are disjoint since no component's encoding is a prefix of another's).
        var prefixes: [[UInt8]] = [[]]
        var score = 0
        var used: [ConditionLabel] = []
        var exact = KeyPositions()
        for (position, slot) in index.slots.enumerated() {
            // The column's conditions, and those this index can serve (`usable`); an equality
            // or a list of values serves before any range.
            var all = 0, usable = 0
            var equal: (value: TupleValue, part: Int)?
            var oneOf: (values: ComponentSet, part: Int)?
            // By position, the slot compared first: an entry is copied (its condition's
            // values retained) only when it is the column's.
            let entries = conditions.entries
            for e in entries.indices where entries[e].slot == slot {
                all += 1
                guard let option = Self.usable(entries[e].condition, by: index) else { continue }
                usable += 1
                switch option {
                case .equal(let value): if equal == nil { equal = (value, entries[e].part) }
                case .oneOf(let values): if oneOf == nil { oneOf = (values, entries[e].part) }
                default: break
                }
            }
            guard usable > 0 else { break }
            if let (value, part) = equal {
                if index.isForeignKey, isNull(value) { return nil }  // nil references have no entries
                let component = TupleKey.encode(component: value)
                for position in prefixes.indices { prefixes[position].append(contentsOf: component) }
                score += 4
                used.append(conditions.label(part))
                if all == 1 { exact.insert(position) }
                continue
            }
            if let (values, part) = oneOf, prefixes.count * values.count <= maximumRanges {
                if index.isForeignKey, values.values.contains(where: isNull) { return nil }
                var product: [[UInt8]] = []
                product.reserveCapacity(prefixes.count * values.count)
                for prefix in prefixes {
                    for component in values.encoded { product.append(prefix + component) }
                }
                prefixes = product
                score += 3
                used.append(conditions.label(part))
                if all == 1 { exact.insert(position) }
                continue
            }
            // A range or prefix on this column ends the usable part of the index.
            var lower: (TupleValue, Bool)?, upper: (TupleValue, Bool)?
            var stringPrefix: String?
            var lowers = 0, uppers = 0, rangeCount = 0, prefixCount = 0
            for e in entries.indices where entries[e].slot == slot {
                switch Self.usable(entries[e].condition, by: index) {
                case .range(let low, let high):
                    if let low { lower = low; lowers += 1 }
                    if let high { upper = high; uppers += 1 }
                    rangeCount += 1
                    used.append(conditions.label(entries[e].part))
                case .prefix(let value):
                    stringPrefix = value
                    prefixCount += 1
                    used.append(conditions.label(entries[e].part))
                default: break
                }
            }
            // Every condition of the column is encoded in the range, none replaced by another
            // (`x >= a AND x <= b`, as a departure window states it; not `x > a AND x > b`):
            // the range answers them exactly, and no key filter need repeat them.
            let encodesAll = usable == all && rangeCount + prefixCount == all
                && lowers <= 1 && uppers <= 1 && (prefixCount == 0 || all == 1)
            if encodesAll { exact.insert(position) }
            if let stringPrefix {
                let encoded = encodedStringPrefix(stringPrefix)
                return (score + 2, prefixes.map { KeyRange.prefix($0 + encoded) }, used, exact)
            }
            if lower != nil || upper != nil {
                return (score + 2, prefixes.map { rangeFor(prefix: $0, lower: lower, upper: upper) }, used, exact)
            }
            exact.remove(position)
            break
        }
        guard score > 0 else { return nil }
        return (score, prefixes.map { KeyRange.prefix($0) }, used, exact)
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
