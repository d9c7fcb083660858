extension WriteTransaction {
    /// Moves cells between adjacent leaves `left` and `right` so both hold about half of their
    /// bytes. Returns the new separator, or nil (changing nothing) when large cells make an even
    /// split that fits two pages impossible.
    func redistributeLeaves(_ left: Node, _ right: Node) -> [UInt8]? {
        let keys = left.keys + right.keys
        let values = left.values + right.values
        let combined = Node(level: 0)
        combined.keys = keys
        combined.values = values
        combined.recomputeSize()
        let index = splitIndex(combined, packLeft: false, minIndex: 1, maxIndex: keys.count - 1)
        var leftSize = PageHeader.size
        for cell in 0..<index { leftSize += leafCellSize(keyLength: keys[cell].count, value: values[cell]) }
        guard leftSize <= pageSize, combined.byteSize - leftSize + PageHeader.size <= pageSize else { return nil }
        left.keys = Array(keys[..<index])
        left.values = Array(values[..<index])
        right.keys = Array(keys[index...])
        right.values = Array(values[index...])
        left.recomputeSize()
        right.recomputeSize()
        return shortestSeparator(keys[index - 1], keys[index])
    }

    /// Removes `key` from the tree of `box`; returns its value, or nil when absent.
    func remove(_ box: TreeBox, _ key: [UInt8]) throws -> LeafValue? {
        guard box.info.root != 0 else { return nil }
        let path = try touchPath(box, key)
        guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
        let (index, found) = leaf.search(key)
        guard found else { return nil }
        let old = leaf.values[index]
        leaf.removeLeaf(at: index)
        box.info.count -= 1
        try rebalance(box, path, appendedAtEnd: false, repairUnderflow: true)
        return old
    }

    /// Fixes a node under half a page by merging it with a sibling when both fit one page,
    /// otherwise by moving cells from the sibling so both end near half full.
    func fixUnderflow(parent: Node, childIndex: Int, node: Node, id: PageID) throws {
        guard parent.children.count >= 2 else { return }
        let useRight = childIndex + 1 < parent.children.count
        let siblingIndex = useRight ? childIndex + 1 : childIndex - 1
        let separatorIndex = useRight ? childIndex : childIndex - 1
        let (siblingID, sibling) = try touch(parent.children[siblingIndex], level: node.level)
        parent.children[siblingIndex] = siblingID
        let (left, right, rightID) = useRight ? (node, sibling, siblingID) : (sibling, node, id)
        let capacity = pageSize - PageHeader.size
        let leftCells = left.byteSize - PageHeader.size
        let rightCells = right.byteSize - PageHeader.size

        if node.isLeaf {
            if leftCells + rightCells <= capacity {
                left.keys += right.keys
                left.values += right.values
                left.recomputeSize()
                parent.removeBranch(separatorAt: separatorIndex)
                try free(rightID)
                return
            }
            // With very large cells an even split may not fit; an under-full leaf is still valid.
            guard let separator = redistributeLeaves(left, right) else { return }
            parent.replaceSeparator(at: separatorIndex, with: separator)
        } else {
            let separator = parent.keys[separatorIndex]
            if leftCells + rightCells + branchCellSize(keyLength: separator.count) <= capacity {
                left.keys += [separator] + right.keys
                left.children += right.children
                left.recomputeSize()
                parent.removeBranch(separatorAt: separatorIndex)
                try free(rightID)
                return
            }
            let keys = left.keys + [separator] + right.keys
            let children = left.children + right.children
            let combined = Node(level: node.level)
            combined.keys = keys
            combined.children = children
            combined.recomputeSize()
            let index = splitIndex(combined, packLeft: false, minIndex: 1, maxIndex: keys.count - 2)
            left.keys = Array(keys[..<index])
            left.children = Array(children[...index])
            right.keys = Array(keys[(index + 1)...])
            right.children = Array(children[(index + 1)...])
            left.recomputeSize()
            right.recomputeSize()
            parent.replaceSeparator(at: separatorIndex, with: keys[index])
        }
    }
}
