/// A tree node as a reader sees it: a clean page read in place, or a node modified by the
/// current write transaction. Lets search and cursors serve both without copying.
enum NodeRef {
    case page(Page)
    case node(Node)

    var level: Int {
        switch self {
        case .page(let page): return page.level
        case .node(let node): return node.level
        }
    }

    /// Keys in a leaf, separators in a branch.
    var count: Int {
        switch self {
        case .page(let page): return page.count
        case .node(let node): return node.count
        }
    }

    @inline(__always) func withKey<R>(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch self {
        case .page(let page): return try page.withKey(index, body)
        case .node(let node): return try node.keys.withBytes(index, body)
        }
    }

    func key(_ index: Int) -> [UInt8] {
        switch self {
        case .page(let page): return page.key(index)
        case .node(let node): return node.keys[index]
        }
    }

    func leafValue(_ index: Int) -> LeafValue {
        switch self {
        case .page(let page): return page.leafValue(index)
        case .node(let node): return node.values[index]
        }
    }

    func child(_ index: Int) -> PageID {
        switch self {
        case .page(let page): return page.child(index)
        case .node(let node): return node.children[index]
        }
    }

    /// First leaf index whose key is >= `key`.
    func lowerBound(_ key: UnsafeRawBufferPointer, prefetching: Bool = true) -> Int {
        switch self {
        case .page(let page): return page.lowerBound(key, prefetching: prefetching)
        case .node(let node): return node.keys.lowerBound(key)
        }
    }

    /// The child index of a branch covering `key`.
    func childIndex(for key: UnsafeRawBufferPointer) -> Int {
        switch self {
        case .page(let page): return page.childIndex(for: key)
        case .node(let node): return node.keys.upperBound(key)
        }
    }
}

/// The state of one open tree inside a transaction, shared by its handles and cursors.
final class TreeBox {
    let name: String
    /// Read and updated by every insert (exempt from the runtime exclusivity check as `Node`'s
    /// storage is: one transaction, one thread, no access outliving a call).
    @exclusivity(unchecked) var info: TreeInfo
    /// Bumped on every modification so cursors can detect that they are stale.
    var version = 0
    var isDirty = false
    var isDropped = false
    /// A read transaction's leaf directory for this tree (see `Transaction.leafDirectory`),
    /// asked for each time the transaction has made `leafDirectoryThreshold` more lookups.
    var leafDirectory: LeafDirectory?
    /// Lookups since the directory was last asked for.
    var lookupsSinceAsked = 0
    /// The leaf this tree's last insert changed without restructuring, for the next insert
    /// (see `LeafHint`); cleared by every split, merge or redistribution. Write transactions only.
    @exclusivity(unchecked) var leafHint: LeafHint?
    /// Inserts in a row whose hint did not cover their key (see `BTree.insert`).
    @exclusivity(unchecked) var leafHintMisses = 0
    @exclusivity(unchecked) var skippedLeafHints = 0

    init(name: String, info: TreeInfo) {
        self.name = name
        self.info = info
    }
}
