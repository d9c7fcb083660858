#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `Database.compact(to:compress:)` did.
public struct CompactionReport: Sendable {
    public var sourceBytes: UInt64
    public var compactedBytes: UInt64
    public var trees: Int
    public var entries: UInt64
    public var compressedLeaves: Int
    public var leaves: Int
}

extension Database {
    /// Writes a compacted copy of the newest snapshot to `path` (SQLite's VACUUM INTO): no free
    /// pages, leaves packed full, trees laid out in key order. With `compress`, leaves are
    /// LZ4-compressed into logical pages of up to 64 KiB, and the copy can only be opened
    /// read-only — the form in which to ship a pre-built store with an app.
    ///
    /// The copy is written to a temporary file beside `path` and renamed into place after it is
    /// synced, so `path` is either the complete copy or untouched. To replace a store other
    /// processes may write to, compact inside `Database.withWriterLock(path:timeout:_:)` of `path`.
    /// - Complexity: O(entries); reads the source once.
    /// - Throws: I/O errors, or `corruptPage` if the source is damaged.
    @discardableResult
    public func compact(to path: String, compress: Bool = false) throws -> CompactionReport {
        // A name of its own: two compactions to one path must not write into each other's file.
        let temporary = "\(path).compacting-\(String(UInt64.random(in: 1...UInt64.max), radix: 16))"
        let file = try POSIXStorageFile(path: temporary, readOnly: false, create: true)
        do {
            let report = try view { transaction in
                var writer = CompactWriter(file: file, pageSize: pageSize, compress: compress)
                return try writer.copy(transaction)
            }
            guard rename(temporary, path) == 0 else { throw ArborError.io(operation: "rename to \(path)", errno: errno) }
            return report
        } catch {
            unlink(temporary)
            throw error
        }
    }
}

/// Builds trees bottom-up into a new file, writing pages sequentially.
struct CompactWriter {
    let file: StorageFile
    let pageSize: Int
    let compress: Bool
    static let txid: UInt64 = 1
    var nextPage: PageID = 2
    var report = CompactionReport(sourceBytes: 0, compactedBytes: 0, trees: 0, entries: 0, compressedLeaves: 0, leaves: 0)
    /// Expected compressed/raw ratio of the last compressed leaf, to size the next one.
    var ratio = 0.5

    init(file: StorageFile, pageSize: Int, compress: Bool) {
        self.file = file
        self.pageSize = pageSize
        self.compress = compress
    }

    mutating func copy(_ source: Transaction) throws -> CompactionReport {
        report.sourceBytes = try source.database.file.size()
        var catalog: [([UInt8], LeafValue)] = []
        for name in try source.treeNames() {
            let tree = try source.tree(name)
            var builder = LevelBuilder()
            if compress {
                let cursor = try tree.makeCursor()
                var entries: [([UInt8], LeafValue)] = []
                var more = try cursor.first()
                while more, let key = cursor.key {
                    let value = try cursor.value()
                    let stored: LeafValue = value.count > Limits.inlineValueLimit(pageSize: pageSize)
                        ? .overflow(try writeOverflow(value)) : .inline(value)
                    entries.append((key, stored))
                    if entries.count >= 4096 { try flushLeaves(&entries, into: &builder, final: false) }
                    more = try cursor.next()
                }
                try flushLeaves(&entries, into: &builder, final: true)
            } else {
                try packLeaves(of: tree, into: &builder)
            }
            let info = try finishTree(builder, count: UInt64(tree.count))
            report.trees += 1
            report.entries += info.count
            catalog.append((Array(name.utf8), .inline(info.encoded())))
        }
        var builder = LevelBuilder()
        try flushLeaves(&catalog, into: &builder, final: true, allowCompression: false)
        let catalogInfo = try finishTree(builder, count: UInt64(report.trees))
        let meta = Meta(
            txid: Self.txid, pageSize: pageSize, flags: compress ? Meta.Flag.compressed : 0, pageCount: nextPage,
            catalog: catalogInfo, freelist: .empty, freePages: 0)
        try file.sync()
        for number: PageID in 0...1 {
            try meta.image(number: number).withUnsafeBytes { try file.write($0, at: UInt64(number) * UInt64(pageSize)) }
        }
        try file.sync()
        report.compactedBytes = try file.size()
        return report
    }

    /// The children of the level being built: (separator before the child, page).
    struct LevelBuilder {
        var leaves: [(separator: [UInt8], page: PageID, lastKey: [UInt8])] = []
    }

    /// Copies the leaves of `tree` page by page, cells packed as they are read (no compression).
    private mutating func packLeaves(of tree: Tree, into builder: inout LevelBuilder) throws {
        var packer = LeafPacker(pageSize: pageSize)
        defer { packer.deallocate() }
        let inlineLimit = Limits.inlineValueLimit(pageSize: pageSize)
        try tree.forEachUnsafe { key, value in
            if value.count > inlineLimit {
                let ref = try writeOverflow(Array(value))
                if packer.count > 0, !packer.fits(leafCellSize(keyLength: key.count, value: .overflow(ref))) {
                    try finishPackedLeaf(&packer, into: &builder)
                }
                packer.append(key: key, overflow: ref)
            } else {
                if packer.count > 0, !packer.fits(inlineLeafCellSize(keyLength: key.count, valueLength: value.count)) {
                    try finishPackedLeaf(&packer, into: &builder)
                }
                packer.append(key: key, inlineValue: value)
            }
            return true
        }
        if packer.count > 0 { try finishPackedLeaf(&packer, into: &builder) }
    }

    private mutating func finishPackedLeaf(_ packer: inout LeafPacker, into builder: inout LevelBuilder) throws {
        let id = nextPage
        let (first, last) = try packer.finish(id: id, txid: Self.txid) { image in
            try file.write(image, at: UInt64(id) * UInt64(pageSize))
        }
        guard nextPage < PageID.max else { throw ArborError.internalInconsistency("page numbers exhausted") }
        nextPage += 1
        report.leaves += 1
        let separator = builder.leaves.last.map { shortestSeparator($0.lastKey, first) } ?? []
        builder.leaves.append((separator, id, last))
    }

    /// Packs `entries` into leaves; keeps a tail back unless `final`, so the next batch can fill it.
    mutating func flushLeaves(_ entries: inout [([UInt8], LeafValue)], into builder: inout LevelBuilder,
                              final: Bool, allowCompression: Bool = true) throws {
        let useCompression = compress && allowCompression
        let capacity = pageSize
        let target = useCompression
            ? min(Limits.maxLogicalLeafSize, max(capacity, Int(Double(capacity - CompressedLeaf.dataOffset) / ratio * 0.9)))
            : capacity
        var start = 0
        while start < entries.count {
            var size = PageHeader.size
            var end = start
            while end < entries.count {
                let cell = leafCellSize(keyLength: entries[end].0.count, value: entries[end].1)
                if size + cell > target { break }
                size += cell
                end += 1
            }
            if end == entries.count && !final { break }
            end = max(end, start + 1)
            let node = Node(level: 0)
            node.keys = PackedBytes(entries[start..<end].lazy.map(\.0))
            node.values = LeafValues(entries[start..<end].lazy.map(\.1))
            node.recomputeSize()
            try writeLeaf(node, into: &builder, compressed: useCompression)
            start = end
        }
        entries.removeSubrange(0..<start)
    }

    /// Writes one leaf (compressed when that fits a page, otherwise split until it does).
    private mutating func writeLeaf(_ node: Node, into builder: inout LevelBuilder, compressed: Bool) throws {
        let id = nextPage
        if compressed, let image = CompressedLeaf.encode(node, id: id, txid: Self.txid, pageSize: pageSize) {
            let stored = Int(image.withUnsafeBytes { $0.u32(CompressedLeaf.lengthOffset) })
            ratio = max(0.05, Double(stored) / Double(node.byteSize))
            try writePage(image)
            report.compressedLeaves += 1
        } else if node.byteSize <= pageSize {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
            defer { buffer.deallocate() }
            node.serialize(into: buffer, id: id, txid: Self.txid)
            try writePage(Array(buffer))
        } else {
            // Did not compress into one page: halve and retry.
            if compressed { ratio = min(1, ratio * 1.25) }
            let half = node.count / 2
            guard half > 0 else { throw ArborError.internalInconsistency("a single entry does not fit a leaf") }
            for range in [0..<half, half..<node.count] {
                let part = Node(level: 0)
                part.keys = node.keys.extracting(range)
                part.values = node.values.extracting(range)
                part.recomputeSize()
                try writeLeaf(part, into: &builder, compressed: compressed)
            }
            return
        }
        report.leaves += 1
        let separator = builder.leaves.last.map { shortestSeparator($0.lastKey, node.keys[0]) } ?? []
        builder.leaves.append((separator, id, node.keys[node.count - 1]))
    }

    /// Builds the branch levels above the leaves; returns the tree's root and depth.
    private mutating func finishTree(_ builder: LevelBuilder, count: UInt64) throws -> TreeInfo {
        var level = builder.leaves.map { ($0.separator, $0.page) }
        guard !level.isEmpty else { return .empty }
        var depth = 1
        while level.count > 1 {
            var parents: [([UInt8], PageID)] = []
            var index = 0
            while index < level.count {
                let node = Node(level: depth)
                node.children = [level[index].1]
                node.recomputeSize()
                let firstSeparator = level[index].0
                index += 1
                while index < level.count,
                      node.byteSize + branchCellSize(keyLength: level[index].0.count) <= pageSize {
                    node.insertBranch(key: level[index].0, rightChild: level[index].1, at: node.count)
                    index += 1
                }
                let id = nextPage
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
                defer { buffer.deallocate() }
                node.serialize(into: buffer, id: id, txid: Self.txid)
                try writePage(Array(buffer))
                parents.append((firstSeparator, id))
            }
            level = parents
            depth += 1
        }
        return TreeInfo(root: level[0].1, depth: depth, count: count)
    }

    private mutating func writeOverflow(_ value: [UInt8]) throws -> OverflowRef {
        let compressed = LZ4.compress(value)
        let stored = compressed ?? value
        let payload = pageSize - PageHeader.size
        let pages = max(1, (stored.count + payload - 1) / payload)
        let first = nextPage
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        defer { buffer.deallocate() }
        for index in 0..<pages {
            let id = nextPage
            let start = index * payload
            stored.withUnsafeBytes { source in
                let chunk = UnsafeRawBufferPointer(rebasing: source[start..<min(start + payload, stored.count)])
                buildOverflowPage(buffer, id: id, txid: Self.txid, payload: chunk, next: index + 1 < pages ? id + 1 : 0)
            }
            try writePage(Array(buffer))
        }
        return OverflowRef(firstPage: first, rawLength: value.count, storedLength: stored.count, compressed: compressed != nil)
    }

    private mutating func writePage(_ image: [UInt8]) throws {
        try image.withUnsafeBytes { try file.write($0, at: UInt64(nextPage) * UInt64(pageSize)) }
        guard nextPage < PageID.max else { throw ArborError.internalInconsistency("page numbers exhausted") }
        nextPage += 1
    }
}
