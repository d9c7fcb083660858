@testable import ArborEngine
import Foundation
import Testing

/// Replacing a store file whole (a copy renamed over it) while it is open: writers of the old
/// file stop with `fileReplaced` instead of committing where no one looks, readers go on, and
/// `Database.withWriterLock(path:timeout:_:)` keeps every writer out while the replacement is made.
@Suite("Replacing a store file: the writer lock, writers of the old file, concurrent compactions")
struct FileReplacementTests {
    static func store(_ path: String, entries: Range<Int>, length: Int = 30) throws -> Database {
        let db = try Database.open(path: path)
        try db.update { tx in try fill(try tx.createTreeIfMissing("t"), count: entries.count, valueLength: length, start: entries.lowerBound) }
        return db
    }

    @Test("a writer of a replaced file fails with fileReplaced, its reads go on; a deleted one goes on")
    func writerOfReplacedFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("store.arbor"), other = directory.file("other.arbor")
        let old = try Self.store(path, entries: 0..<100)
        let replacement = try Self.store(other, entries: 500..<520)
        try replacement.compact(to: path)
        #expect(throws: ArborError.fileReplaced(path: path)) {
            try old.update { tx in try tx.tree("t").put(key(1_000), [1]) }
        }
        #expect(try old.view { try $0.tree("t").entries().count } == 100, "the old file is still read")
        let reopened = try Database.open(path: path)
        #expect(try reopened.view { try $0.tree("t").entries().count } == 20)
        try reopened.update { tx in try tx.tree("t").put(key(1_000), [1]) }

        // Deleted, as in SQLite: the open file stays usable (nothing else took its place).
        unlink(path)
        try reopened.update { tx in try tx.tree("t").put(key(1_001), [1]) }
        #expect(try reopened.view { try $0.tree("t").get(key(1_001)) } == [1])
        // Renamed away: the same file under another name, with nothing at the old path.
        _ = rename(other, directory.file("moved.arbor"))
        try replacement.update { tx in try tx.tree("t").put(key(2_000), [2]) }
        #expect(try Database.open(path: directory.file("moved.arbor")).view { try $0.tree("t").get(key(2_000)) } == [2])
    }

    @Test("a writer waits while withWriterLock holds the store's writer lock")
    func writerWaitsForTheLock() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("store.arbor")
        let db = try Self.store(path, entries: 0..<10)
        let released = Locked(false)
        let sawReleased = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        try Database.withWriterLock(path: path) {
            Thread.detachNewThread {
                do {
                    try db.update { tx in
                        sawReleased.withLock { $0 = released.withLock { $0 } }
                        try tx.tree("t").put(key(99), [9])
                    }
                } catch {
                    Issue.record("the waiting writer failed: \(error)")
                }
                done.signal()
            }
            Thread.sleep(forTimeInterval: 0.3)
            released.withLock { $0 = true }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(sawReleased.withLock { $0 } == true, "the writer committed only after the lock was released")
        #expect(try db.view { try $0.tree("t").get(key(99)) } == [9])
    }

    @Test("withWriterLock leaves no lock file it created, unless the store was opened meanwhile")
    func lockFileLeftAsFound() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("store.arbor")
        func lockFileExists() -> Bool { FileManager.default.fileExists(atPath: path + "-lock") }
        try Database.withWriterLock(path: path) { #expect(lockFileExists()) }
        #expect(!lockFileExists(), "no store: the lock file it created is gone")

        try Self.store(directory.file("source.arbor"), entries: 0..<10).compact(to: path)
        try Database.withWriterLock(path: path) {}
        #expect(!lockFileExists(), "a store no process has open: the lock file it created is gone")

        let opened = try Database.withWriterLock(path: path) { try Database.open(path: path) }
        #expect(lockFileExists(), "the store opened meanwhile keeps its lock file")
        try opened.update { tx in try tx.tree("t").put(key(50), [5]) }
        try Database.withWriterLock(path: path) {}
        #expect(lockFileExists())
    }

    @Test("a store created at a path while a replacer holds its lock opens the replacement")
    func createdDuringReplacement() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("store.arbor")
        let source = try Self.store(directory.file("source.arbor"), entries: 0..<25)
        let opened = Locked<Result<Database, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        try Database.withWriterLock(path: path) {
            Thread.detachNewThread {
                opened.withLock { $0 = Result { try Database.open(path: path) } }
                done.signal()
            }
            // The opener creates the empty file, then waits for the writer lock to write it.
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: path) && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
            Thread.sleep(forTimeInterval: 0.05)
            try source.compact(to: path)
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let db = try #require(try opened.withLock { $0 }?.get())
        #expect(try db.view { try $0.tree("t").entries().count } == 25, "the opener reads the store renamed into place")
        try db.update { tx in try tx.tree("t").put(key(99), [9]) }
    }

    @Test("two compactions to one path at once leave one whole copy and no temporary file")
    func concurrentCompactions() throws {
        let directory = TemporaryDirectory()
        let sources = try [Self.store(directory.file("a.arbor"), entries: 0..<30_000, length: 60),
                           Self.store(directory.file("b.arbor"), entries: 100_000..<120_000, length: 90)]
        let expected = try sources.map { db in try db.view { try $0.tree("t").entries() } }
        let target = directory.file("target.arbor")
        for round in 0..<8 {
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                do { try sources[index].compact(to: target) } catch { failures.withLock { $0.append("\(error)") } }
            }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round)")
            var options = Database.Options()
            options.readOnly = true
            let copy = try Database.open(path: target, options: options)
            #expect(copy.checkIntegrity().isSound, "round \(round)")
            let entries = try copy.view { try $0.tree("t").entries() }
            #expect(expected.contains { $0.count == entries.count && zip($0, entries).allSatisfy { $0.key == $1.key && $0.value == $1.value } },
                    "round \(round): the target is one of the two sources")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("compacting") }
        #expect(left.isEmpty, "\(left)")
    }
}
