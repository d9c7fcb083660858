import ArborEngine
import ArborEngineTestSupport
import Foundation

import Testing

@Suite("Snapshot readers beside one writer")
struct ConcurrencyTests {
    /// The writer keeps an invariant in every commit (all 200 values equal the commit number and an
    /// extra key counts the commits); readers on other threads must always see it whole.
    @Test("readers always see one consistent committed state while a writer commits")
    func readersSeeConsistentSnapshots() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: directory.file("concurrent.arbor"))
        try db.update { tx in
            let tree = try tx.createTree("t")
            for i in 0..<200 { try tree.put(key(i), Array("0".utf8)) }
        }
        let commits = 150
        let failures = Locked<[String]>([])
        let snapshotsRead = Locked(0)
        let done = Locked(false)
        let finished = DispatchSemaphore(value: 0)
        let readers = 2
        for _ in 0..<readers {
            Thread.detachNewThread {
                while !done.withLock({ $0 }) {
                    do {
                        try db.view { tx in
                            let tree = try tx.tree("t")
                            let entries = try tree.entries()
                            let values = Set(entries.prefix(200).map(\.value))
                            guard let value = values.first, values.count == 1,
                                  let number = Int(String(decoding: value, as: UTF8.self)) else {
                                failures.withLock { $0.append("snapshot \(tx.snapshotID) mixes \(values.count) values") }
                                return
                            }
                            if entries.count != 200 + number / 2 || tree.count != entries.count {
                                failures.withLock { $0.append("snapshot of commit \(number) has \(entries.count) entries") }
                            }
                        }
                        snapshotsRead.withLock { $0 += 1 }
                    } catch { failures.withLock { $0.append("reader: \(error)") } }
                }
                finished.signal()
            }
        }
        // Let the readers start before the writer does.
        while snapshotsRead.withLock({ $0 }) < 2 { usleep(1000) }
        do {
            for number in 1...commits {
                try db.update { tx in
                    let tree = try tx.tree("t")
                    for i in 0..<200 { try tree.put(key(i), Array("\(number)".utf8)) }
                    if number % 2 == 0 { try tree.put(key(1000 + number), [1]) }
                }
            }
        } catch { failures.withLock { $0.append("writer: \(error)") } }
        done.withLock { $0 = true }
        for _ in 0..<readers { finished.wait() }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        #expect(snapshotsRead.withLock { $0 } > 10)
        print("concurrency: \(commits) commits, \(snapshotsRead.withLock { $0 }) reader snapshots verified")
        #expect(db.checkIntegrity().isSound)
    }

    /// A reader on a second handle (its own lock-file slot, as another process has) pins its
    /// snapshot: the writer on the first handle must not reuse its pages, however many commits run.
    /// The reader's page cache is far smaller than the tree (and the tree has more leaves than a
    /// transaction remembers), so its second pass reads the file again.
    @Test("a reader through another handle keeps its snapshot while the writer reuses pages")
    func readerOnSecondHandleIsProtected() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("two-handles.arbor")
        let writerHandle = try Database.open(path: path)
        try writerHandle.update { tx in try fill(try tx.createTree("t"), count: 3000, valueLength: 600) }
        let readerHandle = try Database.open(path: path, options: Database.Options(cacheBytes: 8 * Limits.defaultPageSize))
        let reader = try readerHandle.beginRead()
        let before = try reader.tree("t").entries()
        let sizeBefore = try writerHandle.info().fileSize
        for round in 1...40 {
            try writerHandle.update { tx in try fill(try tx.tree("t"), count: 3000, valueLength: 600 + round % 3) }
        }
        let pinnedSize = try writerHandle.info().fileSize
        let after = try reader.tree("t").entries()
        #expect(after.count == before.count)
        #expect(zip(after, before).allSatisfy { $0.key == $1.key && $0.value == $1.value })
        reader.close()
        // Once the reader is gone, freed pages are reused: the file stops growing.
        for round in 1...40 {
            try writerHandle.update { tx in try fill(try tx.tree("t"), count: 3000, valueLength: 600 + round % 3) }
        }
        let unpinnedGrowth = try writerHandle.info().fileSize - pinnedSize
        print("long reader: file grew from \(sizeBefore) to \(pinnedSize) bytes over 40 rewrites of 3,000 entries while pinned; \(unpinnedGrowth) bytes over 40 more after release")
        #expect(pinnedSize > sizeBefore)
        #expect(unpinnedGrowth < pinnedSize - sizeBefore)
        #expect(readerHandle.checkIntegrity().isSound)
    }

    @Test("a write transaction waits for the other writer; aborting discards everything")
    func writersSerializeAndAbortDiscards() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: directory.file("writers.arbor"))
        let tx = try db.beginWrite()
        try fill(try tx.createTree("t"), count: 100)
        tx.abort()
        #expect(try db.view { try $0.hasTree("t") } == false)
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<25 {
                do {
                    try db.update { tx in
                        let tree = try tx.createTreeIfMissing("counter")
                        let current = try tree.get([1]).map { Int(String(decoding: $0, as: UTF8.self)) ?? 0 } ?? 0
                        try tree.put([1], Array("\(current + 1)".utf8))
                    }
                    counter.withLock { $0 += 1 }
                } catch { Issue.record("\(error)") }
            }
        }
        let value = try db.view { try $0.tree("counter").get([1]) }
        #expect(value == Array("100".utf8))
    }
}
