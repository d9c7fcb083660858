import ArborEngine

extension BTreeStore {
    /// The primary keys (ascending, distinct) of the rows that have an entry beginning with
    /// every probe of `search`, rarest probe first; nil when the search is not exact and even
    /// the rarest probe's entries outnumber a quarter of the entity's rows (`rowCount`), where
    /// reading and evaluating every row costs less than looking rows up one by one. `examined`
    /// counts the index entries read. `complete`: every probe narrowed the keys (else the rows
    /// must be checked against the conjuncts the search came from, even for an exact search).
    ///
    /// Probes are counted first (the blocks' counts, no key decoded). The rarest gives the
    /// candidates; each next one narrows them by a merge, while there are enough candidates
    /// that reading its range costs less than evaluating them.
    /// - Throws: `StoreError.corruptRow` for a malformed entry.
    /// - Complexity: O(p log n) to count p probes, then O(e) in the entries read.
    func textCandidates(_ search: QueryPlanner.TextSearch, rowCount: Int, _ tx: Transaction,
                        examined: inout Int) throws -> (keys: [Int64], complete: Bool)? {
        let tree = PostingTree(tree: try tx.tree(search.index.tree), keys: keys)
        if search.probes.count == 1, let probe = search.probes.first {
            // Nothing to rank: the keys are read at once (counting them would read them twice).
            let candidates = try self.keys(in: QueryPlanner.TextSearch.range(probe), of: tree, examined: &examined)
            guard search.isExact || candidates.count <= max(rowCount / 4, 64) else { return nil }
            return (candidates, true)
        }
        var counted: [(range: KeyRange, count: Int)] = []
        for probe in search.probes {
            let range = QueryPlanner.TextSearch.range(probe)
            counted.append((range, try tree.count(in: range)))
        }
        counted.sort { $0.count < $1.count }
        guard let rarest = counted.first else { return nil }
        // An exact search needs no row evaluated: its keys are read in key order, the way a scan
        // would read them, so it never gives way.
        guard search.isExact || rarest.count <= max(rowCount / 4, 64) else { return nil }
        var candidates = try keys(in: rarest.range, of: tree, examined: &examined)
        for (range, count) in counted.dropFirst() {
            // Few candidates are checked on their rows sooner than a large range is read.
            guard candidates.count > 16 || (search.isExact && count <= 256), count <= max(candidates.count, 8) * 32 else {
                return (candidates, false)
            }
            let other = try keys(in: range, of: tree, examined: &examined)
            candidates = Self.intersection(candidates, other)
        }
        return (candidates, true)
    }

    /// The primary keys of the entries in `range` of a text index, ascending and distinct (a
    /// row has one entry per term, and a prefix can begin several of its terms).
    private func keys(in range: KeyRange, of tree: PostingTree, examined: inout Int) throws -> [Int64] {
        var found: [Int64] = []
        examined += try tree.keys(in: range, into: &found)
        found.sortUnique(by: <)
        return found
    }

    /// The keys both ascending lists hold.
    static func intersection(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(min(a.count, b.count))
        var i = 0, j = 0
        while i < a.count && j < b.count {
            if a[i] < b[j] { i += 1 } else if a[i] > b[j] { j += 1 } else {
                result.append(a[i])
                i += 1
                j += 1
            }
        }
        return result
    }
}
