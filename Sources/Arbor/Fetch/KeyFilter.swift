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
    /// The source condition, for keys whose component is stored descending (bytes inverted).
    private let condition: QueryPlanner.Condition

    init(position: Int, condition: QueryPlanner.Condition) {
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
    }

    /// Whether the entry with key `key` meets the condition; a key too short for the position
    /// meets it (the row is then read and the whole predicate decides).
    /// - Throws: `malformedTupleKey` when the key cannot be decoded.
    func matches(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let range = TupleKey.componentRange(in: key, at: position) else {
            // Short or malformed: decoding says which.
            let components = try TupleKey.decode(Array(key))
            return position >= components.count || QueryPlanner.matches(components[position], condition)
        }
        let component = UnsafeRawBufferPointer(rebasing: key[range])
        if component[0] >= 0x80 {
            // A descending component: compare decoded values.
            return QueryPlanner.matches(try TupleKey.decode(Array(component))[0], condition)
        }
        switch test {
        case .always: return true
        case .equal(let expected): return Self.compare(component, expected) == 0
        case .oneOf(let values): return values.contains { Self.compare(component, $0) == 0 }
        case .range(let lower, let upper):
            if component[0] == TupleValue.null.tag { return false }
            return QueryPlanner.within(lower, upper) { Self.compare(component, $0) }
        case .prefix(let prefix):
            guard component.count >= prefix.count else { return false }
            return Self.compare(UnsafeRawBufferPointer(rebasing: component[0..<prefix.count]), prefix) == 0
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
