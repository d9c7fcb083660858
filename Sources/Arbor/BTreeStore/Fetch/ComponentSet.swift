import ArborEngine

/// The values of an `IN` list as one key column's tuple components, each with its encoding,
/// sorted in key order and without duplicates: an index is then searched point by point in
/// key order (one cursor moving forward), and whether a key's component is in the list is a
/// binary search, whatever the list's length.
///
/// A class: a condition holding a list of 100,000 values is passed around by reference.
final class ComponentSet {
    /// The components, ascending in key order.
    let values: [TupleValue]
    /// `values` encoded (each a tuple of one component), in the same order.
    let encoded: [[UInt8]]

    /// Sorts and deduplicates `values` by their encoding (equal encodings are equal keys:
    /// `1` and `1.0` given for an integer column are one point).
    /// - Complexity: O(n log n).
    init(_ values: [TupleValue]) {
        var pairs = values.map { (value: $0, bytes: TupleKey.encode(component: $0)) }
        pairs.sort { compareBytes($0.bytes, $1.bytes) < 0 }
        var unique: [(value: TupleValue, bytes: [UInt8])] = []
        unique.reserveCapacity(pairs.count)
        for pair in pairs where unique.last.map({ compareBytes($0.bytes, pair.bytes) != 0 }) ?? true { unique.append(pair) }
        self.values = unique.map(\.value)
        self.encoded = unique.map(\.bytes)
    }

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }

    /// Whether the encoded component `component` is one of the list's.
    /// - Complexity: O(log n) comparisons.
    func contains(encoded component: UnsafeRawBufferPointer) -> Bool {
        var low = 0, high = encoded.count
        while low < high {
            let middle = (low + high) >> 1
            let order = encoded[middle].withUnsafeBytes { compareBytes($0, component) }
            if order == 0 { return true }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return false
    }

    /// Whether `value` is one of the list's components.
    /// - Complexity: O(log n) comparisons.
    func contains(_ value: TupleValue) -> Bool {
        TupleKey.encode(component: value).withUnsafeBytes { contains(encoded: $0) }
    }
}
