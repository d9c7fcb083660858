/// Compressed leaves of compacted read-only files (`compact(compress: true)`).
///
/// A compressed leaf page holds an LZ4 block that decompresses to a *logical* leaf image of up to
/// 65,535 bytes — larger than the page — laid out exactly like a leaf page. The file shrinks
/// because each physical page carries more entries. Layout after the common header (whose
/// `count` is the cell count and `extra` the logical size): UInt32 compressed length, LZ4 block.
enum CompressedLeaf {
    static let lengthOffset = PageHeader.size
    static let dataOffset = PageHeader.size + 4

    /// Decodes a compressed leaf read from disk into a validated logical leaf page.
    static func decode(id: PageID, image: UnsafeRawBufferPointer) throws -> Page {
        try verifyPageChecksum(id: id, image: image)
        guard image.u32(PageHeader.pageNumber) == id else {
            throw ArborError.corruptPage(page: id, detail: "header says page \(image.u32(PageHeader.pageNumber))")
        }
        let logicalSize = Int(image.u32(PageHeader.extra))
        let compressedLength = Int(image.u32(lengthOffset))
        guard logicalSize >= PageHeader.size, logicalSize <= Limits.maxLogicalLeafSize,
              compressedLength > 0, compressedLength <= image.count - dataOffset else {
            throw ArborError.corruptPage(page: id, detail: "compressed leaf sizes \(compressedLength) -> \(logicalSize) are invalid")
        }
        let logical = try LZ4.decompress(
            UnsafeRawBufferPointer(rebasing: image[dataOffset..<(dataOffset + compressedLength)]),
            originalLength: logicalSize, page: id)
        let page = try logical.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: false) }
        guard page.type == .leaf, page.count == Int(image.u16(PageHeader.count)) else {
            throw ArborError.corruptPage(page: id, detail: "compressed leaf does not decode to a leaf of its recorded size")
        }
        return page
    }

    /// The physical page image for `node` (a leaf) as page `id`, or nil when it does not fit.
    static func encode(_ node: Node, id: PageID, txid: UInt64, pageSize: Int) -> [UInt8]? {
        let logicalSize = node.byteSize
        guard node.isLeaf, logicalSize <= Limits.maxLogicalLeafSize else { return nil }
        let logical = UnsafeMutableRawBufferPointer.allocate(byteCount: logicalSize, alignment: 8)
        defer { logical.deallocate() }
        node.serialize(into: logical, id: id, txid: txid)
        guard let compressed = LZ4.compress(UnsafeRawBufferPointer(logical)),
              compressed.count <= pageSize - dataOffset else { return nil }
        var page = [UInt8](repeating: 0, count: pageSize)
        page.withUnsafeMutableBytes { buffer in
            buffer[PageHeader.type] = PageType.compressedLeaf.rawValue
            buffer.putU16(UInt16(node.count), at: PageHeader.count)
            buffer.putU32(id, at: PageHeader.pageNumber)
            buffer.putU64(txid, at: PageHeader.txid)
            buffer.putU32(UInt32(logicalSize), at: PageHeader.extra)
            buffer.putU32(UInt32(compressed.count), at: lengthOffset)
            for (index, byte) in compressed.enumerated() { buffer[dataOffset + index] = byte }
            sealPage(buffer)
        }
        return page
    }
}
