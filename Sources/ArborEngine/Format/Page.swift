#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An immutable, validated page image in memory (a leaf, branch or overflow page).
///
/// Every page read from disk is checksum-verified and its cell layout bounds-checked once,
/// in `Page.validated`; afterwards the accessors read without further checks. Instances are
/// never mutated after validation, which is why they may be shared between threads.
final class Page: @unchecked Sendable {
    let id: PageID
    let bytes: UnsafeMutableRawBufferPointer
    /// The page's type; both leaf layouts read as `.leaf` (see `compactCells`).
    let type: PageType
    let level: Int
    let count: Int
    /// Whether leaf cells have the compact layout (type 6) rather than a flag byte (type 3).
    let compactCells: Bool
    /// For a branch page: each separator's search prefix (`Page.searchPrefix`), built once
    /// when the page is loaded, before it is shared (see `Page+SearchPrefixes.swift`). nil for
    /// leaves and overflow pages.
    private(set) var separatorPrefixes: UnsafeMutableBufferPointer<UInt64>?
    /// For a compact leaf of eight cells or more whose first and last keys fit in eight bytes
    /// (a table's): the search prefixes of those two keys, where an interpolated search starts
    /// (`compactLeafLowerBound`). Set with `separatorPrefixes` (`prepareSearches`).
    private(set) var leafKeyPrefixes: (first: UInt64, last: UInt64)?

    private init(id: PageID, bytes: UnsafeMutableRawBufferPointer) {
        self.id = id
        self.bytes = bytes
        let raw = UnsafeRawBufferPointer(bytes)
        let stored = PageType(rawValue: raw[PageHeader.type]) ?? .overflow
        self.compactCells = stored == .compactLeaf
        self.type = stored == .compactLeaf ? .leaf : stored
        self.level = Int(raw[PageHeader.level])
        self.count = Int(raw.u16(PageHeader.count))
    }

    /// Reads page `id` from `file` and validates it (a compressed leaf is decoded).
    /// - Throws: `corruptPage` for a short read or an invalid page; I/O errors.
    static func read(_ id: PageID, from file: StorageFile, pageSize: Int) throws -> Page {
        let buffer = PageMemory.shared.allocate(byteCount: pageSize)
        // Read straight into the page's own buffer: a plain page keeps it (no second copy).
        var adopted = false
        defer { if !adopted { PageMemory.shared.deallocate(buffer) } }
        let read = try file.read(into: buffer, at: UInt64(id) * UInt64(pageSize))
        guard read == pageSize else {
            throw ArborError.corruptPage(page: id, detail: "short read of \(read) bytes (file truncated)")
        }
        if buffer[PageHeader.type] == PageType.compressedLeaf.rawValue {
            return try CompressedLeaf.decode(id: id, image: UnsafeRawBufferPointer(buffer))
        }
        adopted = true
        return try Page.validated(id: id, adopting: buffer)
    }

    deinit {
        PageMemory.shared.deallocate(bytes)
        separatorPrefixes?.deallocate()
    }

    var raw: UnsafeRawBufferPointer { UnsafeRawBufferPointer(bytes) }
    var size: Int { bytes.count }
    var txid: UInt64 { raw.u64(PageHeader.txid) }
    var extra: UInt32 { raw.u32(PageHeader.extra) }

    // MARK: Leaf and branch cells

    @inline(__always) func cellOffset(_ index: Int) -> Int {
        Int(raw.u16(PageHeader.size + 2 * index))
    }

    /// Start and length of key `index` (a leaf key, or branch separator `index`).
    @inline(__always) func keyLocation(_ index: Int) -> (start: Int, length: Int) {
        let offset = cellOffset(index)
        let raw = self.raw
        if level == 0 {
            if compactCells {
                let cell = compactLeafCell(in: raw, at: offset, limit: size)
                return (cell.key, cell.keyLength)
            }
            // flags, keyLength varint, [valueLength varint], key
            var position = offset + 1
            let (keyLength, keyLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
            position += keyLengthSize
            if raw[offset] & LeafCellFlag.overflow == 0 {
                position += raw.varint(position, limit: size)?.length ?? 1
            }
            return (position, Int(keyLength))
        } else {
            // child page number, key length varint (one byte in nearly every separator), key
            let position = offset + 4
            if position < size, raw[position] < 0x80 { return (position + 1, Int(raw[position])) }
            let (keyLength, keyLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
            return (position + keyLengthSize, Int(keyLength))
        }
    }

    @inline(__always) func withKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let (start, length) = keyLocation(index)
        // From the base address, not a slice of `raw`: every binary search step passes here.
        // The layout check at load made every key's bounds valid.
        return try body(UnsafeRawBufferPointer(start: bytes.baseAddress.map { $0 + start }, count: length))
    }

    func key(_ index: Int) -> [UInt8] { withKey(index) { Array($0) } }

    /// The value of leaf cell `index`.
    func leafValue(_ index: Int) -> LeafValue {
        let offset = cellOffset(index)
        let raw = self.raw
        if compactCells {
            let (_, _, header, position) = compactLeafCell(in: raw, at: offset, limit: size)
            if header & 1 == 0 {
                return .inline(Array(raw[position..<(position + Int(header >> 1))]))
            }
            let first = raw.u32(position)
            let (stored, _) = raw.varint(position + 4, limit: size) ?? (0, 1)
            // A chain is compressed exactly when it is shorter than the value (writers compress only then).
            return .overflow(OverflowRef(firstPage: first, rawLength: Int(header >> 1), storedLength: Int(stored),
                                         compressed: stored < header >> 1))
        }
        let flags = raw[offset]
        var position = offset + 1
        let (keyLength, keyLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
        position += keyLengthSize
        if flags & LeafCellFlag.overflow == 0 {
            let (valueLength, valueLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
            let start = position + valueLengthSize + Int(keyLength)
            return .inline(Array(raw[start..<(start + Int(valueLength))]))
        }
        position += Int(keyLength)
        let first = raw.u32(position)
        position += 4
        let (rawLength, rawSize) = raw.varint(position, limit: size) ?? (0, 1)
        position += rawSize
        let (stored, _) = raw.varint(position, limit: size) ?? (0, 1)
        return .overflow(OverflowRef(
            firstPage: first, rawLength: Int(rawLength), storedLength: Int(stored),
            compressed: flags & LeafCellFlag.compressed != 0))
    }

    /// Calls `body` with the key and inline value of leaf cell `index` (value nil when it
    /// overflows), parsing the cell once.
    @inline(__always) func withLeafEntry<R>(_ index: Int, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        // The page (`self`) stays alive for the whole call.
        let entry = leafEntry(index)
        return try body(entry.key, entry.inline)
    }

    /// The key and inline value of leaf cell `index` (value nil when it overflows), parsing the
    /// cell once. The pointers are valid only while this page is alive: the caller keeps it
    /// (a scan holds it on its cursor's path). The hot path of scans: no closure per entry, so
    /// nothing is retained per entry either.
    @inline(__always) func leafEntry(_ index: Int) -> (key: UnsafeRawBufferPointer, inline: UnsafeRawBufferPointer?) {
        let offset = cellOffset(index)
        let raw = self.raw
        if compactCells {
            let cell = compactLeafCell(in: raw, at: offset, limit: size)
            let key = UnsafeRawBufferPointer(rebasing: raw[cell.key..<cell.value])
            if cell.header & 1 != 0 { return (key, nil) }
            return (key, UnsafeRawBufferPointer(rebasing: raw[cell.value..<(cell.value + Int(cell.header >> 1))]))
        }
        let flags = raw[offset]
        var position = offset + 1
        let (keyLength, keyLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
        position += keyLengthSize
        if flags & LeafCellFlag.overflow != 0 {
            return (UnsafeRawBufferPointer(rebasing: raw[position..<(position + Int(keyLength))]), nil)
        }
        let (valueLength, valueLengthSize) = raw.varint(position, limit: size) ?? (0, 1)
        position += valueLengthSize
        let keyEnd = position + Int(keyLength)
        return (UnsafeRawBufferPointer(rebasing: raw[position..<keyEnd]),
                UnsafeRawBufferPointer(rebasing: raw[keyEnd..<(keyEnd + Int(valueLength))]))
    }

    /// The first index from `start` toward `end` (by `step`, ±1) whose key `range` does not
    /// reject, having skipped at most `limit` entries that it rejects; `end` when it rejects
    /// them all. A scan's run of rejected entries in one call: this loop is small enough for
    /// the cell parsing and the range test to be inlined in it.
    func firstNotRejected(from start: Int, to end: Int, step: Int, by range: FixedComponentRange, atMost limit: Int) -> Int {
        var index = start, skipped = 0
        while index != end, skipped < limit {
            guard range.verdict(leafEntry(index).key) == false else { return index }
            skipped &+= 1
            index &+= step
        }
        return index
    }

    /// Bytes in use (header, slots and cells), assuming cells are packed at the end of the page
    /// as this engine writes them.
    var usedBytes: Int {
        var lowest = size
        for index in 0..<count { lowest = min(lowest, cellOffset(index)) }
        return PageHeader.size + 2 * count + (size - lowest)
    }

    /// Child `index` of a branch: 0 is the leftmost child, `i + 1` the child right of separator `i`.
    @inline(__always) func child(_ index: Int) -> PageID {
        index == 0 ? extra : raw.u32(cellOffset(index - 1))
    }

    /// Index of the first leaf key >= `key` (may be `count`).
    func lowerBound(_ key: UnsafeRawBufferPointer, prefetching: Bool = true) -> Int {
        if compactCells, level == 0 { return compactLeafLowerBound(key, prefetching: prefetching) }
        var low = 0, high = count
        while low < high {
            let mid = (low + high) >> 1
            if withKey(mid, { compareBytes($0, key) }) < 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Index of the child of a branch that covers `key`: the number of separators <= key.
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        if let separatorPrefixes { return childIndex(for: key, prefixes: separatorPrefixes) }
        var low = 0, high = count
        while low < high {
            let mid = (low + high) >> 1
            if withKey(mid, { compareBytes($0, key) }) <= 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Overflow payload of this overflow page.
    var overflowPayload: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: raw[PageHeader.size..<(PageHeader.size + count)])
    }

    // MARK: Construction and validation

    /// Copies a page image this process has just serialized itself (never bytes read from disk).
    /// Copies `image` (built by this process: not validated) and prepares its searches. With
    /// `source`, a branch whose separators are those of `source` (only its child pointers
    /// changed), the search prefixes are copied instead of computed again.
    static func copy(id: PageID, image: UnsafeRawBufferPointer, separatorsOf source: Page? = nil) -> Page {
        let buffer = PageMemory.shared.allocate(byteCount: image.count)
        buffer.copyMemory(from: image)
        let page = Page(id: id, bytes: buffer)
        if let source, page.type == .branch, page.level == source.level, page.count == source.count,
           let prefixes = source.separatorPrefixes, prefixes.count == page.count {
            let copied = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: prefixes.count)
            _ = copied.initialize(fromContentsOf: prefixes)
            page.separatorPrefixes = copied
        } else {
            page.prepareSearches()
        }
        return page
    }

    /// Copies `image` (a whole page as on disk, or a decompressed logical leaf) and validates it.
    /// - Throws: `ArborError.corruptPage` naming what is wrong.
    static func validated(id: PageID, image: UnsafeRawBufferPointer, verifyChecksum: Bool) throws -> Page {
        let buffer = PageMemory.shared.allocate(byteCount: image.count)
        buffer.copyMemory(from: image)
        return try validated(id: id, adopting: buffer, verifyChecksum: verifyChecksum)
    }

    /// `validated(id:image:verifyChecksum:)` without the copy, for a page image already in
    /// `buffer` (from `PageMemory`, or allocated with alignment 8; a page just read from the
    /// file): the function owns `buffer` from the call on — the returned page keeps it, and it
    /// is deallocated when the page is invalid.
    static func validated(id: PageID, adopting buffer: UnsafeMutableRawBufferPointer, verifyChecksum: Bool = true) throws -> Page {
        let image = UnsafeRawBufferPointer(buffer)
        do {
            guard image.count >= PageHeader.size else {
                throw ArborError.corruptPage(page: id, detail: "page image of \(image.count) bytes is shorter than its header")
            }
            if verifyChecksum { try verifyPageChecksum(id: id, image: image) }
            guard image.u32(PageHeader.pageNumber) == id else {
                throw ArborError.corruptPage(page: id, detail: "header says page \(image.u32(PageHeader.pageNumber)) (misdirected write?)")
            }
        } catch {
            PageMemory.shared.deallocate(buffer)
            throw error
        }
        // From here the page owns the buffer (its deinit frees it, also when invalid).
        let page = Page(id: id, bytes: buffer)
        try page.validateLayout()
        page.prepareSearches()
        return page
    }

    /// Builds what searches of this page read (`separatorPrefixes`, `leafKeyPrefixes`): once,
    /// when the page is made (its layout checked, or written by this process), before it is shared.
    private func prepareSearches() {
        separatorPrefixes = makeSeparatorPrefixes()
        leafKeyPrefixes = makeLeafKeyPrefixes()
    }
}

func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16) }

/// Verifies the checksum (`PageChecksum`) stored in the first four bytes of a page image.
/// - Throws: `corruptPage` with both checksums.
func verifyPageChecksum(id: PageID, image: UnsafeRawBufferPointer, what: String = "checksum") throws {
    let stored = image.u32(PageHeader.checksum)
    let computed = PageChecksum.compute(UnsafeRawBufferPointer(rebasing: image[4...]))
    guard stored == computed else {
        throw ArborError.corruptPage(page: id, detail: "\(what) mismatch (stored \(hex(stored)), computed \(hex(computed)))")
    }
}

/// Builds overflow page `id` of transaction `txid` in `buffer` (one page): `payload` and the link
/// to the `next` page of the chain (0 at the end), sealed with its checksum.
func buildOverflowPage(_ buffer: UnsafeMutableRawBufferPointer, id: PageID, txid: UInt64,
                       payload: UnsafeRawBufferPointer, next: PageID) {
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    buffer[PageHeader.type] = PageType.overflow.rawValue
    buffer.putU16(UInt16(payload.count), at: PageHeader.count)
    buffer.putU32(id, at: PageHeader.pageNumber)
    buffer.putU64(txid, at: PageHeader.txid)
    buffer.putU32(next, at: PageHeader.extra)
    UnsafeMutableRawBufferPointer(rebasing: buffer[PageHeader.size..<(PageHeader.size + payload.count)]).copyMemory(from: payload)
    sealPage(buffer)
}
