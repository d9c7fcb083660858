import ArborEngine

/// The reading side of `QueryPlanner+Keys`: rows looked up by key, and the keys a related
/// entity's index search leads to.
extension BTreeStore {
    /// Calls `body` with each key of `keys` (ascending) whose row exists in `tree`, and the
    /// row's stored bytes in place, until it returns false. One cursor moves forward through
    /// the keys, so keys close together cost a search in a leaf each.
    /// - Complexity: O(k log n) at worst for k keys, O(k log b) when they cluster.
    func visitRows(_ tx: Transaction, tree: String, keys: [Int64],
                   _ body: (_ key: Int64, _ bytes: UnsafeRawBufferPointer) throws -> Bool) throws {
        let cursor = try tx.tree(tree).makeCursor()
        var previous: Int64?
        // One buffer for every key's encoding (an array per key is an allocation per row).
        var encoded: [UInt8] = []
        encoded.reserveCapacity(16)
        for key in keys where key != previous {
            previous = key
            encoded.removeAll(keepingCapacity: true)
            self.keys.appendRowKey(key, to: &encoded)
            let keepGoing = try encoded.withUnsafeBytes { encoded in
                try cursor.withValue(forKey: encoded) { try body(key, $0) }
            }
            if keepGoing == false { return }
        }
    }

    /// `visitRows(_:tree:keys:_:)` for ascending `keys` that may lie close together: where
    /// they cover at least a quarter of the keys between the first and the last, the tree is
    /// scanned over that range (a step per row) rather than searched per key.
    func visitRows(_ tx: Transaction, tree: String, sortedKeys keys: [Int64],
                   _ body: (_ key: Int64, _ bytes: UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let first = keys.first, let last = keys.last, keys.count >= 64,
              case let (span, overflow) = last.subtractingReportingOverflow(first), !overflow, span / 4 <= Int64(keys.count) else {
            return try visitRows(tx, tree: tree, keys: keys, body)
        }
        var next = 0
        let range = KeyRange(lower: .init(self.keys.rowKey(first), inclusive: true), upper: .init(self.keys.rowKey(last), inclusive: true))
        try tx.tree(tree).forEachUnsafe(in: range) { key, bytes in
            guard let pk = IndexKeys.trailingKey(key) else { throw StoreError.corruptRow(location: tree, detail: "malformed row key") }
            while next < keys.count && keys[next] < pk { next += 1 }
            guard next < keys.count else { return false }
            guard keys[next] == pk else { return true }
            next += 1
            return try body(pk, bytes)
        }
    }

    /// The primary keys (ascending, unique) of the rows of the fetched entity that `search`
    /// leads to: the destination's index is searched, then each entry found is followed back
    /// through the relationship's link. `examined` counts the index and link entries read.
    /// - Throws: `StoreError.corruptRow` for a malformed entry or row.
    func relatedKeys(_ search: QueryPlanner.RelatedSearch, _ tx: Transaction, examined: inout Int) throws -> [Int64] {
        guard case .index(let index, let ranges) = search.inner.access else { return [] }
        // The destination's keys, from its index entries (which end with them).
        let filters = search.inner.keyFilters.isEmpty ? nil : KeyFilterSet(search.inner.keyFilters, onProgress: nil)
        var targets = try trailingKeys(in: ranges, of: try tx.tree(index.tree), filter: filters, entry: "index entry")
        examined += targets.count + (filters?.rejected ?? 0)
        targets.sort()
        var owners: [Int64] = []
        let relationship = search.relationship
        switch relationship.kind {
        case .toOne:
            // The fetched rows referring to each target: the foreign-key entries under its key.
            let prefixes = targets.map { KeyRange.prefix(keys.ownerPrefix($0)) }
            owners = try trailingKeys(in: prefixes, of: try tx.tree(search.link), entry: "foreign-key entry")
        case .oneToMany:
            // Each member's row holds the reference back to its owner.
            guard let inverse = search.destination.inverse(of: relationship) else { return [] }
            try visitRows(tx, tree: search.link, keys: targets) { target, bytes in
                let row = try RowCodec.decode(bytes, context: "\(search.link)/\(target)")
                if inverse.slot < row.columns.count, case .reference(_, let owner) = row.columns[inverse.slot] { owners.append(owner) }
                return true
            }
        case .manyToMany:
            // The inverse side of the join tree lists each member's owners.
            guard let inverse = search.destination.inverse(of: relationship) else { return [] }
            let prefixes = targets.map { KeyRange.prefix(keys.joinPrefix(side: inverse.joinSide, owner: $0)) }
            owners = try trailingKeys(in: prefixes, of: try tx.tree(search.link), entry: "join entry")
        }
        examined += owners.count
        owners.sortUnique(by: <)
        return owners
    }

    /// The keys that end the entries of `ranges` (ascending, disjoint) in `tree` — the row,
    /// owner or member key every index, foreign-key and join entry ends with — in entry order,
    /// of the entries `filter` admits.
    /// - Throws: `StoreError.corruptRow` naming the tree for an `entry` that does not end with one.
    func trailingKeys(in ranges: [KeyRange], of tree: Tree, filter: KeyFilterSet? = nil, entry: String) throws -> [Int64] {
        var found: [Int64] = []
        try tree.makeCursor().scan(ranges, filter: filter) { key, _ in
            guard let trailing = IndexKeys.trailingKey(key) else {
                throw StoreError.corruptRow(location: tree.name, detail: "malformed \(entry)")
            }
            found.append(trailing)
            return true
        }
        return found
    }
}
