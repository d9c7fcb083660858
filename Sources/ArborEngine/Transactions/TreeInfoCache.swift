/// Catalog records of one committed snapshot, by tree name (see `Database.cachedTreeInfo`).
///
/// Every fetch opens a new read transaction and asks for the same two or three trees, under
/// names its caller keeps: the names found last are compared first (a kept name compares
/// equal at once, by its storage), and only a name not among them is hashed.
struct TreeInfoCache {
    /// The snapshot the records are of.
    private(set) var snapshot: UInt64 = 0
    private var trees: [String: TreeInfo] = [:]
    /// The names found last, the most recent first.
    private var recent: [(name: String, info: TreeInfo)] = []
    static let recentCount = 4

    /// The record of tree `name` in `snapshot`, if kept.
    /// - Complexity: O(1): a few name comparisons, then a hash of the name.
    mutating func info(_ name: String, snapshot: UInt64) -> TreeInfo? {
        guard snapshot == self.snapshot else { return nil }
        for entry in recent where entry.name == name { return entry.info }
        guard let info = trees[name] else { return nil }
        noteRecent(name, info)
        return info
    }

    /// Keeps the record of tree `name` in `snapshot`: a newer snapshot replaces the records
    /// of an older one, and an older snapshot's record is not kept.
    mutating func keep(_ info: TreeInfo, name: String, snapshot: UInt64) {
        if snapshot > self.snapshot {
            self.snapshot = snapshot
            trees = [:]
            recent = []
        }
        guard snapshot == self.snapshot else { return }
        trees[name] = info
        noteRecent(name, info)
    }

    private mutating func noteRecent(_ name: String, _ info: TreeInfo) {
        recent.removeAll { $0.name == name }
        if recent.count >= Self.recentCount { recent.removeLast() }
        recent.insert((name, info), at: 0)
    }
}
