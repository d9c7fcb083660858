import Foundation

/// A set of object IDs kept as sorted primary keys per store and entity: 8 bytes an object, so
/// that a batch request changing millions of rows can say which.
public struct ObjectIDSet: Sequence, Sendable {
    struct Group: Sendable {
        let store: UUID
        let info: EntityInfo
        /// Ascending, without repeats.
        var keys: [Int64]
    }

    private(set) var groups: [Group] = []

    public init() {}

    /// The set of `ids` (temporary IDs included as they are).
    public init<S: Sequence>(_ ids: S) where S.Element == ObjectID {
        var byGroup: [GroupKey: (store: UUID, info: EntityInfo, keys: [Int64])] = [:]
        var temporary: [ObjectID] = []
        var last: GroupKey?
        var lastKeys: [Int64] = []
        for id in ids {
            guard let store = id.storeIdentifier else {
                temporary.append(id)
                continue
            }
            // Runs of one entity (the usual order) gather without a lookup per ID.
            let key = GroupKey(store: store, info: ObjectIdentifier(id.info))
            if key != last {
                if let last { byGroup[last]?.keys.append(contentsOf: lastKeys) }
                lastKeys.removeAll(keepingCapacity: true)
                if byGroup[key] == nil { byGroup[key] = (store, id.info, []) }
                last = key
            }
            lastKeys.append(id.primaryKey)
        }
        if let last { byGroup[last]?.keys.append(contentsOf: lastKeys) }
        for (store, info, keys) in byGroup.values.sorted(by: { ($0.info.name, $0.store.uuidString) < ($1.info.name, $1.store.uuidString) }) {
            append(store: store, info: info, keys: keys)
        }
        // Temporary IDs name no row; they are kept only so `contains` answers for them.
        self.temporary = Set(temporary)
    }

    private var temporary: Set<ObjectID> = []

    /// A store and an entity, identifying a group while IDs are gathered.
    private struct GroupKey: Hashable {
        let store: UUID
        let info: ObjectIdentifier
    }

    /// Adds `keys` of `info`'s rows in `store` (in any order, repeats allowed).
    mutating func append(store: UUID, info: EntityInfo, keys: [Int64]) {
        guard !keys.isEmpty else { return }
        var sorted = keys
        if zip(sorted, sorted.dropFirst()).contains(where: { $0 >= $1 }) {
            sorted.sort()
            var unique: [Int64] = []
            unique.reserveCapacity(sorted.count)
            for key in sorted where unique.last != key { unique.append(key) }
            sorted = unique
        }
        if let index = groups.firstIndex(where: { $0.store == store && $0.info === info }) {
            // Keys of successive chunks of an insert come after the ones before: appended.
            if let last = groups[index].keys.last, let first = sorted.first, last < first {
                groups[index].keys.append(contentsOf: sorted)
            } else {
                groups[index].keys = Self.merged(groups[index].keys, sorted)
            }
        } else {
            groups.append(Group(store: store, info: info, keys: sorted))
        }
    }

    /// Adds the ID of `info`'s row `key` in `store`.
    /// - Complexity: amortized O(1) when each entity's keys come ascending (a batch request
    ///   meets rows in key order), as `append(store:info:keys:)` otherwise.
    mutating func insert(store: UUID, info: EntityInfo, key: Int64) {
        if let last = groups.indices.last, groups[last].info === info, groups[last].store == store,
           let lastKey = groups[last].keys.last, lastKey < key {
            groups[last].keys.append(key)
        } else {
            append(store: store, info: info, keys: [key])
        }
    }

    /// The row-cache keys of the IDs (temporary IDs name no row).
    var rowKeys: [RowKey] {
        groups.flatMap { group in group.keys.map { RowKey(root: group.info.rootCode, key: $0) } }
    }

    private static func merged(_ a: [Int64], _ b: [Int64]) -> [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            let next: Int64
            if j >= b.count || (i < a.count && a[i] <= b[j]) { next = a[i]; i += 1 } else { next = b[j]; j += 1 }
            if result.last != next { result.append(next) }
        }
        return result
    }

    /// The number of IDs.
    public var count: Int { groups.reduce(temporary.count) { $0 + $1.keys.count } }
    public var isEmpty: Bool { count == 0 }

    /// Whether `id` is in the set.
    /// - Complexity: O(log n).
    public func contains(_ id: ObjectID) -> Bool {
        guard let store = id.storeIdentifier else { return temporary.contains(id) }
        for group in groups where group.store == store && (group.info === id.info || group.info.name == id.info.name) {
            var low = 0, high = group.keys.count
            while low < high {
                let middle = (low + high) >> 1
                if group.keys[middle] < id.primaryKey { low = middle + 1 } else { high = middle }
            }
            return low < group.keys.count && group.keys[low] == id.primaryKey
        }
        return false
    }

    public func makeIterator() -> AnyIterator<ObjectID> {
        var groupIndex = 0, keyIndex = 0
        var rest = temporary.makeIterator()
        return AnyIterator {
            while groupIndex < groups.count {
                let group = groups[groupIndex]
                if keyIndex < group.keys.count {
                    defer { keyIndex += 1 }
                    return ObjectID(info: group.info, store: group.store, key: group.keys[keyIndex])
                }
                groupIndex += 1
                keyIndex = 0
            }
            return rest.next()
        }
    }

    /// Whether an ID of an entity in the hierarchy rooted at `root` (a code) may be in the set.
    func hasHierarchy(_ root: UInt16) -> Bool {
        groups.contains { $0.info.rootCode == root } || temporary.contains { $0.info.rootCode == root }
    }
}
