import ArborEngineTestSupport
@testable import ArborEngine
import Foundation
import Testing

/// `.normal` durability (SQLite's `synchronous=NORMAL` in WAL mode): no sync per commit, every
/// commit atomic, durable at the next scheduled sync. Crash points are covered by
/// `CrashRecoveryTests`; these check when the syncs happen and what they make durable.
@Suite("Normal durability: syncs by schedule, every commit atomic")
struct NormalDurabilityTests {
    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    static func options(commits: Int, interval: Duration? = nil) -> Database.Options {
        var options = Database.Options()
        options.durability = .normal(Database.SyncSchedule(commits: commits, interval: interval))
        return options
    }

    /// The number of entries of tree "t" that a power cut right now would leave.
    static func countAfterPowerCut(_ file: SimulatedFile) throws -> Int {
        let image = file.crashImage(mode: .loseUnsynced, seed: 1)
        return try Database.open(file: SimulatedFile(bytes: image)).view { try $0.treeNames().contains("t") ? $0.tree("t").count : 0 }
    }

    @Test("syncs once per scheduled number of commits, and the synced commit survives a power cut")
    func syncsByCount() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: Self.options(commits: 10))
        try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        let before = file.syncCount
        for number in 1...49 {
            try db.update { tx in try tx.tree("t").put(Self.key(number), Array(repeating: 1, count: 100)) }
        }
        // The first commit synced before writing (nothing was known durable), then counted 1.
        #expect(file.syncCount - before == 5, "\(file.syncCount - before) syncs for 49 commits")
        #expect(try Self.countAfterPowerCut(file) == 50)
        try db.update { tx in try tx.tree("t").put(Self.key(50), [1]) }
        // Commit 51 is not synced: a power cut may take it, a process crash may not.
        #expect(try Self.countAfterPowerCut(file) == 50)
        let processCrash = try Database.open(file: SimulatedFile(bytes: file.currentBytes))
        #expect(try processCrash.view { try $0.tree("t").count } == 51)
    }

    @Test("sync() and releasing the database make every commit durable")
    func syncAndRelease() throws {
        let file = SimulatedFile()
        do {
            let db = try Database.open(file: file, options: Self.options(commits: 1000))
            try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
            for number in 1...5 { try db.update { tx in try tx.tree("t").put(Self.key(number), [1]) } }
            // Only the empty file was synced (before the first commit): no tree yet.
            #expect(try Self.countAfterPowerCut(file) == 0)
            try db.sync()
            #expect(try Self.countAfterPowerCut(file) == 6)
            // From inside a write transaction, sync() does not wait for the lock its caller holds.
            try db.update { tx in
                try tx.tree("t").put(Self.key(6), [1])
                try db.sync()
            }
            try db.update { tx in try tx.tree("t").put(Self.key(7), [1]) }
            #expect(try Self.countAfterPowerCut(file) == 6)
        }
        #expect(try Self.countAfterPowerCut(file) == 8)
    }

    @Test("the timed sync runs by itself after the interval")
    func timedSync() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: Self.options(commits: 1000, interval: .milliseconds(20)))
        try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        try db.update { tx in try tx.tree("t").put(Self.key(1), [1]) }
        // Waits for the sync by polling (bounded), not by timing it.
        let deadline = Date().addingTimeInterval(10)
        while try Self.countAfterPowerCut(file) < 2, Date() < deadline { usleep(5_000) }
        #expect(try Self.countAfterPowerCut(file) == 2)
        withExtendedLifetime(db) {}
    }

    @Test("scattered commits sync only when their pages outgrow a meta page's list")
    func scatteredCommitsSyncOnOverflow() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: Self.options(commits: 1_000_000))
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<20_000 { try tree.put(Self.key(number * 2), Array(repeating: 2, count: 40)) }
        }
        let before = file.syncCount
        var generator = SplitMix64(seed: 7)
        var expected = 20_000
        for _ in 0..<600 {
            let number = Int(generator.next() % 20_000) * 2 + 1
            let inserted = try db.update { tx in
                let tree = try tx.tree("t")
                let isNew = try tree.get(Self.key(number)) == nil
                try tree.put(Self.key(number), [3])
                return isNew
            }
            if inserted { expected += 1 }
        }
        let syncs = file.syncCount - before
        // About one leaf per commit accumulates in the list until 256 pages: a sync every ~200.
        #expect(syncs >= 1 && syncs <= 12, "\(syncs) syncs for 600 scattered commits")
        let afterPowerCut = try Self.countAfterPowerCut(file)
        #expect(afterPowerCut <= expected && afterPowerCut >= 20_000)
        let reopened = try Database.open(file: SimulatedFile(bytes: file.currentBytes))
        #expect(try reopened.view { try $0.tree("t").count } == expected)
        #expect(reopened.checkIntegrity().isSound)
    }

    @Test("one handle's sync makes another handle's normal commits durable (as two processes)")
    func syncAcrossHandles() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("normal.arbor")
        let a = try Database.open(path: path, options: Self.options(commits: 1000))
        let b = try Database.open(path: path, options: Self.options(commits: 1000))
        try a.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        for round in 1...10 {
            try a.update { tx in try tx.tree("t").put(Self.key(round), [1]) }
            try b.update { tx in try tx.tree("t").put(Self.key(100 + round), [2]) }
        }
        let newest = try a.currentMeta()
        #expect(!a.isKnownDurable(newest))
        try b.sync()
        #expect(a.isKnownDurable(try a.currentMeta()), "b's sync is not known to a")
        #expect(try a.view { try $0.tree("t").count } == 21)
        #expect(a.checkIntegrity().isSound)
    }
}
