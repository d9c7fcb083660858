import ArborEngine
import Foundation

/// A condition on one column of an index entry, checked on the entry's key bytes in the page:
/// the column's component is located in place and compared with pre-encoded bounds by
/// `memcmp`, which orders like the values (the tuple encoding preserves order). No decoding,
/// no allocation per entry — a geo box's latitude is filtered this way inside the
/// (longitude, latitude) index.
final class KeyFilter {
    private enum Test {
        case equal([UInt8])
        case oneOf(ComponentSet)
        /// Encoded bounds with inclusivity; null never matches a range.
        case range(lower: ([UInt8], Bool)?, upper: ([UInt8], Bool)?)
        /// A range whose bounds `fixedRange` holds: encoded from `condition` only for an entry
        /// it cannot judge (a component of another kind, in a damaged or mixed column).
        case fixedRange
        /// A string component whose encoding starts with these bytes (tag and escaped UTF-8).
        case prefix([UInt8])
        case always
    }

    let position: Int
    private let test: Test
    /// A range's encoded bounds, also kept outside `test`: the per-entry check then reads them
    /// without copying an enum payload (and retaining its arrays) for every entry.
    private let lower: [UInt8]?, lowerInclusive: Bool
    private let upper: [UInt8]?, upperInclusive: Bool
    /// The source condition, for keys whose component is stored descending (bytes inverted).
    let condition: QueryPlanner.Condition
    /// A range whose bounds are fixed-size components (numbers, dates): an entry's component
    /// of the same kind is then checked with integer comparisons instead of `memcmp` calls,
    /// and a scan applies it itself (`KeyFilterSet.scanRange`).
    let fixedRange: FixedComponentRange?

    init(position: Int, condition: QueryPlanner.Condition) {
        self.position = position
        self.condition = condition
        // Numbers and dates (a geo box's latitude): compared in place, no bound encoded.
        if case .range(let lower, let upper) = condition {
            fixedRange = FixedComponentRange(position: position, lowerValue: lower.map { ($0.0, $0.1) }, upperValue: upper.map { ($0.0, $0.1) })
        } else {
            fixedRange = nil
        }
        switch condition {
        case .equal(let value): test = .equal(TupleKey.encode(component: value))
        case .oneOf(let values): test = .oneOf(values)
        case .range(let lower, let upper):
            // Bounds of another kind (a string) are compared by bytes.
            test = fixedRange != nil ? .fixedRange
                : .range(lower: lower.map { (TupleKey.encode(component: $0.0), $0.1) }, upper: upper.map { (TupleKey.encode(component: $0.0), $0.1) })
        case .prefix(let text): test = .prefix(QueryPlanner.encodedStringPrefix(text))
        case .foldedEqual, .foldedPrefix: test = .always
        }
        if case .range(let lower, let upper) = test {
            (self.lower, lowerInclusive) = (lower?.0, lower?.1 ?? true)
            (self.upper, upperInclusive) = (upper?.0, upper?.1 ?? true)
        } else {
            (self.lower, lowerInclusive, self.upper, upperInclusive) = (nil, true, nil, true)
        }
    }

    /// Whether the entry with key `key` meets the condition; a key too short for the position
    /// meets it (the row is then read and the whole predicate decides).
    /// - Throws: `malformedTupleKey` when the key cannot be decoded.
    @inline(__always)
    func matches(_ key: UnsafeRawBufferPointer) throws -> Bool {
        if let fixedRange, let verdict = fixedRange.verdict(key) { return verdict }
        return try generalMatches(key)
    }

    private func generalMatches(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let range = locate(key) else {
            // Short or malformed: decoding says which.
            let components = try TupleKey.decode(Array(key))
            return position >= components.count || QueryPlanner.matches(components[position], condition)
        }
        let component = UnsafeRawBufferPointer(rebasing: key[range])
        let tag = component[0]
        if let verdict = fixedRange?.verdict(component: component) { return verdict }
        if tag >= 0x80 {
            // A descending component: compare decoded values.
            return QueryPlanner.matches(try TupleKey.decode(Array(component))[0], condition)
        }
        switch test {
        case .always: return true
        case .equal(let expected): return Self.compare(component, expected) == 0
        case .oneOf(let values): return values.contains(encoded: component)
        case .range:
            return Self.inRange(component, lower: lower.map { ($0, lowerInclusive) }, upper: upper.map { ($0, upperInclusive) })
        case .fixedRange:
            guard case .range(let lower, let upper) = condition else { return false }
            return Self.inRange(component, lower: lower.map { (TupleKey.encode(component: $0.0), $0.1) },
                                upper: upper.map { (TupleKey.encode(component: $0.0), $0.1) })
        case .prefix(let prefix):
            guard component.count >= prefix.count else { return false }
            return Self.compare(UnsafeRawBufferPointer(rebasing: component[0..<prefix.count]), prefix) == 0
        }
    }

    /// The bytes of component `position` of `key`: stepped over fixed-size components in place
    /// (the common case: numbers before the column), else found by the general walk.
    @inline(__always)
    private func locate(_ key: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let base = key.baseAddress else { return nil }
        var start = 0, index = 0
        while start < key.count {
            let size = FixedComponentRange.fixedSize(ofTag: base.load(fromByteOffset: start, as: UInt8.self))
            guard size > 0 else { return TupleKey.componentRange(in: key, at: position) }
            guard size <= key.count - start else { return nil }
            if index == position { return start..<(start + size) }
            start += size
            index += 1
        }
        return nil
    }

    /// Whether the encoded component `component` lies between the encoded bounds; a null never does.
    private static func inRange(_ component: UnsafeRawBufferPointer, lower: ([UInt8], Bool)?, upper: ([UInt8], Bool)?) -> Bool {
        if component[0] == 0x05 { return false }  // null never meets a range
        if let (bound, inclusive) = lower {
            let relation = compare(component, bound)
            if relation < 0 || (relation == 0 && !inclusive) { return false }
        }
        if let (bound, inclusive) = upper {
            let relation = compare(component, bound)
            if relation > 0 || (relation == 0 && !inclusive) { return false }
        }
        return true
    }

    /// Tree order (`compareBytes`: byte by byte, a prefix first).
    private static func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
        b.withUnsafeBytes { compareBytes(a, $0) }
    }
}
