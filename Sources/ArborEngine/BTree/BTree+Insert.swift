extension BTree {
    /// Inserts or replaces `key` in the tree of `box`; returns the replaced value.
    func insert(_ key: [UInt8], _ value: LeafValue) throws -> LeafValue? {
        if box.info.root == 0 {
            let (id, node) = try pages.newNode(level: 0)
            node.insertLeaf(key: key, value: value, at: 0)
            box.info = TreeInfo(root: id, depth: 1, count: 1)
            return nil
        }
        if let hint = box.leafHint {
            if hint.covers(key), pages.changedNode(hint.id) === hint.node {
                var replaced: LeafValue?
                if insertIfItFits(hint.node, key, value, replaced: &replaced) {
                    box.leafHintMisses = 0
                    return replaced
                }
            }
            box.leafHintMisses += 1
        }
        box.leafHint = nil
        let path = try touchPath(key)
        guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
        let (index, found) = leaf.search(key)
        let old = place(key, value, in: leaf, at: index, found: found)
        let fits = leaf.byteSize <= pageSize
        try rebalance(path, appendedAtEnd: !found && index == leaf.count - 1, repairUnderflow: false)
        // Random keys miss every hint: after a few misses, build one only every 32nd insert,
        // enough to notice when the keys turn sequential again.
        if fits, let entry = path.last {
            if box.leafHintMisses < 4 || box.skippedLeafHints >= 32 {
                box.leafHint = hint(path: path, leaf: entry)
                box.skippedLeafHints = 0
            } else {
                box.skippedLeafHints += 1
            }
        }
        return old
    }

    /// Inserts into `leaf` (the hinted leaf covering `key`) when the result fits the page,
    /// setting `replaced` to the value it replaced; false, changing nothing, when it would not
    /// fit (the caller then takes the path from the root).
    private func insertIfItFits(_ leaf: Node, _ key: [UInt8], _ value: LeafValue, replaced: inout LeafValue?) -> Bool {
        let (index, found) = leaf.search(key)
        let growth = found ? value.cellBytes - leaf.valueCellBytes(index) : leafCellSize(keyLength: key.count, value: value)
        guard leaf.byteSize + growth <= pageSize else { return false }
        replaced = place(key, value, in: leaf, at: index, found: found)
        return true
    }

    /// Puts `value` under `key` at `index` of `leaf` (replacing the value there when `found`);
    /// returns the replaced value.
    private func place(_ key: [UInt8], _ value: LeafValue, in leaf: Node, at index: Int, found: Bool) -> LeafValue? {
        if found {
            let old = leaf.value(at: index)
            leaf.replaceLeafValue(at: index, with: value)
            return old
        }
        leaf.insertLeaf(key: key, value: value, at: index)
        box.info.count += 1
        return nil
    }

    /// The hint for the leaf at the end of `path`: its range from the separators around it at
    /// each level, the innermost bound winning.
    private func hint(path: [PathEntry], leaf: PathEntry) -> LeafHint? {
        var lower: [UInt8]?, upper: [UInt8]?
        for level in 1..<max(path.count, 1) {
            let parent = path[level - 1].node, child = path[level].childIndex
            guard child >= 0, child <= parent.count else { return nil }
            if child > 0 { lower = parent.key(at: child - 1) }
            if child < parent.count { upper = parent.key(at: child) }
        }
        return LeafHint(id: leaf.id, node: leaf.node, lower: lower, upper: upper)
    }

    /// Copies (if needed) every node from the root to the leaf covering `key`.
    func touchPath(_ key: [UInt8]) throws -> [PathEntry] {
        var (id, node) = try pages.touch(box.info.root, level: box.info.depth - 1)
        box.info.root = id
        var path: [PathEntry] = []
        path.reserveCapacity(box.info.depth)  // before the first append: a literal would be reallocated
        path.append(PathEntry(id: id, node: node, childIndex: -1))
        while node.level > 0 {
            let index = node.childIndex(for: key)
            let (childID, child) = try pages.touch(node.child(at: index), level: node.level - 1)
            node.setChild(childID, at: index)
            path.append(PathEntry(id: childID, node: child, childIndex: index))
            (id, node) = (childID, child)
        }
        return path
    }
}
