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
    /// Bytes of the keys and values collected.
    public var byteCount: Int { keys.byteCount + values.byteCount }

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
}
