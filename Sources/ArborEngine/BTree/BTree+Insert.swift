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
    let box: TreeBox
    let id: PageID
    let node: Node
    let lower: [UInt8]?
    let upper: [UInt8]?

    func covers(_ key: [UInt8], in box: TreeBox) -> Bool {
        self.box === box && (lower.map { compareBytes($0, key) <= 0 } ?? true) && (upper.map { compareBytes(key, $0) < 0 } ?? true)
    }
}

extension WriteTransaction {
    /// Inserts or replaces `key` in the tree of `box`; returns the replaced value.
    func insert(_ box: TreeBox, _ key: [UInt8], _ value: LeafValue) throws -> LeafValue? {
        if box.info.root == 0 {
            let (id, node) = try newNode(level: 0)
            node.insertLeaf(key: key, value: value, at: 0)
            box.info = TreeInfo(root: id, depth: 1, count: 1)
            return nil
        }
        if let hint = leafHint {
            if hint.covers(key, in: box), dirty[hint.id] === hint.node {
                var replaced: LeafValue?
                if insertIfItFits(box, hint.node, key, value, replaced: &replaced) {
                    leafHintMisses = 0
                    return replaced
                }
            }
            leafHintMisses += 1
        }
        leafHint = nil
        let path = try touchPath(box, key)
        guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
        let (index, found) = leaf.search(key)
        let old = place(key, value, in: leaf, at: index, found: found, box: box)
        let fits = leaf.byteSize <= pageSize
        try rebalance(box, path, appendedAtEnd: !found && index == leaf.count - 1, repairUnderflow: false)
        // Random keys miss every hint: after a few misses, build one only every 32nd insert,
        // enough to notice when the keys turn sequential again.
        if fits, let entry = path.last {
            if leafHintMisses < 4 || skippedLeafHints >= 32 {
                leafHint = hint(for: box, path: path, leaf: entry)
                skippedLeafHints = 0
            } else {
                skippedLeafHints += 1
            }
        }
        return old
    }

    /// Inserts into `leaf` (the hinted leaf covering `key`) when the result fits the page,
    /// setting `replaced` to the value it replaced; false, changing nothing, when it would not
    /// fit (the caller then takes the path from the root).
    private func insertIfItFits(_ box: TreeBox, _ leaf: Node, _ key: [UInt8], _ value: LeafValue, replaced: inout LeafValue?) -> Bool {
        let (index, found) = leaf.search(key)
        let growth = found ? value.cellBytes - leaf.valueCellBytes(index) : leafCellSize(keyLength: key.count, value: value)
        guard leaf.byteSize + growth <= pageSize else { return false }
        replaced = place(key, value, in: leaf, at: index, found: found, box: box)
        return true
    }

    /// Puts `value` under `key` at `index` of `leaf` (replacing the value there when `found`);
    /// returns the replaced value.
    private func place(_ key: [UInt8], _ value: LeafValue, in leaf: Node, at index: Int, found: Bool, box: TreeBox) -> LeafValue? {
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
    private func hint(for box: TreeBox, path: [PathEntry], leaf: PathEntry) -> LeafHint? {
        var lower: [UInt8]?, upper: [UInt8]?
        for level in 1..<max(path.count, 1) {
            let parent = path[level - 1].node, child = path[level].childIndex
            guard child >= 0, child <= parent.count else { return nil }
            if child > 0 { lower = parent.key(at: child - 1) }
            if child < parent.count { upper = parent.key(at: child) }
        }
        return LeafHint(box: box, id: leaf.id, node: leaf.node, lower: lower, upper: upper)
    }

    /// Copies (if needed) every node from the root to the leaf covering `key`.
    func touchPath(_ box: TreeBox, _ key: [UInt8]) throws -> [PathEntry] {
        var (id, node) = try touch(box.info.root, level: box.info.depth - 1)
        box.info.root = id
        var path: [PathEntry] = []
        path.reserveCapacity(box.info.depth)  // before the first append: a literal would be reallocated
        path.append(PathEntry(id: id, node: node, childIndex: -1))
        while node.level > 0 {
            let index = node.childIndex(for: key)
            let (childID, child) = try touch(node.child(at: index), level: node.level - 1)
            node.setChild(childID, at: index)
            path.append(PathEntry(id: childID, node: child, childIndex: index))
            (id, node) = (childID, child)
        }
        return path
    }

    /// Restores the size invariants along `path` after a change to its leaf, from the leaf up:
    /// splits nodes larger than a page, merges or redistributes nodes under half a page (after
    /// deletes only: an insert never shrinks a node, and repairing the small right half of a
    /// packed split would undo the packing), and grows or shrinks the root.
    func rebalance(_ box: TreeBox, _ path: [PathEntry], appendedAtEnd: Bool, repairUnderflow: Bool) throws {
        // An insert that still fits its leaf changed no other node: nothing to split (most
        // inserts), and the walk up the path with its lookups is skipped.
        if !repairUnderflow, let leaf = path.last, leaf.node.byteSize <= pageSize {
            try shrinkRoot(box)
            return
        }
        // Separators are about to move: no leaf's remembered range can be trusted.
        leafHint = nil
        var appendHint = appendedAtEnd
        for level in stride(from: path.count - 1, through: 0, by: -1) {
            let entry = path[level]
            guard dirty[entry.id] === entry.node else { continue }  // merged away below
            let node = entry.node
            if node.byteSize > pageSize, level > 0, !appendHint,
               try shiftIntoSibling(parent: path[level - 1].node, childIndex: entry.childIndex, node: node) {
                appendHint = false
            } else if node.byteSize > pageSize {
                let pieces = try split(node, packLeft: appendHint)
                var rightIDs: [PageID] = []
                for piece in pieces {
                    let id = try allocate()
                    dirty[id] = piece.node
                    rightIDs.append(id)
                }
                if level == 0 {
                    let (rootID, root) = try newNode(level: node.level + 1)
                    root.children = [entry.id]
                    root.recomputeSize()
                    for (offset, piece) in pieces.enumerated() {
                        root.insertBranch(key: piece.separator, rightChild: rightIDs[offset], at: offset)
                    }
                    guard root.byteSize <= pageSize else {
                        throw ArborError.internalInconsistency("a new root of \(root.byteSize) bytes does not fit a page")
                    }
                    box.info.root = rootID
                    box.info.depth += 1
                } else {
                    let parent = path[level - 1].node
                    for (offset, piece) in pieces.enumerated() {
                        parent.insertBranch(key: piece.separator, rightChild: rightIDs[offset], at: entry.childIndex + offset)
                    }
                    appendHint = entry.childIndex + pieces.count == parent.count
                }
            } else if repairUnderflow && level > 0 && node.byteSize < pageSize / 2 {
                try fixUnderflow(parent: path[level - 1].node, childIndex: entry.childIndex, node: node, id: entry.id)
                appendHint = false
            } else {
                appendHint = false
            }
        }
        try shrinkRoot(box)
    }

    /// Instead of splitting an over-full leaf, moves cells into a neighbouring leaf when the two
    /// then fit with some room to spare. Random inserts then leave pages about 85% full instead of
    /// the ~69% plain splits give (1M random 116-byte entries: 147 MiB instead of 171 MiB), much as
    /// SQLite balances among siblings, at no measurable cost in insert time. Returns whether it did.
    func shiftIntoSibling(parent: Node, childIndex: Int, node: Node) throws -> Bool {
        guard node.isLeaf else { return false }
        let capacity = pageSize - PageHeader.size
        for siblingIndex in [childIndex + 1, childIndex - 1] where siblingIndex >= 0 && siblingIndex < parent.children.count {
            // Peek at the sibling's size first so a full sibling is not copied for nothing.
            let siblingSize: Int
            switch try self.node(parent.children[siblingIndex], level: 0) {
            case .node(let held): siblingSize = held.byteSize
            case .page(let page): siblingSize = page.usedBytes
            }
            // Keep ~8% free in both so the next inserts do not immediately overflow again.
            guard node.byteSize + siblingSize - 2 * PageHeader.size <= capacity * 2 - capacity / 6 else { continue }
            let (siblingID, sibling) = try touch(parent.children[siblingIndex], level: 0)
            parent.children[siblingIndex] = siblingID
            let (left, right) = siblingIndex > childIndex ? (node, sibling) : (sibling, node)
            // Large cells can defeat an even split: then a normal split is the answer.
            guard let separator = redistributeLeaves(left, right) else { continue }
            parent.replaceSeparator(at: min(childIndex, siblingIndex), with: separator)
            return true
        }
        return false
    }

    /// Removes an empty root leaf or a root branch with a single child.
    func shrinkRoot(_ box: TreeBox) throws {
        while box.info.root != 0, let root = dirty[box.info.root], root.count == 0 {
            let oldRoot = box.info.root
            if root.isLeaf {
                box.info = TreeInfo(root: 0, depth: 0, count: 0)
            } else {
                box.info.root = root.children[0]
                box.info.depth -= 1
            }
            try free(oldRoot)
        }
    }

    /// Splits an over-full node into itself (the left part) and one or more right parts, each
    /// with the separator that goes into the parent. With `packLeft` (sequential appends) the left
    /// part is filled completely, so ascending inserts leave full pages instead of half-full ones.
    func split(_ node: Node, packLeft: Bool) throws -> [(separator: [UInt8], node: Node)] {
        var pieces: [(separator: [UInt8], node: Node)] = []
        var current = node
        var rounds = 0
        while current.byteSize > pageSize {
            rounds += 1
            guard rounds <= 64, current.count >= (current.isLeaf ? 2 : 3) else {
                throw ArborError.internalInconsistency("cannot split a node of \(current.byteSize) bytes with \(current.count) keys")
            }
            let right = Node(level: current.level)
            let separator: [UInt8]
            if current.isLeaf {
                let index = splitIndex(current, packLeft: packLeft, minIndex: 1, maxIndex: current.count - 1)
                right.keys = current.keys.extracting(index...)
                right.values = current.values.extracting(index...)
                separator = shortestSeparator(current.keys[index - 1], current.keys[index])
                current.keys.removeSubrange(index...)
                current.values.removeSubrange(index...)
            } else {
                let index = splitIndex(current, packLeft: packLeft, minIndex: 1, maxIndex: current.count - 2)
                separator = current.keys[index]
                right.keys = current.keys.extracting((index + 1)...)
                right.children = Array(current.children[(index + 1)...])
                current.keys.removeSubrange(index...)
                current.children.removeSubrange((index + 1)...)
            }
            current.recomputeSize()
            right.recomputeSize()
            pieces.append((separator, right))
            current = right
        }
        // Each piece was cut from what remained and kept its room: sized to its cells now.
        if !pieces.isEmpty {
            for piece in [node] + pieces.map(\.node) {
                piece.keys.shrinkIfOversized()
                if piece.isLeaf { piece.values.shrinkIfOversized() }
            }
        }
        return pieces
    }

    /// Where to split `node`: the first cell of the right part (leaf) or the promoted separator
    /// (branch), chosen by bytes so both parts fit a page.
    func splitIndex(_ node: Node, packLeft: Bool, minIndex: Int, maxIndex: Int) -> Int {
        // Local copies of the arrays: reading a node's arrays cell by cell would retain and
        // check access on every read.
        let keys = node.keys, values = node.values
        let sizes = node.isLeaf ? values.indices.map { leafCellSize(keyLength: keys.length($0), valueCellBytes: values.cellBytes($0)) }
            : (0..<keys.count).map { branchCellSize(keyLength: keys.length($0)) }
        let total = sizes.reduce(0, +)
        let capacity = pageSize - PageHeader.size
        var prefix = 0
        var index = minIndex
        if packLeft {
            // As many cells on the left as fit.
            prefix = sizes[0..<minIndex].reduce(0, +)
            while index < maxIndex && prefix + sizes[index] <= capacity {
                prefix += sizes[index]
                index += 1
            }
            return max(minIndex, index)
        }
        prefix = sizes[0..<minIndex].reduce(0, +)
        // Two halves, or for a node several pages large (a leaf that took many changes at
        // once, `apply`) pieces about seven-eighths full.
        let fill = capacity * 7 / 8
        let target = total <= 2 * capacity ? total / 2 : total / ((total + fill - 1) / fill)
        while index < maxIndex && prefix + sizes[index] <= target {
            prefix += sizes[index]
            index += 1
        }
        return min(max(index, minIndex), maxIndex)
    }
}

/// The shortest key `s` with `left < s <= right` (a prefix of `right`): keeps branch pages small.
func shortestSeparator(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
    var common = 0
    let limit = min(left.count, right.count)
    while common < limit && left[common] == right[common] { common += 1 }
    return Array(right[0..<min(common + 1, right.count)])
}
