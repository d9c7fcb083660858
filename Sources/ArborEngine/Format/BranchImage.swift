/// A branch being modified in place: a copy of its page image. What a copy-on-write descent
/// changes in a branch is one child pointer (the child's new page), a four-byte write here;
/// anything else (a separator added, replaced or removed) decodes the branch first. Written
/// back, the image is the page the decoded branch would write, its pointers changed.
struct BranchImage {
    let bytes: UnsafeMutableRawBufferPointer
    /// The page copied, whose separators the image keeps (their search prefixes are reused).
    let source: Page
    let count: Int
    /// Header, slots and cells (`Node.byteSize`).
    let usedBytes: Int

    private var raw: UnsafeRawBufferPointer { UnsafeRawBufferPointer(bytes) }

    /// A copy of branch `page`; nil for a page of another size.
    init?(page: Page, pageSize: Int) {
        guard page.level > 0, page.size == pageSize else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        buffer.copyMemory(from: page.raw)
        bytes = buffer
        source = page
        count = page.count
        usedBytes = page.usedBytes
    }

    func deallocate() { bytes.deallocate() }

    /// The page this image would be read as (to decode it).
    func page() -> Page { Page.copy(id: 0, image: raw) }

    @inline(__always) private func offset(_ index: Int) -> Int { Int(raw.u16(PageHeader.size + 2 * index)) }

    /// Separator `index`: a validated branch cell is child (4 bytes), key length, key.
    @inline(__always) func withKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let start = offset(index) + 4
        let (length, size) = raw.varint(start, limit: raw.count) ?? (0, 1)
        let key = start + size
        return try body(UnsafeRawBufferPointer(rebasing: raw[key..<min(key + Int(length), raw.count)]))
    }

    /// The child covering `key`: the first separator greater than `key`.
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) >> 1
            if withKey(mid, { compareBytes($0, key) }) <= 0 { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Child `index` (0 is the leftmost, in the header).
    func child(_ index: Int) -> PageID {
        index == 0 ? raw.u32(PageHeader.extra) : raw.u32(offset(index - 1))
    }

    func setChild(_ id: PageID, at index: Int) {
        bytes.putU32(id, at: index == 0 ? PageHeader.extra : offset(index - 1))
    }

    /// Writes the branch as page `id` of transaction `txid` into `buffer` and seals it.
    func write(into buffer: UnsafeMutableRawBufferPointer, id: PageID, txid: UInt64) {
        buffer.copyMemory(from: raw)
        buffer.putU32(id, at: PageHeader.pageNumber)
        buffer.putU64(txid, at: PageHeader.txid)
        sealPage(buffer)
    }
}
