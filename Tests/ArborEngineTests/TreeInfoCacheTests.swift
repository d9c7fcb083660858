@testable import ArborEngine
import ArborEngineTestSupport
import Testing

@Suite("Tree record cache: the newest snapshot's catalog records, recent names first")
struct TreeInfoCacheTests {
    /// The cache's contract, kept the simplest way: one snapshot's records in a dictionary.
    struct Reference {
        var snapshot: UInt64 = 0
        var trees: [String: TreeInfo] = [:]

        func info(_ name: String, snapshot: UInt64) -> TreeInfo? { snapshot == self.snapshot ? trees[name] : nil }

        mutating func keep(_ info: TreeInfo, name: String, snapshot: UInt64) {
            if snapshot > self.snapshot { (self.snapshot, trees) = (snapshot, [:]) }
            if snapshot == self.snapshot { trees[name] = info }
        }
    }

    @Test("lookups and records of older, current and newer snapshots agree with a dictionary per snapshot", arguments: 0..<3)
    func differential(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var cache = TreeInfoCache(), reference = Reference()
        // Names built afresh each time as well as kept ones: equal names in other storage must match too.
        let names = (0..<9).map { "index.Stop.column\($0)" } + ["rows.Stop", "rows.StopTime"]
        var mismatches = 0
        for step in 0..<20_000 {
            let snapshot = UInt64(step / 500) + UInt64(Int.random(in: 0..<3, using: &random))
            let kept = names[Int.random(in: 0..<names.count, using: &random)]
            let name = Bool.random(using: &random) ? kept : String(decoding: Array(kept.utf8), as: UTF8.self)
            if Int.random(in: 0..<4, using: &random) == 0 {
                let info = TreeInfo(root: PageID(Int.random(in: 1..<1_000, using: &random)), depth: 2, count: UInt64(step))
                cache.keep(info, name: name, snapshot: snapshot)
                reference.keep(info, name: name, snapshot: snapshot)
            } else if cache.info(name, snapshot: snapshot) != reference.info(name, snapshot: snapshot) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0, "lookups that disagree with the reference")
    }

    @Test("a newer snapshot drops the older one's records, recent names included")
    func newerSnapshotReplaces() {
        var cache = TreeInfoCache()
        let info = TreeInfo(root: 7, depth: 1, count: 3)
        cache.keep(info, name: "rows.Stop", snapshot: 5)
        #expect(cache.info("rows.Stop", snapshot: 5) == info)
        #expect(cache.info("rows.Stop", snapshot: 4) == nil)
        cache.keep(TreeInfo(root: 9, depth: 1, count: 1), name: "rows.StopTime", snapshot: 6)
        #expect(cache.info("rows.Stop", snapshot: 6) == nil)
        #expect(cache.info("rows.Stop", snapshot: 5) == nil)
        cache.keep(info, name: "rows.Stop", snapshot: 5)  // an older reader's record is not kept
        #expect(cache.info("rows.Stop", snapshot: 6) == nil)
    }
}
