import ArborEngine

extension BTreeStore {
    /// Checks that the object graph's derived trees agree with its rows: every index and
    /// foreign-key tree holds exactly the entries the rows give (keys and entity codes), and
    /// every join entry has its mirror on the other side and rows at both ends. Returns the
    /// problems found (at most `limit`), each naming the tree and the entry or row.
    /// - Complexity: O(n log n) for n rows and entries; reads the whole store.
    /// - Throws: `StoreError` when a row or key does not decode.
    func consistencyProblems(limit: Int = 20) throws -> [String] {
        var problems: [String] = []
        do {
            try database.view { tx in
                var expected: [String: Set<[UInt8]>] = [:]
                var trees: Set<String> = [], textTrees: Set<String> = []
                var rows: [UInt16: Set<Int64>] = [:]
                for root in model.infos where root.superentityName == nil && holds(root) {
                    for info in model.infos where info.rootCode == root.code {
                        for index in info.indexes {
                            trees.insert(index.tree)
                            if index.isText { textTrees.insert(index.tree) }
                        }
                    }
                    try tx.tree(root.rowTree).forEachUnsafe { key, value in
                        guard let pk = IndexKeys.trailingKey(key) else { throw StoreError.corruptRow(location: root.rowTree, detail: "malformed row key") }
                        let row = try RowCodec.decode(value, tree: root.rowTree, key: pk)
                        guard let info = model.infosByCode[row.entityCode], info.rootCode == root.code else {
                            problems.append("\(root.rowTree)/\(pk): entity code \(row.entityCode) is not in the hierarchy")
                            return problems.count < limit
                        }
                        rows[root.code, default: []].insert(pk)
                        for index in info.indexes {
                            // A text index's logical entries carry no entity code (its rows are read).
                            let value = index.isText ? [] : keys.entryValue(info.code, root: root.code)
                            for entry in keys.indexKeys(index, columns: row.columns, key: pk) {
                                expected[index.tree, default: []].insert(entry + value)
                            }
                        }
                        return true
                    }
                }
                for tree in trees.sorted() where problems.count < limit {
                    var missing = expected[tree] ?? []
                    func found(_ entry: [UInt8]) -> Bool {
                        if missing.remove(entry) == nil { problems.append("\(tree): entry \(entry.map { String($0, radix: 16) }.joined(separator: " ")) has no row that gives it") }
                        return problems.count < limit
                    }
                    if textTrees.contains(tree) {
                        try PostingTree(tree: try tx.tree(tree), keys: keys).forEachEntry { _ = found($0) }
                    } else {
                        try tx.tree(tree).forEachUnsafe { key, value in found(Array(key) + Array(value)) }
                    }
                    for entry in missing.prefix(limit - min(problems.count, limit)) {
                        problems.append("\(tree): missing the entry \(entry.map { String($0, radix: 16) }.joined(separator: " "))")
                    }
                }
                for info in model.infos where holds(info) {
                    for relationship in info.relationships where relationship.kind == .manyToMany && relationship.joinSide == 0 {
                        guard let name = relationship.joinTree,
                              let inverse = model.inverse(of: relationship),
                              let destinationRoot = model.info(named: relationship.destinationRoot)?.code else { continue }
                        let join = try tx.tree(name)
                        var sides: [UInt8: Set<[Int64]>] = [:]
                        try join.forEachUnsafe { key, _ in
                            let components = try TupleKey.decode(Array(key))
                            guard components.count == 4, case .uint8(let side) = components[0],
                                  let owner = IndexKeys.integer(in: Array(key), at: TupleKey.componentRange(in: key, at: 1)?.lowerBound ?? 0),
                                  let member = IndexKeys.trailingKey(key) else {
                                problems.append("\(name): malformed entry")
                                return problems.count < limit
                            }
                            sides[side, default: []].insert(side == 0 ? [owner, member] : [member, owner])
                            let (ownerRoot, memberRoot) = side == relationship.joinSide ? (info.rootCode, destinationRoot) : (destinationRoot, info.rootCode)
                            if rows[ownerRoot]?.contains(owner) != true || rows[memberRoot]?.contains(member) != true {
                                problems.append("\(name): entry (\(side), \(owner), \(member)) names a missing row")
                            }
                            return problems.count < limit
                        }
                        if inverse !== relationship, sides[0] ?? [] != sides[1] ?? [] {
                            problems.append("\(name): the two sides differ")
                        }
                    }
                }
            }
        } catch { throw storeError(error, path: path) }
        return Array(problems.prefix(limit))
    }
}
