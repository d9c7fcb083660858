import ArborEngine

/// Index entries in key order for the results controller's sections: the index answers which
/// rows there are and in what order, without a row being read.
extension BTreeStore: IndexOrderReading {
    /// Walks the relationship's foreign-key entries of `owner`, or those of the
    /// (relationship, attribute) index `orderedBy`; the sort key is the attribute's encoded
    /// component between the owner and the member.
    func forEachMember(through relationship: EntityInfo.Relationship, owner: Int64, orderedBy index: EntityInfo.Index?,
                       codes: Set<UInt16>, root: UInt16, _ body: ([UInt8], Int64, UInt16) throws -> Void) throws {
        guard let tree = index?.tree ?? relationship.foreignKeyTree else { return }
        let withOrder = index != nil
        do {
            try reading { tx in
                try tx.tree(tree).forEachUnsafe(in: .prefix(keys.ownerPrefix(owner))) { key, value in
                    guard let start = TupleKey.lastComponentStart(in: key), let pk = IndexKeys.integer(in: key, at: start),
                          let ownerEnd = TupleKey.integer(in: key, at: 0)?.end, ownerEnd <= start,
                          let code = keys.entryCode(from: value, root: root) else {
                        throw StoreError.corruptRow(location: tree, detail: "malformed index entry")
                    }
                    if codes.contains(code) { try body(withOrder ? Array(key[ownerEnd..<start]) : [], pk, code) }
                    return true
                }
            }
        } catch { throw storeError(error, path: path) }
    }

    /// The sort key is the entry's encoded value; it is decoded only when it changes.
    func forEachEntry(of index: EntityInfo.Index, codes: Set<UInt16>, root: UInt16,
                      _ body: (AttributeValue, [UInt8], Int64, UInt16) throws -> Void) throws {
        var previous: (key: [UInt8], value: AttributeValue)?
        do {
            try reading { tx in
                try tx.tree(index.tree).forEachUnsafe { key, value in
                    guard let start = TupleKey.lastComponentStart(in: key), let pk = IndexKeys.integer(in: key, at: start),
                          let code = keys.entryCode(from: value, root: root) else {
                        throw StoreError.corruptRow(location: index.tree, detail: "malformed index entry")
                    }
                    guard codes.contains(code) else { return true }
                    let component = Array(key[0..<start])
                    if component != previous?.key {
                        let decoded: AttributeValue
                        switch try TupleKey.decode(component).first {
                        case .string(let text): decoded = .string(text)
                        case .int64(let number), .integer(let number): decoded = .int(number)
                        default: decoded = .null
                        }
                        previous = (component, decoded)
                    }
                    try body(previous?.value ?? .null, component, pk, code)
                    return true
                }
            }
        } catch { throw storeError(error, path: path) }
    }
}
