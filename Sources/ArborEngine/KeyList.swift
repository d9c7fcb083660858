/// The keys of a node being modified, in order, stored back to back in one buffer.
///
/// A node used to keep an array per key: every key was a heap allocation, a binary search
/// followed a pointer per comparison (a cache miss in a large import's index), and reading a
/// page into a node or writing it back allocated or released every key. Here a node's keys are
/// two allocations, a search reads one contiguous buffer, and moving a run of keys (a split, a
/// merge) copies bytes.
struct KeyList {
    /// The keys' bytes, key after key.
    private var bytes: [UInt8] = []
    /// `ends[i]`: where key `i` ends in `bytes` (it starts where key `i - 1` ends, or at 0).
    private var ends: [UInt32] = []

    init() {}

    /// The keys of `keys`, in that order.
    init<S: Sequence>(_ keys: S) where S.Element == [UInt8] {
        for key in keys { append(key) }
    }

    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }
    /// Bytes of all keys together.
    var byteCount: Int { bytes.count }

    mutating func reserveCapacity(keys: Int, bytes byteCount: Int) {
        ends.reserveCapacity(keys)
        bytes.reserveCapacity(byteCount)
    }

    @inline(__always) private func start(_ index: Int) -> Int { index == 0 ? 0 : Int(ends[index - 1]) }

    /// Length of key `index`.
    @inline(__always) func length(_ index: Int) -> Int { Int(ends[index]) - start(index) }

    /// Calls `body` with the bytes of key `index` (valid only inside `body`).
    @inline(__always) func withKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let start = start(index), end = Int(ends[index])
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
    }

    /// A copy of key `index`.
    subscript(index: Int) -> [UInt8] { withKey(index) { Array($0) } }

    var first: [UInt8]? { isEmpty ? nil : self[0] }
    var last: [UInt8]? { isEmpty ? nil : self[count - 1] }

    // MARK: Search

    /// The first index whose key is >= `key` (`orEqual == false`), or > `key` (`orEqual == true`).
    @inline(__always) func partition(_ key: UnsafeRawBufferPointer, orEqual: Bool) -> Int {
        bytes.withUnsafeBytes { base in
            ends.withUnsafeBufferPointer { ends in
                var low = 0, high = ends.count
                while low < high {
                    let mid = (low + high) >> 1
                    let start = mid == 0 ? 0 : Int(ends[mid - 1])
                    let order = compareBytes(UnsafeRawBufferPointer(rebasing: base[start..<Int(ends[mid])]), key)
                    if order < 0 || (orEqual && order == 0) { low = mid + 1 } else { high = mid }
                }
                return low
            }
        }
    }

    /// The first index whose key is >= `key`.
    func lowerBound(_ key: UnsafeRawBufferPointer) -> Int { partition(key, orEqual: false) }

    /// The first index whose key is > `key` (a branch's child covering `key`).
    func upperBound(_ key: UnsafeRawBufferPointer) -> Int { partition(key, orEqual: true) }

    /// Whether key `index` equals `key`.
    func keyEquals(_ index: Int, _ key: UnsafeRawBufferPointer) -> Bool {
        withKey(index) { compareBytes($0, key) == 0 }
    }

    // MARK: Mutation

    mutating func append(_ key: [UInt8]) {
        bytes.append(contentsOf: key)
        ends.append(UInt32(bytes.count))
    }

    mutating func append(_ key: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: key)
        ends.append(UInt32(bytes.count))
    }

    /// Appends keys `range` of `other`.
    mutating func append(contentsOf other: KeyList, _ range: Range<Int>) {
        guard !range.isEmpty else { return }
        let from = other.start(range.lowerBound), to = Int(other.ends[range.upperBound - 1])
        let shift = UInt32(bytes.count) &- UInt32(from)
        bytes.append(contentsOf: other.bytes[from..<to])
        ends.reserveCapacity(ends.count + range.count)
        for index in range { ends.append(other.ends[index] &+ shift) }
    }

    mutating func append(contentsOf other: KeyList) { append(contentsOf: other, 0..<other.count) }

    mutating func insert(_ key: [UInt8], at index: Int) {
        if index == count { return append(key) }
        let start = start(index)
        bytes.insert(contentsOf: key, at: start)
        ends.insert(UInt32(start), at: index)
        shiftEnds(from: index, by: key.count)
    }

    /// Replaces key `index` with `key`.
    mutating func replace(at index: Int, with key: [UInt8]) {
        let start = start(index), end = Int(ends[index])
        bytes.replaceSubrange(start..<end, with: key)
        shiftEnds(from: index, by: key.count - (end - start))
    }

    mutating func remove(at index: Int) {
        let start = start(index), end = Int(ends[index])
        bytes.removeSubrange(start..<end)
        ends.remove(at: index)
        shiftEnds(from: index, by: -(end - start))
    }

    /// Removes keys `range`.
    mutating func removeSubrange(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        let from = start(range.lowerBound), to = Int(ends[range.upperBound - 1])
        bytes.removeSubrange(from..<to)
        ends.removeSubrange(range)
        shiftEnds(from: range.lowerBound, by: -(to - from))
    }

    mutating func removeSubrange(_ range: PartialRangeFrom<Int>) { removeSubrange(range.lowerBound..<count) }
    mutating func removeSubrange(_ range: PartialRangeUpTo<Int>) { removeSubrange(0..<range.upperBound) }

    /// Puts keys `range` of `other` before the keys of this list.
    mutating func prepend(contentsOf other: KeyList, _ range: Range<Int>) {
        var result = other.extracting(range)
        result.append(contentsOf: self)
        self = result
    }

    /// Keys `range` as a list of their own.
    func extracting(_ range: Range<Int>) -> KeyList {
        var result = KeyList()
        result.append(contentsOf: self, range)
        return result
    }

    func extracting(_ range: PartialRangeFrom<Int>) -> KeyList { extracting(range.lowerBound..<count) }

    /// Adds `delta` to the ends of keys `index...` (their bytes moved by `delta`).
    private mutating func shiftEnds(from index: Int, by delta: Int) {
        guard delta != 0, index < ends.count else { return }
        let step = UInt32(truncatingIfNeeded: delta)
        ends.withUnsafeMutableBufferPointer { ends in
            for position in index..<ends.count { ends[position] &+= step }
        }
    }
}
