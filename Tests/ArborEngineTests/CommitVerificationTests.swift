@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// One sync per durable commit: the meta page lists the pages its commit wrote, and opening
/// passes over a meta page whose pages did not all reach the disk (Spec/file-format.md,
/// section 8).
@Suite("One-sync commits and their check on open")
struct CommitVerificationTests {
    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    /// A store with `entries` entries committed, then one small commit of `key(1_000_000)`.
    static func storeWithSmallLastCommit(_ file: SimulatedFile, entries: Int = 2_000) throws -> Database {
        let db = try Database.open(file: file)
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<entries { try tree.put(key(number), Array(repeating: UInt8(number % 251), count: 40)) }
        }
        try db.update { tx in try tx.tree("t").put(key(1_000_000), [7]) }
        return db
    }

    @Test("a durable commit syncs once, in either durability mode")
    func oneSyncPerCommit() throws {
        for durability in [Database.Durability.full, .deferredMetaSync] {
            let file = SimulatedFile()
            var options = Database.Options()
            options.durability = durability
            let db = try Database.open(file: file, options: options)
            try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
            let before = file.syncCount
            for number in 1...50 {
                try db.update { tx in try tx.tree("t").put(Self.key(number), Array(repeating: 1, count: 100)) }
            }
            #expect(file.syncCount - before == 50, "\(durability): \(file.syncCount - before) syncs for 50 commits")
        }
    }

    @Test("a commit of more pages than a meta page lists syncs its pages first and lists none")
    func largeCommitSyncsTwice() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        let before = file.syncCount
        try db.update { tx in
            let tree = try tx.tree("t")
            for number in 0..<20_000 { try tree.put(Self.key(number), Array(repeating: 3, count: 60)) }
        }
        #expect(file.syncCount - before == 2)
        // Its meta page lists nothing: damage anywhere is found by the integrity check, not by
        // falling back.
        let reopened = try Database.open(file: SimulatedFile(bytes: file.currentBytes))
        #expect(try reopened.view { try $0.tree("t").count } == 20_000)
    }

    @Test("a meta page that reached the disk without one of its pages is passed over, silently")
    func missingPageFallsBack() throws {
        let file = SimulatedFile()
        let db = try Self.storeWithSmallLastCommit(file)
        let image = file.currentBytes
        let newest = try db.info().transactionID
        // Every page the last commit wrote, in turn, back to what the commit before left there
        // (as if its write never reached the disk).
        let previousFile = SimulatedFile()
        let previous = try Database.open(file: previousFile)
        try previous.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<2_000 { try tree.put(Self.key(number), Array(repeating: UInt8(number % 251), count: 40)) }
        }
        let before = previousFile.currentBytes
        var tried = 0
        for page in 2..<(image.count / 4096) {
            let range = (page * 4096)..<((page + 1) * 4096)
            let changed = range.upperBound > before.count || image[range] != before[range]
            guard changed else { continue }
            var damaged = image
            if range.upperBound <= before.count {
                damaged.replaceSubrange(range, with: before[range])
            } else {
                damaged.replaceSubrange(range, with: [UInt8](repeating: 0, count: 4096))
            }
            let reopened = try Database.open(file: SimulatedFile(bytes: damaged))
            #expect(try reopened.info().transactionID == newest - 1, "page \(page)")
            #expect(try reopened.view { try $0.tree("t").get(Self.key(1_000_000)) } == nil)
            #expect(reopened.checkIntegrity().isSound, "page \(page): \(reopened.checkIntegrity())")
            // The next commit overwrites the passed-over meta page and is read back.
            try reopened.update { tx in try tx.tree("t").put(Self.key(5), [5]) }
            #expect(try reopened.view { try $0.tree("t").get(Self.key(5)) } == [5])
            tried += 1
        }
        #expect(tried >= 3)
    }

    @Test("a damaged page of the newest commit opens the commit before and is reported")
    func damagedPageIsReported() throws {
        let file = SimulatedFile()
        let db = try Self.storeWithSmallLastCommit(file)
        let newest = try db.info().transactionID
        let image = file.currentBytes
        var reported = 0
        for page in 2..<(image.count / 4096) {
            var damaged = image
            damaged[page * 4096 + 2000] ^= 0x10
            guard let reopened = try? Database.open(file: SimulatedFile(bytes: damaged)),
                  try reopened.info().transactionID == newest - 1 else { continue }
            let report = reopened.checkIntegrity()
            #expect(report.problems.contains { $0.kind == .incompleteCommit && $0.page == PageID(page) }, "\(report)")
            reported += 1
        }
        #expect(reported >= 3)
    }

    @Test("the file is cut short of the newest commit: the one before opens when it fits")
    func shortFileFallsBack() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        let size = file.currentBytes.count
        // The next commit grows the file by new pages; a power cut loses the growth.
        try db.update { tx in
            let tree = try tx.tree("t")
            for number in 1..<200 { try tree.put(Self.key(number), Array(repeating: 9, count: 100)) }
        }
        #expect(file.currentBytes.count > size)
        let cut = Array(file.currentBytes.prefix(size))
        let reopened = try Database.open(file: SimulatedFile(bytes: cut))
        #expect(try reopened.view { try $0.tree("t").count } == 1)
        #expect(reopened.checkIntegrity().isSound)
    }

    @Test("a crash after recovering from a crash still leaves a committed state")
    func crashAfterRecovery() throws {
        let initial = SimulatedFile()
        _ = try Database.open(file: initial)
        let start = initial.currentBytes
        let reference = SimulatedFile(bytes: start)
        let states = try CrashRecoveryTests.runWorkload(try Database.open(file: reference), seed: 41, transactions: 12)
        let points = reference.operationCount
        var verified = 0
        for first in stride(from: 1, to: points, by: 5) {
            let crashed = SimulatedFile(bytes: start, crashAfter: first)
            var acknowledged = 0
            do {
                _ = try CrashRecoveryTests.runWorkload(try Database.open(file: crashed), seed: 41, transactions: 12,
                                                       onCommitted: { acknowledged = $0 })
            } catch is SimulatedCrash {}
            let image = crashed.crashImage(mode: .reorderUnsynced, seed: UInt64(first))
            let recovered = CrashRecoveryTests.normalized(try CrashRecoveryTests.read(try Database.open(file: SimulatedFile(bytes: image))))
            // Second run: crash at every point of three more commits on the recovered image.
            let secondReference = SimulatedFile(bytes: image)
            try Self.threeCommits(try Database.open(file: secondReference))
            for second in 0..<secondReference.operationCount {
                let file = SimulatedFile(bytes: image, crashAfter: second)
                do { try Self.threeCommits(try Database.open(file: file)) } catch is SimulatedCrash {}
                for mode in CrashMode.allCases {
                    let reopened = try Database.open(file: SimulatedFile(bytes: file.crashImage(mode: mode, seed: UInt64(second))))
                    var found = CrashRecoveryTests.normalized(try CrashRecoveryTests.read(reopened))
                    found["second"] = nil
                    #expect(found == recovered, "first crash \(first), second \(second) (\(mode)): the recovered state changed")
                    #expect(recovered == CrashRecoveryTests.normalized(states[acknowledged])
                            || (acknowledged + 1 < states.count && recovered == CrashRecoveryTests.normalized(states[acknowledged + 1])))
                    #expect(reopened.checkIntegrity().isSound, "first crash \(first), second \(second) (\(mode))")
                    verified += 1
                }
            }
        }
        #expect(verified > 100)
    }

    @Test("a process crash, a new process's commits, then a power cut: a committed state")
    func processCrashThenPowerCut() throws {
        let initial = SimulatedFile()
        _ = try Database.open(file: initial)
        let start = initial.currentBytes
        let reference = SimulatedFile(bytes: start)
        _ = try CrashRecoveryTests.runWorkload(try Database.open(file: reference), seed: 43, transactions: 10)
        let points = reference.operationCount
        var verified = 0
        for first in stride(from: 2, to: points, by: 3) {
            let crashed = SimulatedFile(bytes: start, crashAfter: first)
            do { _ = try CrashRecoveryTests.runWorkload(try Database.open(file: crashed), seed: 43, transactions: 10) } catch is SimulatedCrash {}
            // What the next process sees (the OS cache survived the process).
            let seen = CrashRecoveryTests.normalized(try CrashRecoveryTests.read(try Database.open(file: crashed.afterProcessCrash())))
            let probe = crashed.afterProcessCrash()
            try Self.threeCommits(try Database.open(file: probe))
            let afterSecond = probe.operationCount
            for second in 0..<afterSecond {
                let file = crashed.afterProcessCrash(crashAfter: second)
                var committed = 0
                do {
                    let db = try Database.open(file: file)
                    for round in 0..<3 {
                        try Self.commit(round, db)
                        committed = round + 1
                    }
                } catch is SimulatedCrash {}
                for mode in CrashMode.allCases {
                    let reopened = try Database.open(file: SimulatedFile(bytes: file.crashImage(mode: mode, seed: UInt64(first * 100 + second))))
                    let report = reopened.checkIntegrity()
                    #expect(report.isSound, "first \(first), second \(second) (\(mode)) committed \(committed) syncs \(file.syncCount) ops \(file.operationCount): \(report)")
                    var found = CrashRecoveryTests.normalized(try CrashRecoveryTests.read(reopened))
                    let second = found["second"]
                    found["second"] = nil
                    // A committed round of the new process is durable, and so is what it saw.
                    if committed > 0 {
                        #expect(found == seen, "first \(first), second \(second) (\(mode)): the state the new process saw was lost")
                        #expect((second?.count ?? 0) >= committed * 40 - 35)
                    }
                    verified += 1
                }
            }
        }
        #expect(verified > 100)
    }

    /// Made from the version 3 fixture (written by 040ef49) by stamping its meta pages version 2:
    /// the two versions differ only by the commit page list, which version 2 has not.
    @Test("a version 2 file opens as it is, and its next commit writes the current version")
    func versionTwoFile() throws {
        let directory = TemporaryDirectory()
        let path = try LegacyFormatTests.copyFixture("freelist-v3.arbor", into: directory)
        var image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for page in 0..<2 {
            image[page * 4096 + 32] = 2
            resealPage(&image, page: page)
        }
        let old = try Database.open(file: SimulatedFile(bytes: image))
        #expect(try old.info().formatVersion == 2)
        let count = try old.view { try $0.tree("entries").count }
        #expect(count > 0)
        try old.update { tx in try tx.tree("entries").put(Self.key(3), [3]) }
        #expect(try old.info().formatVersion == Meta.formatVersion)
        #expect(try old.view { try $0.tree("entries").count } == count + 1)
        #expect(old.checkIntegrity().isSound)
    }

    static func commit(_ round: Int, _ db: Database) throws {
        try db.update { tx in
            let tree = try tx.createTreeIfMissing("second")
            for number in 0..<(round * 40 + 5) { try tree.put(key(number), Array(repeating: UInt8(round), count: 90)) }
        }
    }

    /// Three commits that add to tree "second" only (so the recovered trees stay as they were).
    static func threeCommits(_ db: Database) throws {
        for round in 0..<3 { try commit(round, db) }
    }
}
