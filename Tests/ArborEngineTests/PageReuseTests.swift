@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// Pages freed after a long reader's snapshot are reused when no protected snapshot reaches them
/// (each freelist entry records its pages' earliest birth), and never while one does.
@Suite("Page reuse: births let a writer reuse pages a long reader never saw")
struct PageReuseTests {
    /// The reuse rule against its definition: pages born in `b` and freed by `f` are pinned
    /// when some protected snapshot `s` has `b ≤ s < f`.
    @Test("the reuse rule agrees with a scan of every protected snapshot")
    func ruleMatchesDefinition() {
        var random = SplitMix64(seed: 31)
        for _ in 0..<2_000 {
            let ranges: [ClosedRange<UInt64>] = (0..<Int(random.next() % 5)).map { _ in
                let low = random.next() % 40
                return low...(low + (random.next() % 3 == 0 ? random.next() % 6 : 0))
            }
            let reuse = PageReuse(protecting: ranges)
            let snapshots = Set(ranges.flatMap { Array($0) })
            for _ in 0..<20 {
                let birth = random.next() % 45
                let freedBy = random.next() % 50
                let pinned = snapshots.contains { birth <= $0 && $0 < freedBy }
                #expect(reuse.allowsReuse(freedBy: freedBy, bornNoEarlierThan: birth) == !pinned,
                        "\(ranges) born \(birth) freed \(freedBy)")
                if !ranges.isEmpty {
                    let range = ranges[Int(random.next() % UInt64(ranges.count))]
                    #expect(reuse.protects(range))
                    let probe = random.next() % 45
                    if reuse.protects(probe...probe) { #expect(snapshots.contains(probe)) }
                }
            }
            #expect(!reuse.protects(45...46))
        }
        #expect(PageReuse(protecting: [0...UInt64.max, 5...5]).protected == [0...UInt64.max])
        #expect(PageReuse(protecting: [3...4, 4...5, 7...7]).protected == [3...5, 7...7])
        // Adjacent ranges stay apart: a page born in 5 is not lumped with one born in 4.
        #expect(PageReuse(protecting: [4...4, 5...5]).segment(ofBirth: 4) != PageReuse(protecting: [4...4, 5...5]).segment(ofBirth: 5))
    }

    /// The benchmark's scenario at test size: 40 rewrites of 3,000 entries with one reader open
    /// from the start, on the writer's handle and on a second handle (another process's slot).
    @Test("a long reader grows the file by its own snapshot, not by the versions after it", arguments: [false, true])
    func longReaderGrowthIsBounded(onSecondHandle: Bool) throws {
        let directory = TemporaryDirectory()
        func rewrite(pinned: Bool) throws -> (size: UInt64, sound: Bool) {
            let path = directory.file("long-\(pinned)-\(onSecondHandle).arbor")
            let db = try Database.open(path: path)
            try db.update { tx in try fill(try tx.createTree("t"), count: 3_000, valueLength: 60) }
            let readerHandle = onSecondHandle ? try Database.open(path: path) : db
            let reader = pinned ? try readerHandle.beginRead() : nil
            let before = try reader?.tree("t").entries()
            for round in 1...40 {
                try db.update { tx in try fill(try tx.tree("t"), count: 3_000, valueLength: 60 + round % 3) }
            }
            if let reader, let before {
                #expect(try reader.tree("t").entries().elementsEqual(before) { $0.key == $1.key && $0.value == $1.value })
                reader.close()
            }
            return (try db.info().fileSize, db.checkIntegrity().isSound)
        }
        let free = try rewrite(pinned: false)
        let pinned = try rewrite(pinned: true)
        print("long reader (second handle: \(onSecondHandle)): \(pinned.size) bytes; without the reader \(free.size)")
        #expect(free.sound && pinned.sound)
        #expect(pinned.size <= 2 * free.size)
    }

    /// Random commits on two handles with readers of random age open on both: every reader keeps
    /// reading exactly its snapshot (compared with a copy taken when it began), the file passes
    /// the integrity check, and reused pages keep its size bounded.
    @Test("readers of random age keep their snapshots while pages are reused", arguments: [UInt64(1), 2, 3])
    func readersKeepSnapshots(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("readers.arbor")
        var options = Database.Options()
        if seed == 2 { options.durability = .normal(Database.SyncSchedule(commits: 7, interval: nil)) }
        let handles = [try Database.open(path: path, options: options), try Database.open(path: path, options: options)]
        try handles[0].update { tx in try fill(try tx.createTree("t"), count: 400, valueLength: 50) }
        var random = SplitMix64(seed: seed)
        var model: [[UInt8]: [UInt8]] = [:]
        try handles[0].view { tx in for entry in try tx.tree("t").entries() { model[entry.key] = entry.value } }
        var readers: [(Transaction, [[UInt8]: [UInt8]])] = []
        for step in 0..<300 {
            switch random.next() % 8 {
            case 0, 1:
                readers.append((try handles[Int(random.next() % 2)].beginRead(), model))
            case 2:
                guard !readers.isEmpty else { continue }
                readers.remove(at: Int(random.next() % UInt64(readers.count))).0.close()
            case 3:
                // An aborted writer takes free pages and gives them back.
                let writer = try handles[Int(random.next() % 2)].beginWrite()
                for index in 0..<Int(1 + random.next() % 80) { try writer.tree("t").put(key(index * 7 % 600), [UInt8](repeating: 9, count: 90)) }
                writer.abort()
            default:
                let writer = handles[Int(random.next() % 2)]
                try writer.update { tx in
                    let tree = try tx.tree("t")
                    for _ in 0..<Int(1 + random.next() % 60) {
                        let index = Int(random.next() % 600)
                        if random.next() % 4 == 0 {
                            _ = try tree.delete(key(index))
                            model[key(index)] = nil
                        } else {
                            let value = [UInt8](repeating: UInt8(truncatingIfNeeded: step), count: Int(10 + random.next() % 200))
                            try tree.put(key(index), value)
                            model[key(index)] = value
                        }
                    }
                }
            }
            for (reader, snapshot) in readers where random.next() % 4 == 0 {
                let entries = try reader.tree("t").entries()
                #expect(entries.count == snapshot.count && entries.allSatisfy { snapshot[$0.key] == $0.value },
                        "step \(step): reader of \(reader.snapshotID)")
            }
        }
        for (reader, snapshot) in readers {
            let entries = try reader.tree("t").entries()
            #expect(entries.count == snapshot.count && entries.allSatisfy { snapshot[$0.key] == $0.value })
            reader.close()
        }
        try handles[1].sync()
        #expect(handles[0].checkIntegrity().isSound, "\(handles[0].checkIntegrity())")
    }

    /// A version 3 file (16-byte freelist keys, no births) made by 040ef49: its free pages are
    /// reused, its first commit writes version 4 with 24-byte keys, and both kinds of entry
    /// coexist in its freelist until the old ones are used up.
    @Test("a version 3 freelist is read, reused and upgraded")
    func versionThreeFreelist() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: try LegacyFormatTests.copyFixture("freelist-v3.arbor", into: directory))
        #expect(try db.info().formatVersion == 3)
        #expect(db.checkIntegrity().isSound)
        let free = try db.info().freePages
        #expect(free > 0)
        let expected = try db.view { tx in try tx.tree("entries").entries() }
        let size = try db.info().fileSize
        try db.update { tx in
            let tree = try tx.tree("entries")
            for (index, entry) in expected.enumerated() where index % 5 == 0 { try tree.put(entry.key, entry.value) }
        }
        #expect(try db.info().formatVersion == 4)
        #expect(try db.info().fileSize == size, "the old free pages were reused")
        #expect(try db.view { tx in try tx.tree("entries").entries() }.elementsEqual(expected) { $0.key == $1.key && $0.value == $1.value })
        #expect(db.checkIntegrity().isSound, "\(db.checkIntegrity())")
    }
}

/// Free pages listed by the meta page itself: small commits keep their frees there, larger ones
/// move everything into the freelist tree; either way every page is owned once and reused.
@Suite("Inline free pages: small commits' frees in the meta page")
struct InlineFreeTests {
    /// Commits freeing from 1 to 300 pages, around the meta page's capacity (97 for 4 KiB):
    /// after each, the integrity check accounts for every page, the meta page's list stays
    /// within its capacity, and the file stops growing once free pages exist.
    @Test("commits around the meta page's capacity keep every page accounted for")
    func aroundCapacity() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in try fill(try tx.createTree("t"), count: 6_000, valueLength: 100) }
        let capacity = Meta.maxInlineFree(pageSize: 4096)
        #expect(capacity == 97)
        var random = SplitMix64(seed: 5)
        var sawInline = false, sawTree = false
        for round in 0..<60 {
            // Rewriting n consecutive entries frees about n / 30 leaves and their parents.
            let count = [30, 2_800, 3_000, 3_200, 9_000][Int(random.next() % 5)]
            let start = Int(random.next() % 6_000)
            try db.update { tx in
                let tree = try tx.tree("t")
                for index in 0..<count { try tree.put(key((start + index) % 6_000), [UInt8](repeating: UInt8(round), count: 100)) }
            }
            let meta = db.state.withLock { $0.meta }
            #expect(meta.inlineFree.count <= capacity)
            if !meta.inlineFree.isEmpty { sawInline = true }
            if meta.freelist.count > 0 { sawTree = true }
            let report = db.checkIntegrity()
            #expect(report.isSound, "round \(round): \(report)")
        }
        #expect(sawInline && sawTree)
        let pages = db.state.withLock { $0.meta.pageCount }
        for round in 0..<20 {
            try db.update { tx in try tx.tree("t").put(key(round), [UInt8](repeating: 1, count: 100)) }
        }
        #expect(db.state.withLock { $0.meta.pageCount } == pages, "small commits reuse free pages")
    }

    /// A meta page whose inline free page lies outside the file is rejected with a typed error.
    @Test("an inline free page outside the file is reported, not trusted")
    func hostileInlineFreePage() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in try fill(try tx.createTree("t"), count: 200) }
        try db.update { tx in try fill(try tx.tree("t"), count: 200, valueLength: 41) }
        let meta = db.state.withLock { $0.meta }
        try #require(!meta.inlineFree.isEmpty)
        var image = file.currentBytes
        let offset = Int(meta.slot) * 4096 + Meta.Offset.inlineFree(pageSize: 4096)
        withUnsafeBytes(of: UInt32(1_000_000).littleEndian) { for (i, b) in $0.enumerated() { image[offset + i] = b } }
        resealPage(&image, page: Int(meta.slot))
        let page = Int(meta.slot) * 4096
        let damaged = image[page..<(page + 4096)].withUnsafeBytes { raw -> String in
            do { _ = try Meta.decode(raw, number: meta.slot); return "accepted" } catch { return "\(error)" }
        }
        #expect(damaged.contains("free page 1000000"), "\(damaged)")
        // Opening falls back to the other meta page, an earlier commit.
        let reopened = try Database.open(file: SimulatedFile(bytes: image))
        #expect(try reopened.info().transactionID == meta.txid - 1)
    }
}
