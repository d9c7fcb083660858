/// A read transaction: a consistent snapshot of every tree as of one committed transaction.
///
/// Confined to one thread at a time (not `Sendable`). Close it when done (`close()` or deinit):
/// while it is open, the pages of its snapshot cannot be reused.
public class Transaction {
    let database: Database
    var meta: Meta
    var isClosed = false
    var openTrees: [String: TreeBox] = [:]
    /// The last few trees asked for by name, most recent first: a fetch alternates between a
    /// couple of trees per row, and comparing a name with the same string costs less than
    /// hashing it. Inline, not an array: a one-fetch transaction would allocate one. Unchecked:
    /// a transaction is confined to one thread, and its accesses never overlap.
    @exclusivity(unchecked) private var recentTrees: (TreeBox?, TreeBox?, TreeBox?, TreeBox?) = (nil, nil, nil, nil)
    /// Made when first needed: a fetch's transaction finds its trees in the database's cache
    /// of catalog records and never reads the catalog (one allocation less per fetch).
    private(set) lazy var catalogBox = TreeBox(name: "", info: meta.catalog)
    /// Branch pages this read transaction visited lately, direct-mapped by page number: the
    /// roots and branches every lookup passes through are found without the shared cache's
    /// lock, hashing and LRU update. Leaves are not kept: point lookups rarely meet the same
    /// leaf twice (a cursor keeps the leaf it walks), and each one pushed a branch out of its
    /// slot. Snapshot pages never change while the transaction is open. Nil for a write
    /// transaction, whose pages can be rewritten under the same number.
    private let recentPages: UnsafeMutablePointer<Page?>?
    private static let recentPageSlots = 64
    /// Which slots of `recentPages` hold a page (bit `i`: slot `i`): closing empties only those.
    private var usedPageSlots: UInt64 = 0

    init(database: Database, meta: Meta, cachesRecentPages: Bool = true) {
        self.database = database
        self.meta = meta
        if cachesRecentPages {
            let slots = UnsafeMutablePointer<Page?>.allocate(capacity: Self.recentPageSlots)
            slots.initialize(repeating: nil, count: Self.recentPageSlots)
            recentPages = slots
        } else {
            recentPages = nil
        }
    }

    deinit {
        if !isClosed { release() }
        if let recentPages {
            // Only the slots used: a short transaction (one fetch) fills a handful of 64, and
            // checking every slot for nil cost more than the fetch's own lookups.
            var used = usedPageSlots
            while used != 0 {
                let index = used.trailingZeroBitCount
                (recentPages + index).deinitialize(count: 1)
                used &= used - 1
            }
            recentPages.deallocate()
        }
    }

    /// The committed transaction id this snapshot shows (for a write transaction, the one it builds on).
    public var snapshotID: UInt64 { meta.txid }

    /// Whether this transaction may modify trees.
    public var isWritable: Bool { false }

    /// Ends the transaction, releasing its snapshot. Idempotent.
    public func close() {
        guard !isClosed else { return }
        release()
    }

    func release() {
        isClosed = true
        database.registry.unregister(meta.txid)
    }

    func ensureOpen() throws {
        if isClosed { throw ArborError.transactionClosed }
    }

    // MARK: Trees

    /// The tree named `name`.
    /// - Throws: `treeNotFound` when the catalog has no such tree; `corruptPage` on a damaged catalog.
    public func tree(_ name: String) throws -> Tree {
        try ensureOpen()
        if let box = recentTree(named: name) { return Tree(transaction: self, box: box) }
        // A write transaction's catalog changes under it: only read transactions share records.
        // They ask the database's cache first: a fetch's transaction is new, so its own map
        // would only cost a second hash of the name.
        let shares = !isWritable
        if shares, let cached = database.cachedTreeInfo(name, snapshot: meta.txid) {
            // Found again through the recent trees or the database's cache: a read
            // transaction's trees never change, so one box or another makes no difference.
            let box = TreeBox(name: name, info: cached)
            remember(box)
            return Tree(transaction: self, box: box)
        }
        if let box = openTrees[name], !box.isDropped {
            remember(box)
            return Tree(transaction: self, box: box)
        }
        guard let record = try get(catalogBox, Array(name.utf8)) else { throw ArborError.treeNotFound(name) }
        let info = try TreeInfo.decode(record, context: "catalog entry \"\(name)\"")
        try validate(info, name: name)
        if shares { database.cacheTreeInfo(info, name: name, snapshot: meta.txid) }
        let box = TreeBox(name: name, info: info)
        openTrees[name] = box
        remember(box)
        return Tree(transaction: self, box: box)
    }

    /// The box of tree `name` among the recent trees, unless dropped.
    @inline(__always)
    private func recentTree(named name: String) -> TreeBox? {
        if let box = recentTrees.0, !box.isDropped, box.name == name { return box }
        if let box = recentTrees.1, !box.isDropped, box.name == name { return box }
        if let box = recentTrees.2, !box.isDropped, box.name == name { return box }
        if let box = recentTrees.3, !box.isDropped, box.name == name { return box }
        return nil
    }

    private func remember(_ box: TreeBox) {
        recentTrees = (box, recentTrees.0, recentTrees.1, recentTrees.2)
    }

    /// Whether a tree named `name` exists.
    public func hasTree(_ name: String) throws -> Bool {
        try ensureOpen()
        if let box = openTrees[name] { return !box.isDropped }
        return try get(catalogBox, Array(name.utf8)) != nil
    }

    /// The names of all trees, in byte order. O(number of trees).
    public func treeNames() throws -> [String] {
        try ensureOpen()
        var names: [String] = []
        let cursor = Cursor(transaction: self, box: catalogBox)
        var more = try cursor.first()
        while more {
            if let key = cursor.key { names.append(String(decoding: key, as: UTF8.self)) }
            more = try cursor.next()
        }
        return names
    }

    /// Statistics of this snapshot.
    public func info() throws -> DatabaseInfo {
        var trees: [(String, TreeInfo)] = []
        for name in try treeNames() { trees.append((name, try tree(name).info)) }
        return DatabaseInfo(
            formatVersion: meta.version, pageSize: meta.pageSize, transactionID: meta.txid,
            pageCount: meta.pageCount, freePages: meta.freePages, fileSize: try database.file.size(),
            isCompressed: meta.isCompressed, trees: trees)
    }

    func validate(_ info: TreeInfo, name: String) throws {
        let valid = info.root == 0 ? info.depth == 0 : (info.depth >= 1 && info.depth <= Limits.maxTreeDepth)
        guard valid, info.root < meta.pageCount, info.root != 1 else {
            throw ArborError.corruptPage(page: 0, detail: "catalog entry \"\(name)\" has root \(info.root) and depth \(info.depth)")
        }
    }

    // MARK: Node access (overridden by WriteTransaction to see its own changes)

    /// The node at `id`, which must be at `level`.
    func node(_ id: PageID, level: Int) throws -> NodeRef {
        if let recent = recentPage(id) { return try checkedNode(recent, level: level) }
        let page = try database.loadPage(id, pageCount: meta.pageCount)
        if level > 0 { rememberRecent(page) }
        return try checkedNode(page, level: level)
    }

    /// The node at `id` if it is in memory (this transaction's recent pages or the page cache),
    /// else nil: nothing is read from the file. A write transaction sees everything it would
    /// read as in memory (see `WriteTransaction`).
    /// - Throws: `corruptPage` when the page is not a node at `level`.
    func nodeInMemory(_ id: PageID, level: Int) throws -> NodeRef? {
        if let recent = recentPage(id) { return try checkedNode(recent, level: level) }
        guard let page = try database.cachedPage(id, pageCount: meta.pageCount) else { return nil }
        if level > 0 { rememberRecent(page) }
        return try checkedNode(page, level: level)
    }

    /// The page at `id` in this transaction's recent-page slots, if it is there.
    @inline(__always)
    private func recentPage(_ id: PageID) -> Page? {
        guard let recent = recentPages?[Int(id % UInt32(Self.recentPageSlots))], recent.id == id else { return nil }
        return recent
    }

    /// Keeps `page` in its recent-page slot (replacing the page there).
    @inline(__always)
    private func rememberRecent(_ page: Page) {
        guard let recentPages else { return }
        let slotIndex = Int(page.id % UInt32(Self.recentPageSlots))
        recentPages[slotIndex] = page
        usedPageSlots |= 1 << UInt64(slotIndex)
    }

    /// `page` as a node, checked to be a leaf or branch at `level`.
    @inline(__always)
    private func checkedNode(_ page: consuming Page, level: Int) throws -> NodeRef {
        guard page.type == (level == 0 ? .leaf : .branch), page.level == level else {
            throw ArborError.corruptPage(page: page.id, detail: "expected a \(level == 0 ? "leaf" : "branch") at level \(level), found \(page.type) at level \(page.level)")
        }
        return .page(page)
    }

    /// `body` over the value stored under `key` in the tree of `box` where it lies, if every
    /// page on the way is in memory (`nodeInMemory`): `.notInMemory` when one is not (nothing
    /// is read from the file but what building the tree's directory reads; see
    /// `Database.leafDirectory`), `.absent` when the key is not in the tree.
    func withValueInMemory<R>(_ box: TreeBox, _ key: UnsafeRawBufferPointer,
                              _ body: (UnsafeRawBufferPointer) throws -> R) throws -> LookupInMemory<R> {
        let info = box.info
        guard info.root != 0 else { return .absent }
        if let directory = try leafDirectory(box) {
            guard let leaf = try nodeInMemory(directory.leaf(for: key), level: 0) else { return .notInMemory }
            guard let index = Self.index(of: key, in: leaf) else { return .absent }
            return .found(try withEntry(leaf, index) { _, value in try body(value) })
        }
        guard var ref = try nodeInMemory(info.root, level: info.depth - 1) else { return .notInMemory }
        var level = info.depth - 1
        // Bounded by the depth, which the catalog check limits.
        while level > 0 {
            level -= 1
            guard let child = try nodeInMemory(ref.child(ref.childIndex(for: key)), level: level) else { return .notInMemory }
            ref = child
        }
        guard let index = Self.index(of: key, in: ref) else { return .absent }
        return .found(try withEntry(ref, index) { _, value in try body(value) })
    }

    /// Lookups a read transaction makes in one tree (`withValueInMemory`, `leaf(covering:in:)`)
    /// before it asks for the tree's leaf directory: a fetch that looks up a few rows never pays
    /// for one.
    static let leafDirectoryThreshold = 64

    /// The leaf directory `withValueInMemory` and `leaf(covering:in:)` use for the tree of `box`,
    /// asked for each time this read transaction has made `leafDirectoryThreshold` more lookups
    /// in it; nil for a tree of fewer than three levels (see `LeafDirectory`) and for a write
    /// transaction, whose trees change under it.
    @inline(__always)
    private func leafDirectory(_ box: TreeBox) throws -> LeafDirectory? {
        if let directory = box.leafDirectory { return directory }
        guard box.info.depth >= 3, !isWritable else { return nil }
        box.lookupsSinceAsked += 1
        guard box.lookupsSinceAsked > Self.leafDirectoryThreshold else { return nil }
        // Asked again after as many lookups more: a store's kept transaction keeps its trees'
        // boxes from read to read, and a box that asked once would never see the directory
        // the database builds at the third request.
        box.lookupsSinceAsked = 0
        box.leafDirectory = try database.leafDirectory(for: box.info, in: self)
        return box.leafDirectory
    }

    /// An overflow page of a value.
    func overflowPage(_ id: PageID) throws -> Page {
        let page = try database.loadPage(id, pageCount: meta.pageCount, useCache: false)
        guard page.type == .overflow else {
            throw ArborError.corruptPage(page: id, detail: "expected an overflow page, found \(page.type)")
        }
        return page
    }

    // MARK: Point lookups

    /// The value stored under `key` in the tree of `box`, or nil.
    func get(_ box: TreeBox, _ key: [UInt8]) throws -> [UInt8]? {
        guard let (leaf, index) = try findLeaf(box, key) else { return nil }
        return try resolve(leaf.leafValue(index))
    }

    /// `body` over the value for `key` where it lies (in its page when inline), or nil.
    func withValue<R>(_ box: TreeBox, _ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let (leaf, index) = try findLeaf(box, key) else { return nil }
        return try withEntry(leaf, index) { _, value in try body(value) }
    }

    /// Calls `body` with entry `index` of `leaf`: in place in a page (an overflowing value read
    /// into a copy), from the node of a write transaction.
    func withEntry<R>(_ leaf: NodeRef, _ index: Int, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R) throws -> R {
        switch leaf {
        case .page(let page):
            return try page.withLeafEntry(index) { key, inline in
                if let inline { return try body(key, inline) }
                return try resolve(page.leafValue(index)).withUnsafeBytes { try body(key, $0) }
            }
        case .node:
            let value = try resolve(leaf.leafValue(index))
            return try leaf.withKey(index) { key in try value.withUnsafeBytes { try body(key, $0) } }
        }
    }

    /// The leaf whose key range covers `key` in the tree of `box`: found in the tree's leaf
    /// directory once this read transaction has made enough lookups in it (one binary search
    /// instead of a search in each branch page and a page-cache probe for each: a SUBQUERY's
    /// probe of a compound index per candidate), else by the walk from the root.
    func leaf(covering key: UnsafeRawBufferPointer, in box: TreeBox) throws -> NodeRef {
        if let directory = try leafDirectory(box) { return try node(directory.leaf(for: key), level: 0) }
        return try descendedLeaf(covering: key, in: box.info)
    }

    /// The leaf whose key range covers `key`: the walk from the root through the branches.
    func descendedLeaf(covering key: UnsafeRawBufferPointer, in info: TreeInfo) throws -> NodeRef {
        var id = info.root
        var level = info.depth - 1
        while level > 0 {
            let ref = try node(id, level: level)
            id = ref.child(ref.childIndex(for: key))
            level -= 1
        }
        return try node(id, level: 0)
    }

    /// See `Tree.withFirstEntry(in:_:)`. Descends to the leaf where the range's lower bound
    /// would be; when the bound lies past that leaf's last key, the range may start in the next
    /// leaf, and a cursor (which keeps the path to step there) finds it.
    func withFirstEntry(_ box: TreeBox, in range: KeyRange,
                        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        guard box.info.root != 0 else { return nil }
        guard let lower = range.lower else { return try firstEntryThroughCursor(box, in: range, body) }
        return try lower.key.withUnsafeBytes { lowerBytes in
            guard let upper = range.upper else {
                return try withFirstEntry(box, from: lowerBytes, inclusive: lower.inclusive, to: nil, inclusive: false, body)
            }
            return try upper.key.withUnsafeBytes { upperBytes in
                try withFirstEntry(box, from: lowerBytes, inclusive: lower.inclusive, to: upperBytes, inclusive: upper.inclusive, body)
            }
        }
    }

    /// `withFirstEntry(_:in:_:)` for a range given by byte bounds in place (`upper` nil: no
    /// upper bound): the leaf where `lower` falls (`leaf(covering:in:)`); the cursor scan only
    /// when the range starts past that leaf's last key.
    func withFirstEntry(_ box: TreeBox, from lower: UnsafeRawBufferPointer, inclusive lowerInclusive: Bool,
                        to upper: UnsafeRawBufferPointer?, inclusive upperInclusive: Bool,
                        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        let info = box.info
        guard info.root != 0 else { return nil }
        let leaf = try leaf(covering: lower, in: box)
        var index = leaf.lowerBound(lower)
        if index < leaf.count, !lowerInclusive, leaf.withKey(index, { compareBytes($0, lower) == 0 }) { index += 1 }
        guard index < leaf.count else {
            let range = KeyRange(lower: .init(Array(lower), inclusive: lowerInclusive), upper: upper.map { .init(Array($0), inclusive: upperInclusive) })
            return try firstEntryThroughCursor(box, in: range, body)
        }
        if let upper {
            let order = leaf.withKey(index) { compareBytes($0, upper) }
            guard order < 0 || (order == 0 && upperInclusive) else { return nil }
        }
        return try withEntry(leaf, index, body)
    }

    /// The first entry of `range` through a cursor scan, which keeps the path to step into the
    /// next leaf.
    private func firstEntryThroughCursor(_ box: TreeBox, in range: KeyRange,
                                         _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        var result: Bool?
        try Cursor(transaction: self, box: box).scan(in: range, reverse: false) { key, value in
            result = try body(key, value)
            return false
        }
        return result
    }

    /// The leaf and index holding exactly `key`, or nil.
    func findLeaf(_ box: TreeBox, _ key: [UInt8]) throws -> (NodeRef, Int)? {
        try key.withUnsafeBytes { try findLeaf(box, $0) }
    }

    func findLeaf(_ box: TreeBox, _ key: UnsafeRawBufferPointer) throws -> (NodeRef, Int)? {
        let info = box.info
        guard info.root != 0 else { return nil }
        let leaf = try leaf(covering: key, in: box)
        return Self.index(of: key, in: leaf).map { (leaf, $0) }
    }

    /// The index of exactly `key` in `leaf`, or nil.
    @inline(__always)
    static func index(of key: UnsafeRawBufferPointer, in leaf: NodeRef) -> Int? {
        let index = leaf.lowerBound(key)
        guard index < leaf.count, leaf.withKey(index, { compareBytes($0, key) }) == 0 else { return nil }
        return index
    }

    /// The bytes of a leaf value, reading its overflow chain when needed.
    func resolve(_ value: LeafValue) throws -> [UInt8] {
        switch value {
        case .inline(let bytes): return bytes
        case .overflow(let ref): return try readOverflow(ref)
        }
    }

    func readOverflow(_ ref: OverflowRef) throws -> [UInt8] {
        var stored: [UInt8] = []
        stored.reserveCapacity(ref.storedLength)
        var id = ref.firstPage
        let pages = ref.pageCount(pageSize: meta.pageSize)
        // Bounded by the page count the reference implies, so a cyclic chain cannot loop.
        for index in 0..<pages {
            let page = try overflowPage(id)
            stored.append(contentsOf: page.overflowPayload)
            id = page.extra
            if index == pages - 1, id != 0 {
                throw ArborError.corruptPage(page: page.id, detail: "overflow chain continues past its recorded length")
            }
        }
        guard stored.count == ref.storedLength else {
            throw ArborError.corruptPage(page: ref.firstPage, detail: "overflow chain holds \(stored.count) bytes, expected \(ref.storedLength)")
        }
        guard ref.compressed else {
            guard ref.rawLength == ref.storedLength else {
                throw ArborError.corruptPage(page: ref.firstPage, detail: "uncompressed overflow value has inconsistent lengths")
            }
            return stored
        }
        return try LZ4.decompress(stored, originalLength: ref.rawLength, page: ref.firstPage)
    }
}
