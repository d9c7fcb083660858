import Foundation

/// A fetched object as 16 bytes: enough to rebuild its ID from a list of stores and a list of
/// unsaved objects' IDs.
struct CompactObjectID: Hashable {
    var key: Int64
    var code: UInt16
    /// Index in the stores, or -1 for an unsaved object (then `key` indexes the unsaved IDs).
    var store: Int32

    /// The full ID (an unknown entity code gives a stand-in entity, whose reads fail as such).
    func objectID(stores: [PersistentStore], unsaved: [ObjectID], model: ManagedObjectModel) -> ObjectID {
        if store < 0 { return unsaved[Int(key)] }
        let info = model.infosByCode[code] ?? EntityInfo.unknown(ManagedObject.self)
        return ObjectID(info: info, store: stores[Int(store)].identifier, key: key)
    }
}

/// The IDs of a batched result: 8 bytes each (the key) while every ID has the same entity and
/// store, as almost always; the entity code and store of each are kept only once they differ.
/// 3,000,000 results then take 23 MiB, not 46.
struct CompactObjectIDList: RandomAccessCollection {
    private struct Tag: Equatable {
        var code: UInt16
        var store: Int32
    }

    private var keys = ContiguousArray<Int64>()
    private var common: Tag?
    private var tags: ContiguousArray<Tag>?

    init() {}

    init<S: Sequence>(_ ids: S) where S.Element == CompactObjectID {
        for id in ids { append(id) }
    }

    var startIndex: Int { 0 }
    var endIndex: Int { keys.count }

    subscript(position: Int) -> CompactObjectID {
        let tag = tags?[position] ?? common ?? Tag(code: 0, store: -1)
        return CompactObjectID(key: keys[position], code: tag.code, store: tag.store)
    }

    mutating func append(_ id: CompactObjectID) {
        let tag = Tag(code: id.code, store: id.store)
        if tags == nil {
            if keys.isEmpty {
                common = tag
            } else if common != tag {
                tags = ContiguousArray(repeating: common ?? tag, count: keys.count)
            }
        }
        tags?.append(tag)
        keys.append(id.key)
    }
}
