/// The values of a leaf being modified, parallel to its keys, back to back in one buffer
/// (`PackedBytes`): an inline value as its bytes, an overflow reference as its fields, flagged.
/// An empty value (an index entry's) costs four bytes, not an enum of 32.
struct LeafValues {
    private var storage = PackedBytes()

    init() {}

    init<S: Sequence>(_ values: S) where S.Element == LeafValue {
        for value in values { append(value) }
    }

    private init(storage: PackedBytes) { self.storage = storage }

    /// The values of leaf `page`, each copied once into buffers sized for the page.
    init(page: Page) {
        var total = 0
        for index in 0..<page.count { total += page.leafEntry(index).inline?.count ?? Self.referenceSize }
        let packed = PackedBytes.packing(count: page.count, byteCapacity: total) { index, put in
            if let inline = page.leafEntry(index).inline {
                put(inline, false)
            } else if case .overflow(let ref) = page.leafValue(index) {
                Self.encodeReference(ref).withUnsafeBytes { put($0, true) }
            } else {
                put(UnsafeRawBufferPointer(start: nil, count: 0), false)
            }
        }
        if let packed {
            storage = packed
        } else {
            for index in 0..<page.count { append(page.leafValue(index)) }
        }
    }

    var count: Int { storage.count }
    var indices: Range<Int> { 0..<count }

    mutating func reserveCapacity(values: Int, bytes: Int) { storage.reserveCapacity(count: values, bytes: bytes) }

    /// Value `index` (an inline value is copied out).
    subscript(index: Int) -> LeafValue {
        storage.isFlagged(index) ? .overflow(storage.withBytes(index, Self.decodeReference)) : .inline(storage[index])
    }

    /// Bytes value `index` occupies in a compact leaf cell (as `LeafValue.cellBytes`).
    func cellBytes(_ index: Int) -> Int {
        storage.isFlagged(index) ? self[index].cellBytes : LeafValue.inlineCellBytes(storage.length(index))
    }

    /// Calls `body` with the bytes of value `index` when it is inline; nil for an overflow value.
    @inline(__always) func withInline<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        storage.isFlagged(index) ? nil : try storage.withBytes(index, body)
    }

    // MARK: Mutation

    mutating func append(_ value: LeafValue) {
        switch value {
        case .inline(let bytes): storage.append(bytes)
        case .overflow(let ref): storage.append(Self.encodeReference(ref), flagged: true)
        }
    }

    /// Appends an inline value from a page being decoded.
    mutating func appendInline(_ bytes: UnsafeRawBufferPointer) { storage.append(bytes) }

    mutating func insert(_ value: LeafValue, at index: Int) {
        switch value {
        case .inline(let bytes): storage.insert(bytes, at: index)
        case .overflow(let ref): storage.insert(Self.encodeReference(ref), at: index, flagged: true)
        }
    }

    mutating func replace(at index: Int, with value: LeafValue) {
        switch value {
        case .inline(let bytes): storage.replace(at: index, with: bytes)
        case .overflow(let ref): storage.replace(at: index, with: Self.encodeReference(ref), flagged: true)
        }
    }

    mutating func shrinkIfOversized() { storage.shrinkIfOversized() }
    mutating func remove(at index: Int) { storage.remove(at: index) }
    mutating func removeSubrange(_ range: PartialRangeFrom<Int>) { storage.removeSubrange(range) }
    mutating func removeSubrange(_ range: PartialRangeUpTo<Int>) { storage.removeSubrange(range) }
    mutating func append(contentsOf other: LeafValues, _ range: Range<Int>) { storage.append(contentsOf: other.storage, range) }
    mutating func append(contentsOf other: LeafValues) { storage.append(contentsOf: other.storage) }
    mutating func prepend(contentsOf other: LeafValues, _ range: Range<Int>) { storage.prepend(contentsOf: other.storage, range) }
    func extracting(_ range: Range<Int>) -> LeafValues { LeafValues(storage: storage.extracting(range)) }
    func extracting(_ range: PartialRangeFrom<Int>) -> LeafValues { LeafValues(storage: storage.extracting(range)) }

    // MARK: Overflow references in the buffer

    /// first page (4 bytes), raw length (8), stored length (8), compressed (1); little-endian.
    private static let referenceSize = 21

    private static func encodeReference(_ ref: OverflowRef) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: referenceSize)
        bytes.withUnsafeMutableBytes { buffer in
            buffer.putU32(ref.firstPage, at: 0)
            buffer.putU64(UInt64(truncatingIfNeeded: ref.rawLength), at: 4)
            buffer.putU64(UInt64(truncatingIfNeeded: ref.storedLength), at: 12)
            buffer[20] = ref.compressed ? 1 : 0
        }
        return bytes
    }

    /// The reference `encodeReference` stored (the buffer is this type's own, never read from disk).
    private static func decodeReference(_ bytes: UnsafeRawBufferPointer) -> OverflowRef {
        OverflowRef(firstPage: bytes.u32(0), rawLength: Int(truncatingIfNeeded: bytes.u64(4)),
                    storedLength: Int(truncatingIfNeeded: bytes.u64(12)), compressed: bytes[20] != 0)
    }
}
