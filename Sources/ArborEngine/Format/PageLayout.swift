/// The kinds of page in a store file (byte 4 of every page header).
public enum PageType: UInt8, Sendable, CaseIterable {
    case meta = 1
    case branch = 2
    case leaf = 3
    case overflow = 4
    /// A leaf whose cells were LZ4-compressed by `compact(compress: true)`; read-only files only.
    case compressedLeaf = 5
    /// A leaf whose cells carry no flag byte (the overflow bit rides in the value-length varint):
    /// what writers create. Type 3 leaves, written before it, are still read.
    case compactLeaf = 6

    /// Whether pages of this type are leaves of a tree (in either cell layout).
    public var isLeaf: Bool { self == .leaf || self == .compactLeaf }
}

/// Byte offsets of the 24-byte header every page starts with (see Spec/file-format.md).
enum PageHeader {
    static let checksum = 0      // UInt32: low 32 bits of XXH3-64 of bytes 4..<pageSize
    static let type = 4          // UInt8: PageType
    static let level = 5         // UInt8: 0 for leaves, height above the leaves for branches
    static let count = 6         // UInt16: cells (leaf/branch), payload bytes (overflow)
    static let pageNumber = 8    // UInt32: the page's own number, detects misdirected writes
    static let txid = 12         // UInt64: transaction that wrote the page
    static let extra = 20        // UInt32: branch: leftmost child; overflow: next page; compressed leaf: logical size
    static let size = 24
}

/// Size limits that follow from the page size.
public enum Limits {
    public static let minPageSize = 4096
    public static let maxPageSize = 65536
    public static let defaultPageSize = 4096
    /// Branches may be at most this many levels above the leaves; deeper trees are corrupt.
    public static let maxTreeDepth = 32
    /// The largest value accepted (stored in overflow pages when large).
    public static let maxValueLength = 1 << 30

    public static func isValidPageSize(_ size: Int) -> Bool {
        size >= minPageSize && size <= maxPageSize && size & (size - 1) == 0
    }
    /// The largest key: small enough that a branch page always holds at least four keys.
    public static func maxKeyLength(pageSize: Int) -> Int { (pageSize - PageHeader.size) / 4 - 16 }
    /// Values longer than this go to overflow pages (about a quarter of a page).
    public static func inlineValueLimit(pageSize: Int) -> Int { (pageSize - PageHeader.size) / 4 - 16 }
    /// The largest logical size of a compressed leaf (its slot offsets are 16-bit).
    static let maxLogicalLeafSize = 65535
}

/// Where a large value lives: the first page of its overflow chain and its sizes.
struct OverflowRef: Equatable, Sendable {
    var firstPage: PageID
    /// Length of the value as the user sees it.
    var rawLength: Int
    /// Bytes stored in the chain (smaller than `rawLength` when compressed).
    var storedLength: Int
    var compressed: Bool

    func pageCount(pageSize: Int) -> Int {
        let payload = pageSize - PageHeader.size
        return max(1, (storedLength + payload - 1) / payload)
    }
}

/// A leaf value: stored inline in the cell, or in an overflow chain.
enum LeafValue: Equatable, Sendable {
    case inline([UInt8])
    case overflow(OverflowRef)

    /// Bytes the value occupies inside a compact leaf cell (its header varint included), not
    /// counting the key.
    var cellBytes: Int {
        switch self {
        case .inline(let bytes): return Self.inlineCellBytes(bytes.count)
        case .overflow(let ref):
            return varintLength(UInt64(ref.rawLength) << 1 | 1) + 4 + varintLength(UInt64(ref.storedLength))
        }
    }

    /// Bytes an inline value of `length` bytes occupies inside a compact leaf cell.
    @inline(__always) static func inlineCellBytes(_ length: Int) -> Int { varintLength(UInt64(length) << 1) + length }

    /// Bytes the value occupies inside a flagged (type 3) leaf cell, its length varints included.
    var flaggedCellBytes: Int {
        switch self {
        case .inline(let bytes): return varintLength(UInt64(bytes.count)) + bytes.count
        case .overflow(let ref):
            return 4 + varintLength(UInt64(ref.rawLength)) + varintLength(UInt64(ref.storedLength))
        }
    }
}

/// Leaf cell flag bits (first byte of a cell in a type 3 leaf).
enum LeafCellFlag {
    static let overflow: UInt8 = 1
    static let compressed: UInt8 = 2
    static let all: UInt8 = 3
}

extension UnsafeMutableRawBufferPointer {
    /// Copies `bytes` to `position`; returns the position after them.
    @inline(__always) func putBytes(_ bytes: UnsafeRawBufferPointer, at position: Int) -> Int {
        if !bytes.isEmpty { UnsafeMutableRawBufferPointer(rebasing: self[position..<(position + bytes.count)]).copyMemory(from: bytes) }
        return position + bytes.count
    }

    /// Writes a compact (type 6) leaf cell holding `value` inline at `position`: key length,
    /// value header, key, value. Returns the position after it.
    @inline(__always) func putInlineLeafCell(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, at position: Int) -> Int {
        var position = position
        position += putVarint(UInt64(key.count), at: position)
        position += putVarint(UInt64(value.count) << 1, at: position)
        return putBytes(value, at: putBytes(key, at: position))
    }

    /// Writes a compact leaf cell whose value is in the overflow chain `ref` at `position`: key
    /// length, value header, key, first page, stored length. No compressed flag: a chain is
    /// compressed exactly when it is shorter than the value. Returns the position after it.
    @inline(__always) func putOverflowLeafCell(key: UnsafeRawBufferPointer, ref: OverflowRef, at position: Int) -> Int {
        var position = position
        position += putVarint(UInt64(key.count), at: position)
        position += putVarint(UInt64(ref.rawLength) << 1 | 1, at: position)
        position = putBytes(key, at: position)
        putU32(ref.firstPage, at: position)
        return position + 4 + putVarint(UInt64(ref.storedLength), at: position + 4)
    }
}

/// Where the parts of the compact (type 6) leaf cell at `offset` of `raw` lie: the key's start and
/// length, the value header (bit 0: overflow; above it, the value length) and where the value
/// starts. Reads varints only below `limit`; a malformed one reads as zero (pages are validated
/// before their cells are read, see `Page.validateCells`).
@inline(__always) func compactLeafCell(in raw: UnsafeRawBufferPointer, at offset: Int, limit: Int)
    -> (key: Int, keyLength: Int, header: UInt64, value: Int) {
    // Nearly every cell has a one-byte key length and value header: read them directly (every
    // binary search step of every lookup passes here), varints only for longer ones.
    if offset + 2 < limit {
        let keyLength = raw[offset], header = raw[offset + 1]
        if keyLength < 0x80 {
            if header < 0x80 { return (offset + 2, Int(keyLength), UInt64(header), offset + 2 + Int(keyLength)) }
            // A two-byte header: values of 64 ..< 8192 bytes (most rows).
            let high = raw[offset + 2]
            if high < 0x80 {
                return (offset + 3, Int(keyLength), UInt64(header & 0x7F) | UInt64(high) << 7, offset + 3 + Int(keyLength))
            }
        }
    }
    let (keyLength, keyLengthSize) = raw.varint(offset, limit: limit) ?? (0, 1)
    let headerStart = offset + keyLengthSize
    let (header, headerSize) = raw.varint(headerStart, limit: limit) ?? (0, 1)
    let key = headerStart + headerSize
    return (key, Int(keyLength), header, key + Int(keyLength))
}

/// The bytes a compact leaf cell holding a value of `valueLength` bytes inline needs, slot included.
@inline(__always) func inlineLeafCellSize(keyLength: Int, valueLength: Int) -> Int {
    2 + varintLength(UInt64(keyLength)) + keyLength + LeafValue.inlineCellBytes(valueLength)
}

/// The bytes a compact leaf cell needs (what writers create), slot included.
@inline(__always) func leafCellSize(keyLength: Int, value: LeafValue) -> Int {
    leafCellSize(keyLength: keyLength, valueCellBytes: value.cellBytes)
}

/// The same, given the bytes the value takes in the cell (`LeafValue.cellBytes`).
@inline(__always) func leafCellSize(keyLength: Int, valueCellBytes: Int) -> Int {
    2 + varintLength(UInt64(keyLength)) + keyLength + valueCellBytes
}

/// The bytes a flagged (type 3) leaf cell takes, slot included.
func flaggedLeafCellSize(keyLength: Int, value: LeafValue) -> Int {
    2 + 1 + varintLength(UInt64(keyLength)) + keyLength + value.flaggedCellBytes
}

/// The bytes a branch cell needs, slot included.
@inline(__always) func branchCellSize(keyLength: Int) -> Int {
    2 + 4 + varintLength(UInt64(keyLength)) + keyLength
}
