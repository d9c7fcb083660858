extension BTree {
    /// Bytes of changes merged into one leaf at most before it is rebalanced: a leaf that grows
    /// to a few pages splits into as many pieces in one go; the next changes then find the
    /// piece that covers them.
    static var mergeBudgetPages: Int { 16 }

    /// Checks every key's and value's length, before anything is changed.
    /// - Throws: `keyTooLarge`, `valueTooLarge`.
    func validate(_ changes: TreeChanges) throws {
        let maxKey = Limits.maxKeyLength(pageSize: pageSize)
        for index in 0..<changes.count {
            let length = changes.keys.length(index)
            guard length > 0, length <= maxKey else { throw ArborError.keyTooLarge(length: length, maximum: maxKey) }
            let valueLength = changes.values.length(index)
            guard valueLength <= Limits.maxValueLength else { throw ArborError.valueTooLarge(length: valueLength, maximum: Limits.maxValueLength) }
        }
    }

    /// Applies `changes` (validated) to the tree in key order, a leaf at a time (see `TreeChanges`).
    /// - Throws: I/O errors.
    func apply(_ changes: TreeChanges) throws {
        let order = changes.order()
        guard !order.isEmpty else { return }
        var position = 0
        while position < order.count {
            try pages.spillIfNeeded()
            box.leafHint = nil
            let first = changes.keys[order[position]]
            if box.info.root == 0 {
                let (id, _) = try pages.newNode(level: 0)
                box.info = TreeInfo(root: id, depth: 1, count: 0)
            }
            let path = try touchPath(first)
            guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
            // The changes this leaf covers: those below the separator to its right.
            let upper = upperSeparator(path)
            var end = position + 1
            var budget = pageSize * Self.mergeBudgetPages - changes.keys.length(order[position]) - changes.values.length(order[position])
            while end < order.count && budget > 0 {
                if let upper, changes.keys.withBytes(order[end], { key in upper.withUnsafeBytes { compareBytes(key, $0) } }) >= 0 { break }
                budget -= changes.keys.length(order[end]) + changes.values.length(order[end])
                end += 1
            }
            let appended = try merge(changes, order[position..<end], into: leaf)
            try rebalance(path, appendedAtEnd: appended, repairUnderflow: true)
            position = end
        }
        try shrinkRoot()
        box.version += 1
        box.isDirty = true
    }

    /// The separator bounding from above the leaf at the end of `path` (nil: none, the last leaf).
    private func upperSeparator(_ path: [PathEntry]) -> [UInt8]? {
        var upper: [UInt8]?
        for level in 1..<max(path.count, 1) {
            let parent = path[level - 1].node, child = path[level].childIndex
            if child >= 0, child < parent.keys.count { upper = parent.keys[child] }
        }
        return upper
    }

    /// Merges the changes at `positions` (ascending keys) into `leaf`: one pass over its cells.
    /// Returns whether every change was a put after the leaf's last key (an append, whose
    /// split packs pages full).
    private func merge(_ changes: TreeChanges, _ positions: ArraySlice<Int>, into leaf: Node) throws -> Bool {
        let oldKeys = leaf.keys, oldValues = leaf.values
        let oldCount = oldKeys.count
        var keys = PackedBytes(), values = LeafValues()
        keys.reserveCapacity(count: oldCount + positions.count, bytes: oldKeys.byteCount + positions.count * 16)
        values.reserveCapacity(values: oldCount + positions.count, bytes: oldCount * 16 + positions.count * 32)
        var cell = 0
        var added = 0, removed = 0
        var appends = true
        let inlineLimit = Limits.inlineValueLimit(pageSize: pageSize)
        for position in positions {
            try changes.keys.withBytes(position) { key in
                // The leaf's cells before this key stay as they are.
                let next = oldKeys.lowerBound(key, from: cell)
                if next > cell {
                    keys.append(contentsOf: oldKeys, cell..<next)
                    values.append(contentsOf: oldValues, cell..<next)
                }
                cell = next
                let found = cell < oldCount && oldKeys.bytesEqual(cell, key)
                if found {
                    appends = false
                    if case .overflow(let ref) = oldValues[cell] { try pages.freeOverflow(ref) }
                    cell += 1
                } else if cell < oldCount {
                    appends = false
                }
                if changes.keys.isFlagged(position) {
                    appends = false
                    if found { removed += 1 }
                    return
                }
                keys.append(key)
                if changes.values.length(position) > inlineLimit {
                    values.append(.overflow(try pages.writeOverflow(changes.values[position])))
                } else {
                    changes.values.withBytes(position) { values.appendInline($0) }
                }
                if !found { added += 1 }
            }
        }
        if cell < oldCount {
            keys.append(contentsOf: oldKeys, cell..<oldCount)
            values.append(contentsOf: oldValues, cell..<oldCount)
        }
        leaf.keys = keys
        leaf.values = values
        leaf.recomputeSize()
        // Room was reserved for every change; a leaf that still fits its page gives it back
        // (one that does not is split, and its pieces are sized then).
        if leaf.byteSize <= pageSize {
            leaf.keys.shrinkIfOversized()
            leaf.values.shrinkIfOversized()
        }
        box.info.count = box.info.count + UInt64(added) - min(UInt64(removed), box.info.count + UInt64(added))
        return appends
    }
}

extension Tree {
    /// Applies `changes` (puts and deletes) in key order, a leaf at a time: each leaf they touch
    /// is copied, merged with its changes and rebalanced once. Of several changes to one key,
    /// the last one given wins. Invalidates cursors on the tree.
    /// - Complexity: O(c log c) to order c changes given out of order (O(c) in order), then
    ///   O(c + l log n) for the l leaves they touch.
    /// - Throws: `readOnly`, `keyTooLarge`, `valueTooLarge` (before anything is changed), I/O errors.
    public func apply(_ changes: TreeChanges) throws {
        guard let writer = transaction as? WriteTransaction else { throw ArborError.readOnly }
        guard !box.isDropped else { throw ArborError.treeNotFound(box.name) }
        let tree = BTree(writer, box)
        try tree.validate(changes)
        try writer.mutate { try tree.apply(changes) }
    }
}
