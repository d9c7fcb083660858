import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// A group commit becomes visible to new readers when its group's sync publishes it, which may
/// happen on another thread before its own writer returns: by then the shared page cache must
/// hold the commit's pages, not the older images of the page numbers it reused.
@Suite("Group commit: what readers see of a commit its group publishes")
struct GroupCommitVisibilityTests {
    /// Three writers commit whole versions of 200 keys (group commits, a slow sync so that most
    /// commits defer their meta pages to a running sync) while two readers walk the newest
    /// snapshot: every snapshot holds one version of all 200 keys.
    @Test("readers of group commits published by another thread's sync see each commit's pages")
    func readersSeeCommitsWhole() throws {
        for round in 0..<15 {
            let db = try Database.open(file: SimulatedFile(syncMicroseconds: 1_000))
            try db.update { tx in
                let tree = try tx.createTree("t")
                for index in 0..<200 { try tree.put(key(index), Array("start".utf8)) }
            }
            let failures = Locked<[String]>([])
            let writersDone = Locked(false)
            let readersDone = DispatchSemaphore(value: 0)
            for _ in 0..<2 {
                Thread.detachNewThread {
                    defer { readersDone.signal() }
                    while !writersDone.withLock({ $0 }) {
                        do {
                            try db.view { tx in
                                let versions = Set(try tx.tree("t").entries().prefix(200).map(\.value))
                                if versions.count != 1 {
                                    failures.withLock { $0.append("snapshot \(tx.snapshotID) mixes \(versions.count) versions") }
                                }
                            }
                        } catch {
                            failures.withLock { $0.append("reader: \(error)") }
                            return
                        }
                    }
                }
            }
            GroupCommitTests.onThreads(3) { writer in
                do {
                    for number in 1...40 {
                        try db.update { tx in
                            let tree = try tx.tree("t")
                            for index in 0..<200 { try tree.put(key(index), Array("\(writer)-\(number)".utf8)) }
                            // A growing tree: leaves split, and freed pages are reused.
                            try tree.put(key(10_000 + writer * 1_000 + number), [UInt8](repeating: 1, count: 300))
                        }
                    }
                } catch {
                    failures.withLock { $0.append("writer \(writer): \(error)") }
                }
            }
            writersDone.withLock { $0 = true }
            for _ in 0..<2 { readersDone.wait() }
            let found = failures.withLock { $0 }
            #expect(found.isEmpty, "round \(round): \(found.prefix(3))")
            #expect(db.checkIntegrity().isSound)
            if !found.isEmpty { return }
        }
    }
}
