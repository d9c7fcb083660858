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
        case oneOf([[UInt8]])
        /// Encoded bounds with inclusivity; null never matches a range.
        case range(lower: ([UInt8], Bool)?, upper: ([UInt8], Bool)?)
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
    private let condition: QueryPlanner.Condition
    /// Whether this is a range whose bounds are fixed-size components (numbers, dates): each
    /// bound is then kept as its tag and body, so an entry's component of the same kind is
    /// checked with integer comparisons instead of `memcmp` calls. Plain fields, not optional
    /// structs: they are read for every entry.
    private let fixedBounds: Bool
    private let hasLower: Bool, lowerTag: UInt8, lowerBody: UInt64
    private let hasUpper: Bool, upperTag: UInt8, upperBody: UInt64

    /// A fixed-size component (at most 9 bytes): its tag, and its body bytes read big-endian
    /// and left-aligned, so comparing (tag, body) pairs orders like comparing the bytes.
    private struct FixedBound {
        let tag: UInt8
        let body: UInt64
    }

    init(position: Int, condition: QueryPlanner.Condition) {
        var fixedRange: (lower: FixedBound?, upper: FixedBound?)?
        self.position = position
        self.condition = condition
        switch condition {
        case .equal(let value): test = .equal(TupleKey.encode([value]))
        case .oneOf(let values): test = .oneOf(values.map { TupleKey.encode([$0]) })
        case .range(let lower, let upper):
            test = .range(lower: lower.map { (TupleKey.encode([$0.0]), $0.1) }, upper: upper.map { (TupleKey.encode([$0.0]), $0.1) })
        case .prefix(let text): test = .prefix(QueryPlanner.encodedStringPrefix(text))
        case .foldedEqual, .foldedPrefix: test = .always
        }
        if case .range(let lower, let upper) = test {
            (self.lower, lowerInclusive) = (lower?.0, lower?.1 ?? true)
            (self.upper, upperInclusive) = (upper?.0, upper?.1 ?? true)
            fixedRange = Self.fixedRange(lower: lower, upper: upper)
        } else {
            (self.lower, lowerInclusive, self.upper, upperInclusive) = (nil, true, nil, true)
        }
        fixedBounds = fixedRange != nil
        let fixedLower = fixedRange?.lower, fixedUpper = fixedRange?.upper
        (hasLower, lowerTag, lowerBody) = (fixedLower != nil, fixedLower?.tag ?? 0, fixedLower?.body ?? 0)
        (hasUpper, upperTag, upperBody) = (fixedUpper != nil, fixedUpper?.tag ?? 0, fixedUpper?.body ?? 0)
    }

    /// The fixed form of a range's encoded bounds, when every present bound has one.
    private static func fixedRange(lower: ([UInt8], Bool)?, upper: ([UInt8], Bool)?) -> (lower: FixedBound?, upper: FixedBound?)? {
        func fixed(_ bound: ([UInt8], Bool)?) -> FixedBound?? {
            guard let (bytes, _) = bound else { return .some(nil) }
            guard let tag = bytes.first, tag < 0x80, fixedSize(ofTag: tag) == bytes.count, bytes.count <= 9 else { return nil }
            let body = bytes.withUnsafeBytes { Self.body(of: $0) }
            return FixedBound(tag: tag, body: body)
        }
        guard lower != nil || upper != nil, let fixedLower = fixed(lower), let fixedUpper = fixed(upper) else { return nil }
        return (fixedLower, fixedUpper)
    }

    /// The body of a fixed-size component (after its tag, at most 8 bytes) as a big-endian
    /// number shifted to the top, so shorter bodies compare as their bytes do.
    @inline(__always)
    private static func body(of component: UnsafeRawBufferPointer) -> UInt64 {
        let count = component.count - 1
        if count == 8 { return UInt64(bigEndian: component.loadUnaligned(fromByteOffset: 1, as: UInt64.self)) }
        var value: UInt64 = 0
        for offset in 0..<count { value = value << 8 | UInt64(component[1 + offset]) }
        return count == 0 ? 0 : value << UInt64(64 - 8 * count)
    }

    /// Whether a fixed-size component with `tag` and `body` lies within the fixed bounds.
    /// Same tag means same size, so (tag, body) order is byte order.
    @inline(__always)
    private func withinFixedBounds(_ tag: UInt8, _ body: UInt64) -> Bool {
        if hasLower, tag != lowerTag ? tag < lowerTag : (lowerInclusive ? body < lowerBody : body <= lowerBody) { return false }
        if hasUpper, tag != upperTag ? tag > upperTag : (upperInclusive ? body > upperBody : body >= upperBody) { return false }
        return true
    }

    /// Whether the entry with key `key` meets the condition; a key too short for the position
    /// meets it (the row is then read and the whole predicate decides).
    /// - Throws: `malformedTupleKey` when the key cannot be decoded.
    @inline(__always)
    func matches(_ key: UnsafeRawBufferPointer) throws -> Bool {
        if let verdict = fixedVerdict(key) { return verdict }
        return try generalMatches(key)
    }

    /// The per-entry fast path of a range on a fixed-size column preceded only by fixed-size
    /// components (a geo box's latitude): the component is found by its tags and compared as
    /// (tag, body) pairs, without a call. nil when the entry needs the general test.
    @inline(__always)
    private func fixedVerdict(_ key: UnsafeRawBufferPointer) -> Bool? {
        guard fixedBounds, let base = key.baseAddress else { return nil }
        let count = key.count
        var start = 0
        for _ in 0..<position {
            let size = Self.fixedSize(ofTag: base.load(fromByteOffset: start, as: UInt8.self))
            guard size > 0, size < count - start else { return nil }
            start += size
        }
        let tag = base.load(fromByteOffset: start, as: UInt8.self)
        let size = Self.fixedSize(ofTag: tag)
        guard size > 0, size <= count - start, size <= 9 else { return nil }
        if tag == 0x05 { return false }  // null never meets a range
        return withinFixedBounds(tag, Self.body(of: UnsafeRawBufferPointer(start: base + start, count: size)))
    }

    private func generalMatches(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let range = locate(key) else {
            // Short or malformed: decoding says which.
            let components = try TupleKey.decode(Array(key))
            return position >= components.count || QueryPlanner.matches(components[position], condition)
        }
        let component = UnsafeRawBufferPointer(rebasing: key[range])
        let tag = component[0]
        if fixedBounds, tag < 0x80, component.count <= 9, Self.fixedSize(ofTag: tag) == component.count {
            if tag == 0x05 { return false }  // null never meets a range
            return withinFixedBounds(tag, Self.body(of: component))
        }
        if tag >= 0x80 {
            // A descending component: compare decoded values.
            return QueryPlanner.matches(try TupleKey.decode(Array(component))[0], condition)
        }
        switch test {
        case .always: return true
        case .equal(let expected): return Self.compare(component, expected) == 0
        case .oneOf(let values): return values.contains { Self.compare(component, $0) == 0 }
        case .range:
            if component[0] == 0x05 { return false }  // null never meets a range
            if let lower {
                let relation = Self.compare(component, lower)
                if relation < 0 || (relation == 0 && !lowerInclusive) { return false }
            }
            if let upper {
                let relation = Self.compare(component, upper)
                if relation > 0 || (relation == 0 && !upperInclusive) { return false }
            }
            return true
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
            let size = Self.fixedSize(ofTag: base.load(fromByteOffset: start, as: UInt8.self))
            guard size > 0 else { return TupleKey.componentRange(in: key, at: position) }
            guard size <= key.count - start else { return nil }
            if index == position { return start..<(start + size) }
            start += size
            index += 1
        }
        return nil
    }

    /// The encoded size of an ascending component with tag `tag` when the tag fixes it; 0 for
    /// strings, bytes, descending components and unknown tags.
    @inline(__always)
    private static func fixedSize(ofTag tag: UInt8) -> Int {
        switch tag {
        case 0x05, 0x10, 0x11, 0x13: return 1
        case 0x14...0x1B: return Int(tag) - 0x12
        case 0x12, 0x23, 0x27, 0x31, 0x38: return 9
        case 0x20, 0x24: return 2
        case 0x21, 0x25: return 3
        case 0x22, 0x26, 0x30: return 5
        case 0x60: return 17
        default: return 0
        }
    }

    /// memcmp order, a prefix first.
    private static func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
        b.withUnsafeBytes { b in
            let common = min(a.count, b.count)
            if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
                let order = memcmp(pa, pb, common)
                if order != 0 { return Int(order) }
            }
            return a.count - b.count
        }
    }
}
