#if DEBUG
extension Tree {
    /// Checks the tree's structure as this transaction sees it, its own uncommitted changes
    /// included (debug builds only; the differential tests run it after every operation, as
    /// swift-collections' B-tree checks itself after every mutation):
    /// - the root is at level `depth - 1`, every child one level below its parent, so every
    ///   leaf is at the same depth; an empty tree has no root;
    /// - keys strictly ascend within each node, and every key of a child lies within the bounds
    ///   its parent's separators give it (the separator before it inclusive, the one after it
    ///   exclusive);
    /// - every branch has a separator (two children), every leaf but an empty root an entry;
    /// - every node this transaction changed fits its page;
    /// - the leaves hold `count` entries.
    ///
    /// The integrity check (`Database.checkIntegrity`) checks committed pages on disk; this
    /// checks the in-memory state between two operations, before anything is written.
    /// - Complexity: O(n): every node of the tree is visited.
    /// - Throws: `ArborError.internalInconsistency` naming the tree, the page and the broken rule.
    public func checkInvariants() throws {
        try transaction.ensureOpen()
        let info = box.info
        guard info.root != 0 else {
            guard info.depth == 0, info.count == 0 else { throw violation("no root, yet depth \(info.depth) and count \(info.count)") }
            return
        }
        guard info.depth >= 1 else { throw violation("root \(info.root) at depth \(info.depth)") }
        var entries: UInt64 = 0
        try checkNode(info.root, level: info.depth - 1, lower: nil, upper: nil, isRoot: true, entries: &entries)
        guard entries == info.count else { throw violation("the leaves hold \(entries) entries, the catalog says \(info.count)") }
    }

    private func checkNode(_ id: PageID, level: Int, lower: [UInt8]?, upper: [UInt8]?, isRoot: Bool,
                           entries: inout UInt64) throws {
        let node = try transaction.node(id, level: level)  // throws when the page is not a node at `level`
        if case .node(let changed) = node, changed.byteSize > transaction.meta.pageSize {
            throw violation("page \(id) holds \(changed.byteSize) bytes, more than a page")
        }
        let count = node.count
        if level == 0 {
            guard count > 0 || isRoot else { throw violation("leaf \(id) is empty") }
            entries += UInt64(count)
        } else {
            guard count > 0 else { throw violation("branch \(id) has one child") }
        }
        var previous: [UInt8]?
        for index in 0..<count {
            let key = node.key(index)
            if let previous, compareBytes(previous, key) >= 0 { throw violation("page \(id): key \(index) does not follow key \(index - 1)") }
            if let lower, compareBytes(lower, key) > 0 { throw violation("page \(id): key \(index) is below its parent's separator") }
            if let upper, compareBytes(key, upper) >= 0 { throw violation("page \(id): key \(index) is not below its parent's next separator") }
            previous = key
        }
        guard level > 0 else { return }
        for index in 0...count {
            try checkNode(node.child(index), level: level - 1,
                          lower: index == 0 ? lower : node.key(index - 1),
                          upper: index == count ? upper : node.key(index), isRoot: false, entries: &entries)
        }
    }

    private func violation(_ detail: String) -> ArborError {
        .internalInconsistency("tree \(name): \(detail)")
    }
}
#endif
