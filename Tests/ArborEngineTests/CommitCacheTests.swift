import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// What a commit leaves in the shared page cache: the pages it wrote, never an older image of a
/// reused page number, and not a large commit's every leaf.
@Suite("Commit and the page cache")
struct CommitCacheTests {
    /// Drops a tree (reading its pages into the cache as it frees them), then fills a new one
    /// in a commit of more pages than the cache holds, reusing those page numbers without reading
    /// them: every read of the new tree must see its own values, never a dropped page's image.
    @Test("a commit larger than the cache never leaves a stale image of a reused page", arguments: [4, 16, 64])
    func largeCommitsSmallCache(cachePages: Int) throws {
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096, cacheBytes: cachePages * 4096))
        for round in 0..<6 {
            let old = "t\(round)", new = "t\(round + 1)"
            if round == 0 { try db.update { tx in try fill(try tx.createTree(old), count: 3_000, valueLength: 100) } }
            try db.update { tx in try tx.dropTree(old) }
            try db.update { tx in try fill(try tx.createTree(new), count: 3_000, valueLength: 100 + round, start: round) }
            try expectCacheMatchesFile(db, "round \(round)")
            try db.view { tx in
                let tree = try tx.tree(new)
                var count = 0
                try tree.forEach { key, value in
                    count += 1
                    return value.count == 100 + round
                }
                #expect(count == 3_000, "round \(round): \(count) entries read back")
                for index in stride(from: round, to: 3_000 + round, by: 97) {
                    #expect(try tree.get(key(index))?.count == 100 + round, "round \(round), entry \(index)")
                }
            }
        }
        #expect(db.checkIntegrity().isSound)
    }

    /// Every page the cache holds is byte for byte the page in the file.
    func expectCacheMatchesFile(_ db: Database, _ context: String) throws {
        let pageCount = db.state.withLock { $0.meta.pageCount }
        for id in PageID(2)..<PageID(pageCount) {
            guard let cached = db.cache.page(id) else { continue }
            let stored = try db.readPageFromDisk(id)
            #expect(cached.raw.elementsEqual(stored.raw), "\(context): the cache holds an old image of page \(id)")
        }
    }

    /// An import's leaves are not all copied into the cache at commit (its memory peak would be
    /// the nodes plus their images); its branches are, and a small commit's pages all are.
    @Test("a large commit keeps its branches in the cache, a small one all its pages")
    func whatStays() throws {
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096, cacheBytes: 64 << 20))
        try db.update { tx in try fill(try tx.createTree("t"), count: 30_000, valueLength: 100) }
        let pages = db.cache.statistics.pages
        #expect(pages > 0 && pages < 100, "\(pages) pages cached after the import")
        let before = db.cache.statistics.pages
        try db.update { tx in try tx.tree("t").put(key(5), [1, 2, 3]) }
        #expect(db.cache.statistics.pages >= before + 2, "the small commit's leaf and path are cached")
    }
}
