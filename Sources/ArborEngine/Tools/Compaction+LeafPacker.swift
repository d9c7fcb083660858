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

    /// Appends the cell for `key` with `value` inline; the caller checked `fits` (or the page is empty).
    mutating func append(key: UnsafeRawBufferPointer, inlineValue value: UnsafeRawBufferPointer) {
        let start = reserve(inlineLeafCellSize(keyLength: key.count, valueLength: value.count), firstKey: key)
        _ = image.putInlineLeafCell(key: key, value: value, at: start)
    }

    /// Appends the cell for `key` whose value is in the overflow chain `ref`; the caller checked
    /// `fits` (or the page is empty).
    mutating func append(key: UnsafeRawBufferPointer, overflow ref: OverflowRef) {
        let start = reserve(leafCellSize(keyLength: key.count, value: .overflow(ref)), firstKey: key)
        _ = image.putOverflowLeafCell(key: key, ref: ref, at: start)
    }

    /// Claims room for a cell of `cellSize` bytes (slot included) and its slot; returns where the cell starts.
    private mutating func reserve(_ cellSize: Int, firstKey key: UnsafeRawBufferPointer) -> Int {
        let start = cellStart - (cellSize - 2)
        image.putU16(UInt16(start), at: PageHeader.size + 2 * count)
        cellStart = start
        if count == 0 { firstKey = Array(key) }
        count += 1
        return start
    }

    /// The key of the cell appended last (it starts the cell area).
    private var lastKey: [UInt8] {
        let raw = UnsafeRawBufferPointer(image)
        let cell = compactLeafCell(in: raw, at: cellStart, limit: pageSize)
        return Array(raw[cell.key..<min(pageSize, cell.value)])
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
        sealPage(image)
        try write(UnsafeRawBufferPointer(image))
        let keys = (firstKey, lastKey)
        image.initializeMemory(as: UInt8.self, repeating: 0)
        count = 0
        cellStart = pageSize
        firstKey = []
        return keys
    }
}
