/// A leaf being modified in place: a copy of its page image, in the compact leaf layout (Spec
/// section 4), in which cells are inserted, replaced and removed without decoding the others.
///
/// Copying a page into a `Node` used to decode every cell into buffers, and every insert into
/// the middle of a leaf moved the bytes of every later key and value; writing it back encoded
/// every cell again. Here a touched leaf costs one page copy, an insert writes its cell below
/// the lowest one and moves two bytes per later slot, and writing repacks the cells. A `Node`
/// keeps its image until an operation needs the decoded form (a split, a merge, a batch apply,
/// a read through a cursor), and decodes it then (`decoded()`).
///
/// A removed or replaced cell leaves a hole, counted in `garbage`; the holes are reclaimed
/// (`compact`) when a new cell does not fit the gap between the slots and the lowest cell.
/// Cells written here are encoded exactly as `Node.serialize` encodes them, and `write`
/// repacks them in key order, so a leaf written from an image is byte for byte the leaf the
/// decoded form would write.
struct LeafImage {
    /// The image (one page, owned by the `Node` holding this image).
    let bytes: UnsafeMutableRawBufferPointer
    private(set) var count: Int
    /// The lowest cell offset (`size` when there is no cell).
    private(set) var cellStart: Int
    /// Bytes of removed cells at or above `cellStart`.
    private(set) var garbage: Int

    var size: Int { bytes.count }
    private var raw: UnsafeRawBufferPointer { UnsafeRawBufferPointer(bytes) }
    private var slotsEnd: Int { PageHeader.size + 2 * count }
    /// Bytes the leaf takes when written: header, slots and live cells (`Node.byteSize`).
    var usedBytes: Int { slotsEnd + (size - cellStart - garbage) }

    /// A copy of `page` to modify; nil for a page of another layout or size (an older leaf
    /// layout, a decompressed leaf), or one whose cells overlap (those are decoded instead).
    init?(page: Page, pageSize: Int) {
        guard page.level == 0, page.compactCells, page.size == pageSize, page.count > 0 else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        buffer.copyMemory(from: page.raw)
        bytes = buffer
        count = page.count
        var lowest = pageSize, live = 0
        for index in 0..<page.count {
            let offset = Int(page.raw.u16(PageHeader.size + 2 * index))
            lowest = min(lowest, offset)
            live += Self.cellLength(in: page.raw, at: offset)
        }
        cellStart = lowest
        garbage = pageSize - lowest - live
        guard garbage >= 0, lowest >= PageHeader.size + 2 * page.count else {
            buffer.deallocate()
            return nil
        }
    }

    func deallocate() { bytes.deallocate() }

    /// The bytes of the cell at `offset` (a validated page's or one written here).
    private static func cellLength(in raw: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let cell = compactLeafCell(in: raw, at: offset, limit: raw.count)
        if cell.header & 1 == 0 { return cell.value + Int(cell.header >> 1) - offset }
        let stored = raw.varint(cell.value + 4, limit: raw.count)?.length ?? 1
        return cell.value + 4 + stored - offset
    }

    @inline(__always) private func offset(_ index: Int) -> Int { Int(raw.u16(PageHeader.size + 2 * index)) }

    @inline(__always) private func cell(_ index: Int) -> (key: Int, keyLength: Int, header: UInt64, value: Int) {
        compactLeafCell(in: raw, at: offset(index), limit: size)
    }

    // MARK: Reading

    @inline(__always) func withKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let cell = cell(index)
        return try body(UnsafeRawBufferPointer(rebasing: raw[cell.key..<cell.value]))
    }

    /// The first index whose key is >= `key`.
    func lowerBound(_ key: UnsafeRawBufferPointer) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) >> 1
            if withKey(mid, { compareBytes($0, key) }) < 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Value `index` (an inline value is copied out).
    func value(_ index: Int) -> LeafValue {
        let cell = cell(index)
        if cell.header & 1 == 0 { return .inline(Array(raw[cell.value..<(cell.value + Int(cell.header >> 1))])) }
        let stored = raw.varint(cell.value + 4, limit: size)?.value ?? 0
        return .overflow(OverflowRef(firstPage: raw.u32(cell.value), rawLength: Int(cell.header >> 1),
                                     storedLength: Int(stored), compressed: stored < cell.header >> 1))
    }

    /// Bytes value `index` takes in its cell (`LeafValue.cellBytes`).
    func valueCellBytes(_ index: Int) -> Int {
        let start = offset(index), cell = compactLeafCell(in: raw, at: start, limit: size)
        return Self.cellLength(in: raw, at: start) - (cell.value - start) + varintLength(cell.header)
    }

    /// The keys and values, decoded (`Node`'s other form).
    func decoded() -> (PackedBytes, LeafValues) {
        var keys = PackedBytes(), values = LeafValues()
        let live = size - cellStart - garbage
        keys.reserveCapacity(count: count, bytes: live)
        values.reserveCapacity(values: count, bytes: live)
        for index in 0..<count {
            let cell = cell(index)
            keys.append(UnsafeRawBufferPointer(rebasing: raw[cell.key..<cell.value]))
            if cell.header & 1 == 0 {
                values.appendInline(UnsafeRawBufferPointer(rebasing: raw[cell.value..<(cell.value + Int(cell.header >> 1))]))
            } else {
                values.append(value(index))
            }
        }
        return (keys, values)
    }

    // MARK: Modifying

    /// Inserts the cell of `key` and `value` at slot `index`; false, changing nothing, when it
    /// does not fit the page (the caller then decodes, inserts and splits).
    mutating func insert(key: UnsafeRawBufferPointer, value: LeafValue, at index: Int) -> Bool {
        let cellBytes = leafCellSize(keyLength: key.count, value: value) - 2
        guard makeRoom(cellBytes: cellBytes, newSlots: 1) else { return false }
        let start = cellStart - cellBytes
        writeCell(key: key, value: value, at: start)
        let slot = PageHeader.size + 2 * index
        if index < count { move(from: slot, to: slot + 2, count: 2 * (count - index)) }
        bytes.putU16(UInt16(start), at: slot)
        count += 1
        cellStart = start
        return true
    }

    /// Replaces the value of slot `index` (its key stays); false, changing nothing, when the
    /// new cell does not fit the page.
    mutating func replaceValue(at index: Int, with value: LeafValue) -> Bool {
        let old = offset(index)
        let oldBytes = Self.cellLength(in: raw, at: old)
        let cell = compactLeafCell(in: raw, at: old, limit: size)
        let cellBytes = leafCellSize(keyLength: cell.keyLength, value: value) - 2
        if cellBytes == oldBytes, cell.header & 1 == 0, case .inline(let inline) = value, inline.count == Int(cell.header >> 1) {
            // An inline value of the same length (a changed number in a row): its bytes only.
            _ = inline.withUnsafeBytes { bytes.putBytes($0, at: cell.value) }
            return true
        }
        // The old cell counts as free space from here on: its key is copied out first.
        let key = [UInt8](raw[cell.key..<cell.value])
        garbage += oldBytes
        guard makeRoom(cellBytes: cellBytes, newSlots: 0, keeping: index) else {
            garbage -= oldBytes
            return false
        }
        let start = cellStart - cellBytes
        key.withUnsafeBytes { writeCell(key: $0, value: value, at: start) }
        bytes.putU16(UInt16(start), at: PageHeader.size + 2 * index)
        cellStart = start
        return true
    }

    /// Removes slot `index` and its cell.
    mutating func remove(at index: Int) {
        let start = offset(index)
        let length = Self.cellLength(in: raw, at: start)
        let slot = PageHeader.size + 2 * index
        if index + 1 < count { move(from: slot + 2, to: slot, count: 2 * (count - index - 1)) }
        count -= 1
        if start == cellStart {
            cellStart += length
            if count == 0 { (cellStart, garbage) = (size, 0) }
        } else {
            garbage += length
        }
    }

    /// Whether a cell of `cellBytes` and `newSlots` more slots fit below the lowest cell,
    /// compacting the cells first when the holes make the difference. `keeping`: a slot whose
    /// cell is counted as garbage already (a value being replaced) and is dropped by the
    /// compaction (its slot is rewritten by the caller).
    private mutating func makeRoom(cellBytes: Int, newSlots: Int, keeping replaced: Int? = nil) -> Bool {
        let gap = cellStart - slotsEnd - 2 * newSlots
        if gap >= cellBytes { return true }
        guard gap + garbage >= cellBytes else { return false }
        compact(skipping: replaced)
        return true
    }

    /// Moves the live cells together at the end of the page, in slot order (the holes go).
    private mutating func compact(skipping skipped: Int?) {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { scratch.deallocate() }
        var end = size
        for index in 0..<count where index != skipped {
            let start = offset(index), length = Self.cellLength(in: raw, at: start)
            end -= length
            UnsafeMutableRawBufferPointer(rebasing: scratch[end..<(end + length)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)]))
            bytes.putU16(UInt16(end), at: PageHeader.size + 2 * index)
        }
        UnsafeMutableRawBufferPointer(rebasing: bytes[end...]).copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[end...]))
        cellStart = end
        garbage = 0
    }

    /// Moves `count` bytes of the image from `source` to `target` (the ranges may overlap).
    private func move(from source: Int, to target: Int, count: Int) {
        guard count > 0, let base = bytes.baseAddress else { return }
        (base + target).copyMemory(from: base + source, byteCount: count)
    }

    private func writeCell(key: UnsafeRawBufferPointer, value: LeafValue, at position: Int) {
        switch value {
        case .inline(let inline):
            _ = inline.withUnsafeBytes { bytes.putInlineLeafCell(key: key, value: $0, at: position) }
        case .overflow(let ref):
            _ = bytes.putOverflowLeafCell(key: key, ref: ref, at: position)
        }
    }

    // MARK: Writing

    /// Writes the leaf as page `id` into `buffer` (a page), its cells packed from the end in
    /// key order and the rest zero, as `Node.serialize` writes a decoded leaf, and seals it.
    func write(into buffer: UnsafeMutableRawBufferPointer, id: PageID, txid: UInt64) {
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        buffer[PageHeader.type] = PageType.compactLeaf.rawValue
        buffer.putU16(UInt16(count), at: PageHeader.count)
        buffer.putU32(id, at: PageHeader.pageNumber)
        buffer.putU64(txid, at: PageHeader.txid)
        var end = buffer.count
        for index in 0..<count {
            let start = offset(index), length = Self.cellLength(in: raw, at: start)
            end -= length
            UnsafeMutableRawBufferPointer(rebasing: buffer[end..<(end + length)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)]))
            buffer.putU16(UInt16(end), at: PageHeader.size + 2 * index)
        }
        sealPage(buffer)
    }
}
