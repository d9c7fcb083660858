/// The single write transaction: sees its own changes, and publishes them atomically on `commit`.
///
/// Modified pages are copied (copy-on-write) to newly allocated page numbers, so readers of older
/// snapshots are never disturbed. `abort` (or deinit without commit) discards everything.
public final class WriteTransaction: Transaction {
    /// Where the commit writes its meta page and which freed pages it may reuse.
    var plan: CommitPlan
    /// The commit waits for a group sync it will lead or share (see `Database+GroupCommit.swift`).
    var leadsGroupSync = false
    /// The id this transaction commits as.
    let txid: UInt64
    /// Next page number at the end of the file.
    var pageCount: UInt32
    /// Modified tree nodes by (new) page number. Read on every step of every insert's path: like
    /// `Node`'s storage, exempt from the runtime's exclusivity check (a transaction is used by
    /// one thread, and no access to it outlives a call).
    @exclusivity(unchecked) var dirty: [PageID: Node] = [:]
    /// Pages allocated by this transaction whose image is already on disk (spilled leaves, overflow pages).
    var writtenEarly: Set<PageID> = []
    /// The header checksum of every page image this transaction wrote, by page: the meta page
    /// lists them (see `CommitPlan`).
    var writtenChecksums: [PageID: UInt32] = [:]
    /// The pages of the nodes the commit wrote, in page order (see `writeDirtyNodes`).
    var committedNodes: [PageID] = []
    /// Every page allocated by this transaction and not freed again.
    var allocated: Set<PageID> = []
    /// Free pages this transaction may use.
    var reusable: [PageID] = []
    /// Pages this transaction stopped using that older snapshots may still reach.
    var pendingFree: [FreedPage] = []
    /// Free pages the meta page lists itself (see `Meta.inlineFree`): those of the snapshot not
    /// taken yet, then, once the freelist is written, those of the new meta page.
    var inlineFree: [InlineFreePage]
    var inlineFreeChecked = false
    /// The freelist entries known pinned by protected snapshots: the next search for reusable
    /// pages continues after them (see `loadFreelistEntry`).
    var pinnedFreelist: FreelistHint?
    /// Pages listed in the freelist tree.
    var freePages: UInt64
    let freelistBox: TreeBox
    var loadingFreelist = false
    var committing = false
    /// Set during the last rounds of the freelist fixed point: allocate only at the end of the file.
    var monotoneAllocation = false
    /// Set when an operation failed half-way; the transaction can then only be aborted.
    var failed = false

    init(database: Database, meta: Meta, plan: CommitPlan) {
        self.plan = plan
        self.txid = meta.txid + 1
        self.pageCount = meta.pageCount
        self.freePages = meta.freePages
        self.freelistBox = TreeBox(name: "", info: meta.freelist)
        self.inlineFree = meta.inlineFree
        super.init(database: database, meta: meta, cachesRecentPages: false)
    }

    public override var isWritable: Bool { true }

    /// The transaction id this transaction's commit will carry (one above its snapshot).
    public var transactionID: UInt64 { txid }

    var pageSize: Int { meta.pageSize }

    // MARK: Lifecycle

    /// Discards every change and releases the writer lock. Idempotent.
    public func abort() {
        guard !isClosed else { return }
        release()
    }

    override func release() {
        isClosed = true
        dirty.removeAll()
        database.releaseWriter(leadsGroupSync: leadsGroupSync)
    }

    /// Runs a mutation; if it throws, the transaction is marked failed and can only be aborted.
    func mutate<R>(_ body: () throws -> R) throws -> R {
        try ensureOpen()
        guard !failed else { throw ArborError.internalInconsistency("an earlier operation of this transaction failed; abort it") }
        do { return try body() } catch {
            failed = true
            throw error
        }
    }

    // MARK: Trees

    /// Creates an empty tree named `name`.
    /// - Throws: `treeExists`, `invalidTreeName`.
    @discardableResult
    public func createTree(_ name: String) throws -> Tree {
        try validateTreeName(name)
        guard try !hasTree(name) else { throw ArborError.treeExists(name) }
        return try mutate {
            let box = TreeBox(name: name, info: .empty)
            box.isDirty = true
            openTrees[name] = box
            _ = try BTree(self, catalogBox).insert(Array(name.utf8), .inline(TreeInfo.empty.encoded()))
            return Tree(transaction: self, box: box)
        }
    }

    /// The tree named `name`, created when missing.
    public func createTreeIfMissing(_ name: String) throws -> Tree {
        try hasTree(name) ? try tree(name) : try createTree(name)
    }

    /// Deletes the tree named `name` and frees all its pages. O(pages of the tree).
    /// - Throws: `treeNotFound`.
    public func dropTree(_ name: String) throws {
        let handle = try tree(name)
        try mutate {
            let box = handle.box
            if box.info.root != 0 { try freeSubtree(box.info.root, level: box.info.depth - 1) }
            box.info = .empty
            box.isDropped = true
            box.version += 1
            openTrees[name] = nil
            _ = try BTree(self, catalogBox).remove(Array(name.utf8))
        }
    }

    func validateTreeName(_ name: String) throws {
        let length = name.utf8.count
        guard length > 0, length <= Limits.maxKeyLength(pageSize: pageSize) else { throw ArborError.invalidTreeName(name) }
    }

    // MARK: Entry points of the public Tree API

    func put(_ box: TreeBox, _ key: [UInt8], _ value: [UInt8]) throws {
        let maxKey = Limits.maxKeyLength(pageSize: pageSize)
        guard !key.isEmpty, key.count <= maxKey else { throw ArborError.keyTooLarge(length: key.count, maximum: maxKey) }
        guard value.count <= Limits.maxValueLength else {
            throw ArborError.valueTooLarge(length: value.count, maximum: Limits.maxValueLength)
        }
        guard !box.isDropped else { throw ArborError.treeNotFound(box.name) }
        try mutate {
            try spillIfNeeded()
            let stored: LeafValue = value.count > Limits.inlineValueLimit(pageSize: pageSize)
                ? .overflow(try writeOverflow(value)) : .inline(value)
            if let old = try BTree(self, box).insert(key, stored), case .overflow(let ref) = old { try freeOverflow(ref) }
            box.version += 1
            box.isDirty = true
        }
    }

    func delete(_ box: TreeBox, _ key: [UInt8]) throws -> Bool {
        guard !box.isDropped else { throw ArborError.treeNotFound(box.name) }
        // Look first so that deleting a missing key copies no pages.
        guard try findLeaf(box, key) != nil else { return false }
        return try mutate {
            try spillIfNeeded()
            guard let old = try BTree(self, box).remove(key) else { return false }
            if case .overflow(let ref) = old { try freeOverflow(ref) }
            box.version += 1
            box.isDirty = true
            return true
        }
    }

    // MARK: Node access

    override func node(_ id: PageID, level: Int) throws -> NodeRef {
        if let node = dirty[id] {
            guard node.level == level else {
                throw ArborError.internalInconsistency("dirty page \(id) is at level \(node.level), expected \(level)")
            }
            return .node(node)
        }
        if writtenEarly.contains(id) {
            let page = try database.readPageFromDisk(id)
            guard page.type == (level == 0 ? .leaf : .branch), page.level == level else {
                throw ArborError.corruptPage(page: id, detail: "spilled page has level \(page.level), expected \(level)")
            }
            return .page(page)
        }
        return try super.node(id, level: level)
    }

    /// A writer reads its own changes and spilled pages as `node` does: all count as in memory.
    override func nodeInMemory(_ id: PageID, level: Int) throws -> NodeRef? {
        try node(id, level: level)
    }

    override func overflowPage(_ id: PageID) throws -> Page {
        guard writtenEarly.contains(id) else { return try super.overflowPage(id) }
        let page = try database.readPageFromDisk(id)
        guard page.type == .overflow else {
            throw ArborError.corruptPage(page: id, detail: "expected an overflow page, found \(page.type)")
        }
        return page
    }

    /// Makes the node at `id` writable: returns it if this transaction already owns it, otherwise
    /// copies it to a newly allocated page and frees the old one (copy-on-write).
    func touch(_ id: PageID, level: Int) throws -> (PageID, Node) {
        if let node = dirty[id] {
            guard node.level == level else {
                throw ArborError.internalInconsistency("dirty page \(id) is at level \(node.level), expected \(level)")
            }
            return (id, node)
        }
        guard case .page(let page) = try node(id, level: level) else {
            throw ArborError.internalInconsistency("page \(id) is neither dirty nor clean")
        }
        let node = Node(page: page, pageSize: pageSize)
        if writtenEarly.contains(id) {
            // Spilled earlier by this transaction: no reader can see it, so modify it in place.
            writtenEarly.remove(id)
            dirty[id] = node
            return (id, node)
        }
        let newID = try allocate()
        dirty[newID] = node
        try free(id, birth: page.txid)
        return (newID, node)
    }

    /// A new empty node at a newly allocated page.
    func newNode(level: Int) throws -> (PageID, Node) {
        let id = try allocate()
        let node = Node(level: level)
        dirty[id] = node
        return (id, node)
    }

    // MARK: Page allocation

    /// A page number for new content: a reusable free page, else a new page at the end of the file.
    func allocate() throws -> PageID {
        if !monotoneAllocation {
            if reusable.isEmpty, !loadingFreelist, !committing { try loadFreelistEntry() }
            if let id = reusable.popLast() {
                allocated.insert(id)
                return id
            }
        }
        guard pageCount < UInt32.max else {
            throw ArborError.internalInconsistency("the file reached the maximum of \(UInt32.max) pages")
        }
        let id = pageCount
        pageCount += 1
        allocated.insert(id)
        return id
    }

    /// Releases a page this transaction no longer references. `birth` is the transaction that
    /// wrote it (from its header); 0, when unknown, protects it from every older snapshot.
    func free(_ id: PageID, birth: UInt64 = 0) throws {
        guard id >= 2, id < pageCount else {
            throw ArborError.internalInconsistency("freeing page \(id) outside 2..<\(pageCount)")
        }
        if allocated.remove(id) != nil {
            // Never visible to any reader: reusable at once.
            dirty[id] = nil
            writtenEarly.remove(id)
            if monotoneAllocation { pendingFree.append(FreedPage(page: id, birth: txid)) } else { reusable.append(id) }
        } else {
            // A header naming a transaction after the snapshot is not trusted: unknown birth.
            pendingFree.append(FreedPage(page: id, birth: birth <= meta.txid ? birth : 0))
        }
    }

    /// Frees every page of a subtree, overflow chains included.
    func freeSubtree(_ id: PageID, level: Int) throws {
        let ref = try node(id, level: level)
        if level > 0 {
            for index in 0...ref.count { try freeSubtree(ref.child(index), level: level - 1) }
        } else {
            for index in 0..<ref.count {
                if case .overflow(let overflow) = ref.leafValue(index) { try freeOverflow(overflow) }
            }
        }
        if case .page(let page) = ref { try free(id, birth: page.txid) } else { try free(id) }
    }

    // MARK: Overflow values

    /// Writes a large value to a chain of overflow pages (LZ4-compressed when smaller) and returns
    /// its reference. The pages go to disk at once, so a large import does not hold them in memory.
    func writeOverflow(_ value: [UInt8]) throws -> OverflowRef {
        let compressed = LZ4.compress(value)
        let stored = compressed ?? value
        let payload = pageSize - PageHeader.size
        let pages = max(1, (stored.count + payload - 1) / payload)
        var ids: [PageID] = []
        ids.reserveCapacity(pages)
        for _ in 0..<pages { ids.append(try allocate()) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        defer { buffer.deallocate() }
        try stored.withUnsafeBytes { source in
            for (index, id) in ids.enumerated() {
                let start = index * payload
                let chunk = UnsafeRawBufferPointer(rebasing: source[start..<min(start + payload, stored.count)])
                buildOverflowPage(buffer, id: id, txid: txid, payload: chunk, next: index + 1 < ids.count ? ids[index + 1] : 0)
                try database.file.write(UnsafeRawBufferPointer(buffer), at: UInt64(id) * UInt64(pageSize))
                writtenChecksums[id] = UnsafeRawBufferPointer(buffer).u32(PageHeader.checksum)
                writtenEarly.insert(id)
            }
        }
        return OverflowRef(firstPage: ids[0], rawLength: value.count, storedLength: stored.count, compressed: compressed != nil)
    }

    /// Frees the pages of an overflow chain. Bounded by the length the reference records.
    func freeOverflow(_ ref: OverflowRef) throws {
        var id = ref.firstPage
        let pages = ref.pageCount(pageSize: pageSize)
        for _ in 0..<pages {
            let page = try overflowPage(id)
            try free(id, birth: page.txid)
            id = page.extra
        }
    }

    // MARK: Spilling

    /// Writes modified leaves to their (unreachable) pages early when the transaction holds more
    /// than `maxDirtyBytes` of them, so a large import's memory stays bounded.
    func spillIfNeeded() throws {
        // A decoded node costs about its page in memory (its cells' bytes back to back) plus
        // 8 bytes a cell for where keys and values end: up to a quarter more with small keys.
        guard dirty.count * pageSize * 5 / 4 > database.options.maxDirtyBytes else { return }
        let leaves = dirty.filter { $0.value.isLeaf }.sorted { $0.key < $1.key }
        try writeNodes(leaves.map { ($0.key, $0.value) }) { _, _ in false }
        for (id, _) in leaves {
            dirty[id] = nil
            writtenEarly.insert(id)
        }
    }
}
