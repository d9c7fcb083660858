extension WriteTransaction {
    /// Moves cells between adjacent leaves `left` and `right` so both hold about half of their
    /// bytes. Returns the new separator, or nil (changing nothing) when large cells make an even
    /// split that fits two pages impossible.
    func redistributeLeaves(_ left: Node, _ right: Node) -> [UInt8]? {
        // The split point over the two leaves' cells as if they were one node (as `splitIndex`
        // chooses it), found from the cell sizes alone; then only the cells that change sides
        // move, instead of both leaves being rebuilt.
        let leftCount = left.keys.count, count = leftCount + right.keys.count
        guard count >= 2 else { return nil }
        // Sizes read from local copies of the arrays (released before the cells move, so the
        // moves do not copy them): one retain per array, not per cell.
        var sizes: [Int] = []
        sizes.reserveCapacity(count)
        for node in [left, right] {
            let keys = node.keys, values = node.values
            for cell in values.indices { sizes.append(leafCellSize(keyLength: keys.length(cell), valueCellBytes: values.cellBytes(cell))) }
        }
        let total = sizes.reduce(0, +)
        var prefix = sizes[0], index = 1
        while index < count - 1 && prefix + sizes[index] <= total / 2 {
            prefix += sizes[index]
            index += 1
        }
        guard PageHeader.size + prefix <= pageSize, PageHeader.size + total - prefix <= pageSize else { return nil }
        if index < leftCount {
            right.keys.prepend(contentsOf: left.keys, index..<leftCount)
            right.values.prepend(contentsOf: left.values, index..<leftCount)
            left.keys.removeSubrange(index...)
            left.values.removeSubrange(index...)
        } else if index > leftCount {
            let moved = index - leftCount
            left.keys.append(contentsOf: right.keys, 0..<moved)
            left.values.append(contentsOf: right.values, 0..<moved)
            right.keys.removeSubrange(..<moved)
            right.values.removeSubrange(..<moved)
        }
        left.recomputeSize()
        right.recomputeSize()
        guard let last = left.keys.last, let first = right.keys.first else { return nil }
        return shortestSeparator(last, first)
    }

    /// Removes `key` from the tree of `box`; returns its value, or nil when absent.
    func remove(_ box: TreeBox, _ key: [UInt8]) throws -> LeafValue? {
        guard box.info.root != 0 else { return nil }
        let path = try touchPath(box, key)
        guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
        let (index, found) = leaf.search(key)
        guard found else { return nil }
        let old = leaf.value(at: index)
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
                left.keys.append(contentsOf: right.keys)
                left.values.append(contentsOf: right.values)
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
                left.keys.append(separator)
                left.keys.append(contentsOf: right.keys)
                left.children += right.children
                left.recomputeSize()
                parent.removeBranch(separatorAt: separatorIndex)
                try free(rightID)
                return
            }
            var keys = left.keys
            keys.append(separator)
            keys.append(contentsOf: right.keys)
            let children = left.children + right.children
            let combined = Node(level: node.level)
            combined.keys = keys
            combined.children = children
            combined.recomputeSize()
            let index = splitIndex(combined, packLeft: false, minIndex: 1, maxIndex: keys.count - 2)
            left.keys = keys.extracting(0..<index)
            left.children = Array(children[...index])
            right.keys = keys.extracting((index + 1)...)
            right.children = Array(children[(index + 1)...])
            left.recomputeSize()
            right.recomputeSize()
            parent.replaceSeparator(at: separatorIndex, with: keys[index])
        }
    }
}
