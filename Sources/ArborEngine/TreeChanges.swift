/// Puts and deletes for one tree, collected in any order and applied together by
/// `Tree.apply(_:)` in key order, a leaf at a time: each leaf they touch is copied, merged with
/// its changes and rebalanced once, instead of a descent, a search and a rebalance per key. The
/// bulk writes of an object store (a batch update's rows and index entries, a save's index
/// entries) go through here.
///
/// Keys and values are kept back to back in two buffers (no array per change).
public struct TreeChanges {
    /// The keys in the order given; a flagged key is a delete.
    var keys = PackedBytes()
    /// The values, parallel to `keys` (empty for a delete).
    var values = PackedBytes()

    public init() {}

    /// The number of changes collected (a key changed twice counts twice).
    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    /// Stores `value` under `key` (replacing what is there).
    public mutating func put(_ key: [UInt8], _ value: [UInt8]) {
        keys.append(key)
        values.append(value)
    }

    /// `put(_:_:)` with the bytes given in place.
    public mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        keys.append(key)
        values.append(value)
    }

    /// Removes `key` (nothing when it is absent).
    public mutating func delete(_ key: [UInt8]) {
        keys.append(key, flagged: true)
        values.append([UInt8]())
    }

    /// `delete(_:)` with the key given in place.
    public mutating func delete(key: UnsafeRawBufferPointer) {
        keys.append(key, flagged: true)
        values.append([UInt8]())
    }

    /// Adds `other`'s changes after these (so they win over these for the same key).
    public mutating func append(contentsOf other: TreeChanges) {
        keys.append(contentsOf: other.keys)
        values.append(contentsOf: other.values)
    }

    public mutating func removeAll() {
        keys = PackedBytes()
        values = PackedBytes()
    }

    /// Positions of the changes to apply, in ascending key order; of several changes to one
    /// key, only the last given.
    /// - Complexity: O(n) when they were given in key order, O(n log n) otherwise.
    func order() -> [Int] {
        let count = keys.count
        var order = Array(0..<count)
        var sorted = true
        for index in 1..<max(count, 1) where compare(index - 1, index) > 0 {
            sorted = false
            break
        }
        if !sorted {
            // By the first eight bytes of each key (most comparisons end there), then runs of
            // equal prefixes by the whole key; ties keep the order given.
            var pairs = (0..<count).map { (prefix: prefix($0), position: Int32($0)) }
            pairs.sort { $0.prefix != $1.prefix ? $0.prefix < $1.prefix : $0.position < $1.position }
            var start = 0
            while start < count {
                var end = start + 1
                while end < count && pairs[end].prefix == pairs[start].prefix { end += 1 }
                if end - start > 1 {
                    pairs[start..<end].sort { a, b in
                        let order = compare(Int(a.position), Int(b.position))
                        return order != 0 ? order < 0 : a.position < b.position
                    }
                }
                start = end
            }
            for index in 0..<count { order[index] = Int(pairs[index].position) }
        }
        // The last change to each key wins.
        var result: [Int] = []
        result.reserveCapacity(count)
        for position in order {
            if let last = result.last, compare(last, position) == 0 {
                result[result.count - 1] = position
            } else {
                result.append(position)
            }
        }
        return result
    }

    /// Key `a` against key `b`, in byte order.
    func compare(_ a: Int, _ b: Int) -> Int {
        keys.withBytes(a) { left in keys.withBytes(b) { right in compareBytes(left, right) } }
    }

    /// The first eight bytes of key `index`, big-endian (zero-padded): ordered as the keys are
    /// wherever they differ.
    private func prefix(_ index: Int) -> UInt64 {
        keys.withBytes(index) { key in
            var value: UInt64 = 0
            for offset in 0..<8 { value = value << 8 | UInt64(offset < key.count ? key[offset] : 0) }
            return value
        }
    }
}
