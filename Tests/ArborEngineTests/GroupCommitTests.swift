import ArborEngineTestSupport
@testable import ArborEngine
import Foundation
import Testing

/// Group commit: `.full` commits of threads of one process that commit together share a sync,
/// every commit is durable when `commit()` returns, and a slow (or blocked) next writer delays
/// a waiting commit by at most the group wait plus one sync.
@Suite("Group commit: writers of one process share syncs")
struct GroupCommitTests {
    static func key(thread: Int, number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(thread)), .int64(Int64(number))]) }

    /// The keys of tree "t" a power cut right now would leave (unsynced writes lost).
    static func keysAfterPowerCut(_ file: SimulatedFile, mode: CrashMode = .loseUnsynced, seed: UInt64 = 1) throws -> Set<[UInt8]> {
        let image = file.crashImage(mode: mode, seed: seed)
        let db = try Database.open(file: SimulatedFile(bytes: image))
        return try db.view { tx in
            guard try tx.treeNames().contains("t") else { return [] }
            return Set(try tx.tree("t").entries().map(\.0))
        }
    }

    /// Runs `threads` threads of `commits` one-key commits each; every `checkEvery`-th commit,
    /// checks that a power cut right after it returned keeps it.
    static func runWriters(_ db: Database, _ file: SimulatedFile, threads: Int, commits: Int, checkEvery: Int) -> [String] {
        let failures = Locked<[String]>([])
        Self.onThreads(threads) { thread in
            for number in 0..<commits {
                do {
                    try db.update { tx in try tx.tree("t").put(Self.key(thread: thread, number: number), [UInt8(thread)]) }
                    if number % checkEvery == 0, try !Self.keysAfterPowerCut(file).contains(Self.key(thread: thread, number: number)) {
                        failures.withLock { $0.append("thread \(thread) commit \(number) not durable on return") }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(thread) commit \(number): \(error)") }
                    return
                }
            }
        }
        return failures.withLock { $0 }
    }

    /// Reopens what the disk may hold after `file`'s crash, in every crash model: each thread's
    /// commits present (commit `n` of thread `t` is key (t, n·`keyStride`)) form a prefix of its
    /// sequence holding every acknowledged one, and the file is sound. Returns the images checked.
    static func checkCrashImages(of file: SimulatedFile, crashPoint: Int, acknowledged: [Int: Int],
                                 commits: [Int], keyStride: Int) throws -> Int {
        for (modeIndex, mode) in CrashMode.allCases.enumerated() {
            let reopened = try Database.open(file: SimulatedFile(bytes: file.crashImage(mode: mode, seed: UInt64(crashPoint * 3 + modeIndex))))
            let keys: Set<[UInt8]> = try reopened.view { tx in
                try tx.treeNames().contains("t") ? Set(try tx.tree("t").entries().map(\.0)) : []
            }
            for (thread, count) in commits.enumerated() {
                let present = (0..<count).filter { keys.contains(Self.key(thread: thread, number: $0 * keyStride)) }
                #expect(present == Array(0..<present.count), "crash \(crashPoint) (\(mode)): thread \(thread) has a gap")
                #expect(present.count >= acknowledged[thread, default: 0],
                        "crash \(crashPoint) (\(mode)): thread \(thread) lost an acknowledged commit")
            }
            #expect(reopened.checkIntegrity().isSound, "crash \(crashPoint) (\(mode))")
        }
        return CrashMode.allCases.count
    }

    /// Runs `body(thread)` on `count` threads of their own (not a pool that may run them one
    /// after another) and waits for all.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let done = DispatchGroup()
        for thread in 0..<count {
            done.enter()
            Thread.detachNewThread {
                body(thread)
                done.leave()
            }
        }
        done.wait()
    }

    @Test("four threads committing together share syncs, and each commit is durable on return")
    func sharedSyncs() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in _ = try tx.createTree("t") }
        let before = file.syncCount
        let failures = Self.runWriters(db, file, threads: 4, commits: 300, checkEvery: 25)
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        let syncs = file.syncCount - before
        print("group commit: \(syncs) syncs for 1,200 commits of 4 threads")
        #expect(syncs < 1_200, "no commit shared a sync: \(syncs) syncs")
        #expect(try Self.keysAfterPowerCut(file).count == 1_200)
        #expect(db.checkIntegrity().isSound)
    }

    /// Commits of more pages than a meta page lists sync their pages first and treat the
    /// snapshot's meta page as durable: among small commits whose meta pages a running sync's
    /// runner still owes, every commit of either kind is durable on return, and a power cut
    /// at the end (in every crash model) keeps them all.
    @Test("large commits among deferred small ones stay durable and the file sound")
    func largeCommitsAmongDeferredOnes() throws {
        // A slow sync: small commits arrive while it runs and leave their meta pages to it.
        let file = SimulatedFile(syncMicroseconds: 2_000)
        let db = try Database.open(file: file)
        try db.update { tx in _ = try tx.createTree("t") }
        let failures = Locked<[String]>([])
        Self.onThreads(4) { thread in
            for number in 0..<(thread == 0 ? 6 : 60) {
                do {
                    try db.update { tx in
                        let tree = try tx.tree("t")
                        // Thread 0: about 330 leaves a commit, past the 256 pages a meta page lists.
                        for index in 0..<(thread == 0 ? 2_000 : 1) {
                            try tree.put(Self.key(thread: thread, number: number * 10_000 + index), [UInt8](repeating: UInt8(thread), count: thread == 0 ? 600 : 8))
                        }
                    }
                    for mode in CrashMode.allCases where thread == 0 || number % 10 == 0 {
                        if try !Self.keysAfterPowerCut(file, mode: mode, seed: UInt64(number)).contains(Self.key(thread: thread, number: number * 10_000)) {
                            failures.withLock { $0.append("thread \(thread) commit \(number) not durable on return (\(mode))") }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(thread) commit \(number): \(error)") }
                    return
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(5))")
        for (index, mode) in CrashMode.allCases.enumerated() {
            let image = file.crashImage(mode: mode, seed: UInt64(index))
            let reopened = try Database.open(file: SimulatedFile(bytes: image))
            #expect(try reopened.view { try $0.tree("t").count } == 6 * 2_000 + 3 * 60, "\(mode)")
            #expect(reopened.checkIntegrity().isSound, "\(mode)")
        }
        #expect(db.checkIntegrity().isSound)
    }

    /// The crash points of the workload above at a smaller size: wherever the disk stops, in
    /// every crash model, each thread keeps a prefix of its commits holding every acknowledged one.
    @Test("a crash while large commits meet deferred small ones keeps every acknowledged commit")
    func crashAmongLargeAndDeferredCommits() throws {
        let initial = SimulatedFile()
        try Database.open(file: initial).update { tx in _ = try tx.createTree("t") }
        let start = initial.currentBytes
        let commits = [3, 25, 25]
        func workload(_ db: Database, acknowledged: Locked<[Int: Int]>) {
            Self.onThreads(3) { thread in
                for number in 0..<commits[thread] {
                    do {
                        try db.update { tx in
                            let tree = try tx.tree("t")
                            for index in 0..<(thread == 0 ? 1_200 : 1) {
                                try tree.put(Self.key(thread: thread, number: number * 10_000 + index), [UInt8](repeating: 1, count: thread == 0 ? 800 : 8))
                            }
                        }
                        acknowledged.withLock { $0[thread] = number + 1 }
                    } catch { return }
                }
            }
        }
        let probe = SimulatedFile(bytes: start, syncMicroseconds: 1_000)
        workload(try Database.open(file: probe), acknowledged: Locked([:]))
        let total = probe.operationCount
        var tried = 0
        for crashPoint in stride(from: 3, to: total, by: max(1, total / 24)) {
            let file = SimulatedFile(bytes: start, crashAfter: crashPoint, syncMicroseconds: 1_000)
            let acknowledged = Locked<[Int: Int]>([:])
            if let db = try? Database.open(file: file) { workload(db, acknowledged: acknowledged) }
            tried += try Self.checkCrashImages(of: file, crashPoint: crashPoint, acknowledged: acknowledged.withLock { $0 },
                                               commits: commits, keyStride: 10_000)
        }
        #expect(tried >= 60)
    }

    @Test("a waiting commit does not wait for a next writer that waits for it")
    func nextWriterBlockedOnWaitingCommit() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in _ = try tx.createTree("t") }
        let first = try db.beginWrite()
        try first.tree("t").put(Self.key(thread: 0, number: 0), [0])
        let firstReturned = DispatchSemaphore(value: 0)
        let secondDone = DispatchSemaphore(value: 0)
        let secondError = Locked<String?>(nil)
        Thread.detachNewThread {
            do {
                // Queued behind `first`; once it has the lock, it waits for `first` to return
                // from commit (as a thread holding a lock the first commit's caller wants).
                try db.update { tx in
                    firstReturned.wait()
                    try tx.tree("t").put(Self.key(thread: 1, number: 0), [1])
                }
            } catch {
                secondError.withLock { $0 = "\(error)" }
            }
            secondDone.signal()
        }
        while db.state.withLock({ $0.queuedWriters }) == 0 { usleep(100) }
        try first.commit()
        // The first commit is durable although the writer it left its sync to has not committed.
        #expect(try Self.keysAfterPowerCut(file).contains(Self.key(thread: 0, number: 0)))
        firstReturned.signal()
        secondDone.wait()
        #expect(secondError.withLock { $0 } == nil)
        #expect(try Self.keysAfterPowerCut(file).count == 2)
    }

    @Test("an aborting next writer still syncs the commit that waits for it")
    func abortingNextWriter() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in _ = try tx.createTree("t") }
        let first = try db.beginWrite()
        try first.tree("t").put(Self.key(thread: 0, number: 0), [0])
        let secondDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if let second = try? db.beginWrite() { second.abort() }
            secondDone.signal()
        }
        while db.state.withLock({ $0.queuedWriters }) == 0 { usleep(100) }
        let syncsBefore = file.syncCount
        try first.commit()
        secondDone.wait()
        #expect(try Self.keysAfterPowerCut(file).contains(Self.key(thread: 0, number: 0)))
        #expect(file.syncCount - syncsBefore == 1)
    }

    @Test("a crash at any point of concurrent commits keeps every acknowledged one", arguments: [UInt64(1), 2])
    func crashDuringGroupCommits(seed: UInt64) throws {
        // A first run counts the operations; crash runs then stop at points spread over them.
        // Thread interleavings differ between runs: each run checks its own acknowledgements.
        let initial = SimulatedFile()
        try Database.open(file: initial).update { tx in _ = try tx.createTree("t") }
        let start = initial.currentBytes
        let probe = SimulatedFile(bytes: start)
        _ = Self.runWriters(try Database.open(file: probe), probe, threads: 3, commits: 40, checkEvery: 1_000)
        let total = probe.operationCount
        var tried = 0
        for crashPoint in stride(from: Int(seed), to: total, by: max(1, total / 60)) {
            let file = SimulatedFile(bytes: start, crashAfter: crashPoint)
            let acknowledged = Locked<[Int: Int]>([:])  // thread -> commits returned
            do {
                let db = try Database.open(file: file)
                Self.onThreads(3) { thread in
                    for number in 0..<40 {
                        do {
                            try db.update { tx in try tx.tree("t").put(Self.key(thread: thread, number: number), [1]) }
                            acknowledged.withLock { $0[thread] = number + 1 }
                        } catch { return }
                    }
                }
            } catch {}
            tried += try Self.checkCrashImages(of: file, crashPoint: crashPoint, acknowledged: acknowledged.withLock { $0 },
                                               commits: [40, 40, 40], keyStride: 1)
        }
        #expect(tried >= 90)
    }
}
