/// A decoded view of one page, for inspection tools (`arbor page`) and fuzzing the page decoder.
public struct PageDump: Sendable {
    public struct Cell: Sendable {
        public var key: [UInt8]
        /// Branch cells: the child right of this separator.
        public var child: PageID?
        /// Leaf cells: inline value length, or the overflow chain's first page and lengths.
        public var valueLength: Int?
        public var overflowPage: PageID?
        public var compressed: Bool
    }

    public var page: PageID
    public var type: PageType
    public var level: Int
    public var transactionID: UInt64
    /// Branches: the leftmost child. Overflow pages: the next page (0 at the end).
    public var link: PageID
    public var cells: [Cell]
    /// Bytes used by header, slots and cells (leaf/branch), or header plus payload (overflow).
    public var usedBytes: Int
    /// The page size; for a compressed leaf, the size of the decompressed logical leaf.
    public var size: Int

    /// Decodes `image` as page `page` after verifying its checksum and layout.
    /// - Throws: `ArborError.corruptPage` (or `decompressionFailed`) naming what is wrong.
    public static func decode(page: PageID, image: [UInt8]) throws -> PageDump {
        try image.withUnsafeBytes { raw in
            guard raw.count >= PageHeader.size else {
                throw ArborError.corruptPage(page: page, detail: "image of \(raw.count) bytes is shorter than a header")
            }
            let type = PageType(rawValue: raw[PageHeader.type])
            if type == .meta {
                let meta = try Meta.decode(raw, number: page)
                return PageDump(page: page, type: .meta, level: 0, transactionID: meta.txid, link: 0, cells: [],
                                usedBytes: Meta.Offset.commitPages + 8 * meta.commitPages.count + 20 * meta.inlineFree.count,
                                size: raw.count)
            }
            let decoded = type == .compressedLeaf
                ? try CompressedLeaf.decode(id: page, image: raw)
                : try Page.validated(id: page, image: raw, verifyChecksum: true)
            var cells: [Cell] = []
            var used = PageHeader.size
            if decoded.type == .leaf || decoded.type == .branch {
                for index in 0..<decoded.count {
                    let key = decoded.key(index)
                    if decoded.level == 0 {
                        let value = decoded.leafValue(index)
                        used += decoded.compactCells ? leafCellSize(keyLength: key.count, value: value)
                            : flaggedLeafCellSize(keyLength: key.count, value: value)
                        switch value {
                        case .inline(let bytes):
                            cells.append(Cell(key: key, child: nil, valueLength: bytes.count, overflowPage: nil, compressed: false))
                        case .overflow(let ref):
                            cells.append(Cell(key: key, child: nil, valueLength: ref.rawLength, overflowPage: ref.firstPage, compressed: ref.compressed))
                        }
                    } else {
                        used += branchCellSize(keyLength: key.count)
                        cells.append(Cell(key: key, child: decoded.child(index + 1), valueLength: nil, overflowPage: nil, compressed: false))
                    }
                }
            } else {
                used += decoded.count
            }
            return PageDump(page: page, type: type ?? decoded.type, level: decoded.level, transactionID: decoded.txid,
                            link: decoded.type == .overflow || decoded.type == .branch ? decoded.extra : 0,
                            cells: cells, usedBytes: used, size: type == .compressedLeaf ? decoded.size : raw.count)
        }
    }
}

extension Database {
    /// Reads and decodes page `number` of the file as it is on disk.
    /// - Throws: `pageOutOfRange` beyond the file, or the page's decoding error.
    public func dumpPage(_ number: PageID) throws -> PageDump {
        try PageDump.decode(page: number, image: try rawPage(number))
    }

    /// The bytes of page `number` as they are on disk, unverified (for hex dumps).
    /// - Throws: `pageOutOfRange` beyond the end of the file.
    public func rawPage(_ number: PageID) throws -> [UInt8] {
        let size = try file.size()
        guard UInt64(number) * UInt64(pageSize) + UInt64(pageSize) <= size else {
            throw ArborError.pageOutOfRange(page: number, pageCount: UInt32(clamping: size / UInt64(pageSize)), referencedFrom: "the caller")
        }
        var image = [UInt8](repeating: 0, count: pageSize)
        _ = try image.withUnsafeMutableBytes { try file.read(into: $0, at: UInt64(number) * UInt64(pageSize)) }
        return image
    }
}
