/// Byte strings stored back to back in one buffer, in order, each with a flag bit: the keys of
/// a node being modified, and (through `LeafValues`) its leaf values.
///
/// A node used to keep an array per key and an enum per value: every key and row was a heap
/// allocation, a binary search followed a pointer per comparison (a cache miss in a large
/// import's index), a value cost 32 bytes of enum however short it was, and reading a page into
/// a node or writing it back allocated or released every cell. Here a node's keys are two
/// allocations, a search reads one contiguous buffer, and moving a run of cells (a split, a
/// merge) copies bytes.
struct PackedBytes {
    /// The strings' bytes, one after another.
    private var bytes: [UInt8] = []
    /// `ends[i] & endMask`: where string `i` ends in `bytes` (it starts where string `i - 1`
    /// ends, or at 0); `ends[i] & flagBit`: its flag. Offsets stay below 2^31 (a node's cells
    /// fit a few pages), so adding a shift to a flagged end never carries into the flag.
    private var ends: [UInt32] = []
    static let flagBit: UInt32 = 1 << 31
    static let endMask: UInt32 = flagBit - 1

    init() {}

    /// The strings of `strings`, in that order.
    init<S: Sequence>(_ strings: S) where S.Element == [UInt8] {
        for string in strings { append(string) }
    }

    /// `count` strings written by `write(index, put)` — which calls `put(bytes, flagged)` once
    /// for each index, in order — into buffers reserved for `byteCapacity` bytes: decoding a
    /// page copies each cell with no capacity or uniqueness check of its own. Nil when the
    /// strings need more than `byteCapacity` bytes.
    static func packing(count: Int, byteCapacity: Int,
                        _ write: (Int, (UnsafeRawBufferPointer, Bool) -> Void) -> Void) -> PackedBytes? {
        guard byteCapacity <= Int(endMask), count >= 0 else { return nil }
        var ends = [UInt32](repeating: 0, count: count)
        var fits = true
        if byteCapacity == 0 {
            // `Array(unsafeUninitializedCapacity: 0)` stores a count into the shared empty-array
            // storage, which other threads read: a data race. Empty strings need no buffer.
            for index in 0..<count {
                write(index) { string, flagged in
                    if !string.isEmpty { fits = false }
                    ends[index] = flagged ? flagBit : 0
                }
            }
            guard fits else { return nil }
            var packed = PackedBytes()
            packed.ends = ends
            return packed
        }
        let bytes = [UInt8](unsafeUninitializedCapacity: byteCapacity) { buffer, initialized in
            var offset = 0
            ends.withUnsafeMutableBufferPointer { ends in
                for index in 0..<count {
                    write(index) { string, flagged in
                        guard fits, string.count <= buffer.count - offset else {
                            fits = false
                            return
                        }
                        if let source = string.baseAddress, let target = buffer.baseAddress, !string.isEmpty {
                            (target + offset).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: string.count)
                        }
                        offset += string.count
                        ends[index] = UInt32(offset) | (flagged ? flagBit : 0)
                    }
                }
            }
            initialized = offset
        }
        guard fits else { return nil }
        var packed = PackedBytes()
        packed.bytes = bytes
        packed.ends = ends
        return packed
    }

    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }
    /// Bytes of all strings together.
    var byteCount: Int { bytes.count }

    mutating func reserveCapacity(count: Int, bytes byteCount: Int) {
        ends.reserveCapacity(count)
        bytes.reserveCapacity(byteCount)
    }

    @inline(__always) private func start(_ index: Int) -> Int { index == 0 ? 0 : end(index - 1) }
    @inline(__always) private func end(_ index: Int) -> Int { Int(ends[index] & Self.endMask) }

    /// Length of string `index`.
    @inline(__always) func length(_ index: Int) -> Int { end(index) - start(index) }

    /// The flag stored with string `index`.
    @inline(__always) func isFlagged(_ index: Int) -> Bool { ends[index] & Self.flagBit != 0 }

    /// Calls `body` with the bytes of string `index` (valid only inside `body`).
    @inline(__always) func withBytes<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let start = start(index), end = end(index)
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
    }

    /// A copy of string `index`.
    subscript(index: Int) -> [UInt8] { withBytes(index) { Array($0) } }

    var first: [UInt8]? { isEmpty ? nil : self[0] }
    var last: [UInt8]? { isEmpty ? nil : self[count - 1] }

    // MARK: Search (the strings in byte order: a node's keys)

    /// The first index whose key is >= `key` (`orEqual == false`), or > `key` (`orEqual == true`).
    @inline(__always) func partition(_ key: UnsafeRawBufferPointer, orEqual: Bool, from start: Int = 0) -> Int {
        bytes.withUnsafeBytes { base in
            ends.withUnsafeBufferPointer { ends in
                var low = start, high = ends.count
                while low < high {
                    let mid = (low + high) >> 1
                    let start = mid == 0 ? 0 : Int(ends[mid - 1] & Self.endMask)
                    let order = compareBytes(UnsafeRawBufferPointer(rebasing: base[start..<Int(ends[mid] & Self.endMask)]), key)
                    if order < 0 || (orEqual && order == 0) { low = mid + 1 } else { high = mid }
                }
                return low
            }
        }
    }

    /// The first index whose key is >= `key`.
    func lowerBound(_ key: UnsafeRawBufferPointer) -> Int { partition(key, orEqual: false) }

    /// The first index at or after `start` whose key is >= `key` (the keys before `start` are
    /// known to be smaller).
    func lowerBound(_ key: UnsafeRawBufferPointer, from start: Int) -> Int { partition(key, orEqual: false, from: start) }

    /// The first index whose key is > `key` (a branch's child covering `key`).
    func upperBound(_ key: UnsafeRawBufferPointer) -> Int { partition(key, orEqual: true) }

    /// Whether string `index` equals `key`.
    func bytesEqual(_ index: Int, _ key: UnsafeRawBufferPointer) -> Bool {
        withBytes(index) { compareBytes($0, key) == 0 }
    }

    // MARK: Mutation

    /// Makes room for `strings` more strings of `byteCount` more bytes, growing by an eighth
    /// rather than doubling as arrays do: a write transaction holds thousands of nodes, each
    /// filled a cell at a time, and doubling left them a third empty on average. Growing a node
    /// copies at most a page of bytes, a few times in the node's life.
    @inline(__always) private mutating func makeRoom(strings: Int, bytes byteCount: Int) {
        let neededBytes = bytes.count + byteCount
        if neededBytes > bytes.capacity { bytes.reserveCapacity((neededBytes + neededBytes >> 3 + 63) & ~63) }
        let neededEnds = ends.count + strings
        if neededEnds > ends.capacity { ends.reserveCapacity(neededEnds + neededEnds >> 3 + 4) }
    }

    mutating func append(_ string: [UInt8], flagged: Bool = false) {
        makeRoom(strings: 1, bytes: string.count)
        bytes.append(contentsOf: string)
        checkOffsets()
        ends.append(UInt32(bytes.count) | (flagged ? Self.flagBit : 0))
    }

    mutating func append(_ string: UnsafeRawBufferPointer, flagged: Bool = false) {
        makeRoom(strings: 1, bytes: string.count)
        bytes.append(contentsOf: string)
        checkOffsets()
        ends.append(UInt32(bytes.count) | (flagged ? Self.flagBit : 0))
    }

    /// Appends strings `range` of `other`.
    mutating func append(contentsOf other: PackedBytes, _ range: Range<Int>) {
        guard !range.isEmpty else { return }
        let from = other.start(range.lowerBound), to = other.end(range.upperBound - 1)
        let shift = UInt32(bytes.count) &- UInt32(from)
        makeRoom(strings: range.count, bytes: to - from)
        bytes.append(contentsOf: other.bytes[from..<to])
        checkOffsets()
        for index in range { ends.append(other.ends[index] &+ shift) }
    }

    /// Offsets must stay below the flag bit; the writers that collect large batches
    /// (`TreeChanges`) apply them long before (a violation would be a programming error, and
    /// silently flagging strings would corrupt a tree).
    @inline(__always) private func checkOffsets() {
        precondition(bytes.count <= Int(Self.endMask), "packed strings exceed 2 GiB")
    }

    mutating func append(contentsOf other: PackedBytes) { append(contentsOf: other, 0..<other.count) }

    mutating func insert(_ string: [UInt8], at index: Int, flagged: Bool = false) {
        if index == count { return append(string, flagged: flagged) }
        let start = start(index)
        makeRoom(strings: 1, bytes: string.count)
        bytes.insert(contentsOf: string, at: start)
        ends.insert(UInt32(start) | (flagged ? Self.flagBit : 0), at: index)
        shiftEnds(from: index, by: string.count)
    }

    /// Replaces string `index` with `string`.
    mutating func replace(at index: Int, with string: [UInt8], flagged: Bool = false) {
        let start = start(index), end = end(index)
        makeRoom(strings: 0, bytes: max(0, string.count - (end - start)))
        bytes.replaceSubrange(start..<end, with: string)
        ends[index] = UInt32(end) | (flagged ? Self.flagBit : 0)
        shiftEnds(from: index, by: string.count - (end - start))
    }

    mutating func remove(at index: Int) {
        let start = start(index), end = end(index)
        bytes.removeSubrange(start..<end)
        ends.remove(at: index)
        shiftEnds(from: index, by: -(end - start))
    }

    /// Removes strings `range`.
    mutating func removeSubrange(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        let from = start(range.lowerBound), to = end(range.upperBound - 1)
        bytes.removeSubrange(from..<to)
        ends.removeSubrange(range)
        shiftEnds(from: range.lowerBound, by: -(to - from))
    }

    mutating func removeSubrange(_ range: PartialRangeFrom<Int>) { removeSubrange(range.lowerBound..<count) }
    mutating func removeSubrange(_ range: PartialRangeUpTo<Int>) { removeSubrange(0..<range.upperBound) }

    /// Puts strings `range` of `other` before the strings of this list.
    mutating func prepend(contentsOf other: PackedBytes, _ range: Range<Int>) {
        var result = other.extracting(range)
        result.append(contentsOf: self)
        self = result
    }

    /// Gives back the memory of a list that holds far less than it has room for (a node split
    /// off a leaf several pages large, whose buffers were sized for all of it): a transaction
    /// holds thousands of nodes, and their spare room would cost many times their bytes.
    mutating func shrinkIfOversized() {
        if bytes.capacity > 2 * bytes.count + 256 {
            var exact: [UInt8] = []
            exact.reserveCapacity(bytes.count)
            exact.append(contentsOf: bytes)
            bytes = exact
        }
        if ends.capacity > 2 * ends.count + 64 {
            var exact: [UInt32] = []
            exact.reserveCapacity(ends.count)
            exact.append(contentsOf: ends)
            ends = exact
        }
    }

    /// Strings `range` as a list of their own.
    func extracting(_ range: Range<Int>) -> PackedBytes {
        var result = PackedBytes()
        result.append(contentsOf: self, range)
        return result
    }

    func extracting(_ range: PartialRangeFrom<Int>) -> PackedBytes { extracting(range.lowerBound..<count) }

    /// Adds `delta` to the ends of strings `index...` (their bytes moved by `delta`), keeping flags.
    private mutating func shiftEnds(from index: Int, by delta: Int) {
        guard delta != 0, index < ends.count else { return }
        let step = UInt32(truncatingIfNeeded: delta)
        ends.withUnsafeMutableBufferPointer { ends in
            for position in index..<ends.count { ends[position] &+= step }
        }
    }
}
