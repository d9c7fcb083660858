/// One B+tree of a write transaction and the algorithms that keep it ordered and balanced:
/// insert, remove and apply (`BTree+Insert`, `+Delete`, `+Apply`), split, merge and
/// redistribute (`+Rebalance`). It works on nodes only through `TreePages`, the transaction's
/// copy-on-write page access; the tree's root, depth, count and leaf hint live in its `TreeBox`.
///
/// Invariants (checked in debug builds by `Tree.checkInvariants()`): every leaf at the same
/// depth; keys strictly ascending within a node and between its parent's separators; no node
/// over a page; no branch with one child; no empty leaf except an empty root.
struct BTree<Pages: TreePages> {
    let pages: Pages
    let box: TreeBox

    init(_ pages: Pages, _ box: TreeBox) {
        self.pages = pages
        self.box = box
    }

    var pageSize: Int { pages.pageSize }
}

/// What the B+tree algorithms need of a write transaction: its pages, copied on write.
protocol TreePages: AnyObject {
    /// The page size in bytes; no node may grow past it.
    var pageSize: Int { get }
    /// The node at `id` as this transaction sees it, for reading.
    func node(_ id: PageID, level: Int) throws -> NodeRef
    /// The node at `id` made writable, and its page: a copy on a new page unless this
    /// transaction already owns it (the old page is freed for later snapshots).
    func touch(_ id: PageID, level: Int) throws -> (PageID, Node)
    /// A new empty node on a new page.
    func newNode(level: Int) throws -> (PageID, Node)
    /// Puts `node` on a new page.
    func place(_ node: Node) throws -> PageID
    /// This transaction's writable node at `id`, if it has one (nil once the node was freed or
    /// spilled to disk).
    func changedNode(_ id: PageID) -> Node?
    /// Frees the page of a node the tree no longer references.
    func freeNode(_ id: PageID) throws
    /// Writes a large value to overflow pages.
    func writeOverflow(_ value: [UInt8]) throws -> OverflowRef
    /// Frees the pages of an overflow value.
    func freeOverflow(_ ref: OverflowRef) throws
    /// Writes changed leaves out early when the transaction holds too many.
    func spillIfNeeded() throws
}

extension WriteTransaction: TreePages {
    func place(_ node: Node) throws -> PageID {
        let id = try allocate()
        dirty[id] = node
        return id
    }

    func changedNode(_ id: PageID) -> Node? { dirty[id] }

    func freeNode(_ id: PageID) throws { try free(id) }
}

/// One step of the root-to-leaf path of a modification.
struct PathEntry {
    let id: PageID
    let node: Node
    /// Index of this node among its parent's children (-1 for the root).
    let childIndex: Int
}

/// The dirty leaf the last insert into a tree changed, with the key range its ancestors'
/// separators assign it (`lower` inclusive, `upper` exclusive; nil: unbounded). The next insert
/// whose key falls in that range and still fits the leaf goes straight to it, skipping the walk
/// from the root: an append, or a sorted batch of index entries, mostly stays in one leaf.
/// Valid while the leaf is the transaction's dirty node for its page (a spill replaces it) and no
/// split, merge or redistribution moved a separator (`rebalance` clears the hint before any).
struct LeafHint {
    let id: PageID
    let node: Node
    let lower: [UInt8]?
    let upper: [UInt8]?

    func covers(_ key: [UInt8]) -> Bool {
        (lower.map { compareBytes($0, key) <= 0 } ?? true) && (upper.map { compareBytes(key, $0) < 0 } ?? true)
    }
}
