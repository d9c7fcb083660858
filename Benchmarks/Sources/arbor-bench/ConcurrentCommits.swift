import ArborEngine
import Dispatch
import Foundation
import GRDB

/// The "4 writers" row of `engine`: threads each making small durable commits at once. Arbor:
/// one `.full` database shared by the threads (its group commit lets commits that meet share a
/// sync). SQLite: one connection (a `DatabasePool`) per thread, `synchronous=FULL`, WAL.
enum ConcurrentCommits {
    /// Seconds for `threads` threads × `commits` one-entry commits; checks every entry arrived.
    static func arbor(_ side: ArborSide, threads: Int, commits: Int, name: String) throws -> Double {
        let db = try side.open(name, durability: .full)
        let before = try db.view { try $0.tree("kv").count }
        let failure = Failure()
        let seconds = Clock.seconds {
            run(threads: threads) { thread in
                var generator = SplitMix(state: 7_000 + UInt64(thread))
                for _ in 0..<commits {
                    let key = Dataset.commitKey(&generator)
                    do {
                        try db.update { tx in try tx.tree("kv").put(key, [UInt8](repeating: 2, count: 100)) }
                    } catch {
                        failure.record(error)
                        return
                    }
                }
            }
        }
        try failure.check()
        let added = try db.view { try $0.tree("kv").count } - before
        guard added == threads * commits else { throw BenchError.wrongAnswer("arbor concurrent commits added \(added)") }
        return seconds
    }

    static func sqlite(_ side: SQLiteSide, threads: Int, commits: Int, name: String) throws -> Double {
        let pools = try (0..<threads).map { _ in try side.open(name, synchronous: "FULL") }
        let before = try pools[0].read { try Int.fetchOne($0, sql: "SELECT count(*) FROM kv") ?? 0 }
        let failure = Failure()
        let seconds = Clock.seconds {
            run(threads: threads) { thread in
                var generator = SplitMix(state: 7_000 + UInt64(thread))
                for _ in 0..<commits {
                    let key = Dataset.commitKey(&generator)
                    do {
                        try pools[thread].write { db in
                            try db.execute(sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)",
                                           arguments: [Data(key), Data(repeating: 2, count: 100)])
                        }
                    } catch {
                        failure.record(error)
                        return
                    }
                }
            }
        }
        try failure.check()
        let added = try pools[0].read { try Int.fetchOne($0, sql: "SELECT count(*) FROM kv") ?? 0 } - before
        guard added == threads * commits else { throw BenchError.wrongAnswer("sqlite concurrent commits added \(added)") }
        return seconds
    }

    /// Runs `body(thread)` on `threads` threads of their own at once and waits for all.
    private static func run(threads: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                body(thread)
                group.leave()
            }
        }
        group.wait()
    }

    private final class Failure: @unchecked Sendable {
        private let lock = NSLock()
        private var first: Error?
        func record(_ error: Error) { lock.withLock { if first == nil { first = error } } }
        func check() throws { if let first = lock.withLock({ first }) { throw first } }
    }
}
