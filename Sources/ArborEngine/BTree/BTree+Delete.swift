extension BTree {
    /// Removes `key` from the tree of `box`; returns its value, or nil when absent.
    func remove(_ key: [UInt8]) throws -> LeafValue? {
        guard box.info.root != 0 else { return nil }
        let path = try touchPath(key)
        guard let leaf = path.last?.node else { throw ArborError.internalInconsistency("empty path") }
        let (index, found) = leaf.search(key)
        guard found else { return nil }
        let old = leaf.value(at: index)
        leaf.removeLeaf(at: index)
        box.info.count -= 1
        try rebalance(path, appendedAtEnd: false, repairUnderflow: true)
        return old
    }
}
