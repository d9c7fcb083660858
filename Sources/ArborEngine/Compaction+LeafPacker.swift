/// Packs leaf cells straight into a page image as a compaction reads them, in key order: no
/// array per key and value, no node to build and serialize. Fills each page as far as it goes
/// (the rule `flushLeaves` applies), in the layout `Node.serialize` writes (section 4 of
/// Spec/file-format.md). Used by uncompressed compaction; compressed leaves, whose logical size
/// depends on the compression ratio, still go through nodes.
struct LeafPacker {
    let pageSize: Int
    private let image: UnsafeMutableRawBufferPointer
    private(set) var count = 0
    /// Where the lowest cell starts; cells are packed from the end of the page downwards.
    private var cellStart: Int
    private var firstKey: [UInt8] = []

    init(pageSize: Int) {
        self.pageSize = pageSize
        image = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        image.initializeMemory(as: UInt8.self, repeating: 0)
        cellStart = pageSize
    }

    func deallocate() { image.deallocate() }

    /// Whether a cell of `cellSize` bytes (slot included) still fits the page being packed.
    func fits(_ cellSize: Int) -> Bool {
        PageHeader.size + 2 * count + (pageSize - cellStart) + cellSize <= pageSize
    }

    /// The bytes (slot included) of a cell holding `value` inline.
    static func inlineCellSize(keyLength: Int, valueLength: Int) -> Int {
        2 + varintLength(UInt64(keyLength)) + keyLength + varintLength(UInt64(valueLength) << 1) + valueLength
    }

    /// Appends the cell for `key` with `value` inline; the caller checked `fits` (or the page is empty).
    mutating func append(key: UnsafeRawBufferPointer, inlineValue value: UnsafeRawBufferPointer) {
        let start = cellStart - (Self.inlineCellSize(keyLength: key.count, valueLength: value.count) - 2)
        image.putU16(UInt16(start), at: PageHeader.size + 2 * count)
        var position = start
        position += image.putVarint(UInt64(key.count), at: position)
        position += image.putVarint(UInt64(value.count) << 1, at: position)
        position = copyBytes(key, at: position)
        _ = copyBytes(value, at: position)
        cellStart = start
        if count == 0 { firstKey = Array(key) }
        count += 1
    }

    /// Appends the cell for `key` and its stored value; the caller checked `fits` (or the page is empty).
    mutating func append(key: UnsafeRawBufferPointer, value: LeafValue) {
        let cellSize = leafCellSize(keyLength: key.count, value: value) - 2
        let start = cellStart - cellSize
        image.putU16(UInt16(start), at: PageHeader.size + 2 * count)
        var position = start
        position += image.putVarint(UInt64(key.count), at: position)
        switch value {
        case .inline(let bytes):
            position += image.putVarint(UInt64(bytes.count) << 1, at: position)
            position = copyBytes(key, at: position)
            _ = bytes.withUnsafeBytes { copyBytes($0, at: position) }
        case .overflow(let ref):
            position += image.putVarint(UInt64(ref.rawLength) << 1 | 1, at: position)
            position = copyBytes(key, at: position)
            image.putU32(ref.firstPage, at: position)
            position += 4
            position += image.putVarint(UInt64(ref.storedLength), at: position)
        }
        cellStart = start
        if count == 0 { firstKey = Array(key) }
        count += 1
    }

    /// The key of the cell appended last (it starts the cell area).
    private var lastKey: [UInt8] {
        let raw = UnsafeRawBufferPointer(image)
        guard let (keyLength, keySize) = raw.varint(cellStart, limit: pageSize),
              let (_, headerSize) = raw.varint(cellStart + keySize, limit: pageSize) else { return [] }
        let start = cellStart + keySize + headerSize
        return Array(raw[start..<min(pageSize, start + Int(keyLength))])
    }

    private func copyBytes(_ bytes: UnsafeRawBufferPointer, at position: Int) -> Int {
        if let base = bytes.baseAddress, let target = image.baseAddress, bytes.count > 0 {
            (target + position).copyMemory(from: base, byteCount: bytes.count)
        }
        return position + bytes.count
    }

    /// Seals the packed page as page `id` and hands its image to `write`; returns its first and
    /// last keys, and starts an empty page.
    mutating func finish(id: PageID, txid: UInt64, write: (UnsafeRawBufferPointer) throws -> Void) rethrows -> (first: [UInt8], last: [UInt8]) {
        image[PageHeader.type] = PageType.compactLeaf.rawValue
        image[PageHeader.level] = 0
        image.putU16(UInt16(count), at: PageHeader.count)
        image.putU32(id, at: PageHeader.pageNumber)
        image.putU64(txid, at: PageHeader.txid)
        image.putU32(0, at: PageHeader.extra)
        image.putU32(PageChecksum.compute(UnsafeRawBufferPointer(rebasing: image[4...])), at: PageHeader.checksum)
        try write(UnsafeRawBufferPointer(image))
        let keys = (firstKey, lastKey)
        image.initializeMemory(as: UInt8.self, repeating: 0)
        count = 0
        cellStart = pageSize
        firstKey = []
        return keys
    }
}
