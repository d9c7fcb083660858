/// A range on one fixed-size component of tuple keys (a number or a date, stored ascending),
/// tested on the key's bytes where they lie: a scan applies it itself before calling its
/// filter (`ScanKeyFilter.scanRange`). Most entries of a geo box's walk are rejected by the
/// latitude in their key, and a call per entry cost more than this test.
///
/// Fixed-size components are compared as (tag, body) pairs: the same tag means the same size,
/// and the body read big-endian and left-aligned orders as its bytes do, so pair order is
/// byte order, which the tuple encoding makes value order.
///
/// A class: a scan holds it in a variable it may replace between entries, and a struct there
/// was copied field by field for every entry.
public final class FixedComponentRange: Sendable {
    /// The component tested (0 is the first).
    public let position: Int
    let hasLower: Bool, lowerTag: UInt8, lowerBody: UInt64, lowerInclusive: Bool
    let hasUpper: Bool, upperTag: UInt8, upperBody: UInt64, upperInclusive: Bool

    /// A range with encoded bounds (`TupleKey.encode` of one value each; nil: unbounded on
    /// that side). nil when a bound is not a fixed-size ascending component, or there is none.
    public convenience init?(position: Int, lower: (bytes: [UInt8], inclusive: Bool)?, upper: (bytes: [UInt8], inclusive: Bool)?) {
        func fixed(_ bytes: [UInt8]) -> (tag: UInt8, body: UInt64)? {
            guard let tag = bytes.first, tag < 0x80, bytes.count <= 9, Self.fixedSize(ofTag: tag) == bytes.count else { return nil }
            return (tag, bytes.withUnsafeBytes { Self.body(of: $0) })
        }
        self.init(position: position, lower: lower.map { (fixed($0.bytes), $0.inclusive) }, upper: upper.map { (fixed($0.bytes), $0.inclusive) })
    }

    /// A range with bounds given as values (nil: unbounded on that side), each read as it
    /// would be encoded (`TupleKey.fixedComponent`): the same range as from their encodings,
    /// without making them. nil when a bound is not of a fixed-size kind, or there is none.
    /// - Complexity: O(1).
    public convenience init?(position: Int, lowerValue lower: (value: TupleValue, inclusive: Bool)?, upperValue upper: (value: TupleValue, inclusive: Bool)?) {
        self.init(position: position, lower: lower.map { (TupleKey.fixedComponent($0.value), $0.inclusive) },
                  upper: upper.map { (TupleKey.fixedComponent($0.value), $0.inclusive) })
    }

    /// A range with bounds given as (tag, body) pairs; a bound given as nil inside is one that
    /// is not of a fixed size, which makes no range.
    private init?(position: Int, lower: (component: (tag: UInt8, body: UInt64)?, inclusive: Bool)?,
                  upper: (component: (tag: UInt8, body: UInt64)?, inclusive: Bool)?) {
        guard position >= 0, lower != nil || upper != nil else { return nil }
        if let lower, lower.component == nil { return nil }
        if let upper, upper.component == nil { return nil }
        let low = lower?.component, high = upper?.component
        self.position = position
        (hasLower, lowerTag, lowerBody, lowerInclusive) = (low != nil, low?.tag ?? 0, low?.body ?? 0, lower?.inclusive ?? true)
        (hasUpper, upperTag, upperBody, upperInclusive) = (high != nil, high?.tag ?? 0, high?.body ?? 0, upper?.inclusive ?? true)
    }

    /// Whether `key` is in the range: nil when its bytes cannot tell (a component before the
    /// tested one that is not fixed-size, a key too short, or a tested component that is not
    /// fixed-size); the caller then decides by decoding. A null component is never in a range.
    /// - Complexity: O(position).
    @inline(__always)
    public func verdict(_ key: UnsafeRawBufferPointer) -> Bool? {
        guard let base = key.baseAddress, !key.isEmpty else { return nil }
        let count = key.count
        var start = 0
        for _ in 0..<position {
            let size = Self.fixedSize(ofTag: base.load(fromByteOffset: start, as: UInt8.self))
            guard size > 0, size < count &- start else { return nil }
            start &+= size
        }
        let size = Self.fixedSize(ofTag: base.load(fromByteOffset: start, as: UInt8.self))
        guard size > 0, size <= count &- start else { return nil }
        return verdict(component: UnsafeRawBufferPointer(start: base + start, count: size))
    }

    /// Whether the component `component` (one whole encoded component, located by the caller)
    /// is in the range: nil when it is not an ascending fixed-size component. A null is not.
    @inline(__always)
    public func verdict(component: UnsafeRawBufferPointer) -> Bool? {
        guard let base = component.baseAddress, !component.isEmpty else { return nil }
        let tag = base.load(as: UInt8.self), size = component.count
        guard size <= 9, Self.fixedSize(ofTag: tag) == size else { return nil }
        if tag == 0x05 { return false }
        // Eight-byte bodies (doubles, dates, 64-bit integers) read here; shorter ones by a call.
        let body = size == 9 ? UInt64(bigEndian: base.loadUnaligned(fromByteOffset: 1, as: UInt64.self)) : Self.shortBody(of: component)
        return contains(tag: tag, body: body)
    }

    /// Whether a fixed-size component with `tag` and `body` (see `body(of:)`) is in the range.
    @inline(__always)
    func contains(tag: UInt8, body: UInt64) -> Bool {
        if hasLower, tag != lowerTag ? tag < lowerTag : (lowerInclusive ? body < lowerBody : body <= lowerBody) { return false }
        if hasUpper, tag != upperTag ? tag > upperTag : (upperInclusive ? body > upperBody : body >= upperBody) { return false }
        return true
    }

    /// The body of a fixed-size component (after its tag, at most 8 bytes) as a big-endian
    /// number shifted to the top, so shorter bodies compare as their bytes do.
    @inline(__always)
    static func body(of component: UnsafeRawBufferPointer) -> UInt64 {
        let count = component.count &- 1
        if count == 8 { return UInt64(bigEndian: component.loadUnaligned(fromByteOffset: 1, as: UInt64.self)) }
        var value: UInt64 = 0
        for offset in 0..<max(count, 0) { value = value << 8 | UInt64(component[1 &+ offset]) }
        return count <= 0 ? 0 : value << UInt64(64 &- 8 &* count)
    }

    /// `body(of:)` out of line, for components shorter than nine bytes.
    @inline(never)
    static func shortBody(of component: UnsafeRawBufferPointer) -> UInt64 { body(of: component) }

    /// The encoded size of an ascending component with tag `tag` when the tag fixes it; 0 for
    /// strings, bytes, descending components and unknown tags. A table, not a `switch`: this
    /// runs for every entry a scan tests, and the switch compiled to two indirect jumps.
    @inline(__always)
    public static func fixedSize(ofTag tag: UInt8) -> Int {
        tag < 0x80 ? Int(fixedComponentSizes[Int(tag)]) : 0
    }
}

/// `FixedComponentRange.fixedSize(ofTag:)` for tags below 0x80 (see Spec/file-format.md, tuple
/// keys): null and booleans 1; compact integers 0x12 (negative) 9, 0x13 (zero) 1, 0x13 + n
/// n + 1; int8/16/32/64 (0x20–0x23) and uint8/16/32/64 (0x24–0x27) 2, 3, 5, 9; float 5;
/// double and date 9; UUID 17.
private let fixedComponentSizes: [UInt8] = [
    0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x00
    1, 1, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0,  // 0x10
    2, 3, 5, 9, 2, 3, 5, 9, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x20
    5, 9, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0,  // 0x30
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x40
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x50
    17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x60
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x70
]
