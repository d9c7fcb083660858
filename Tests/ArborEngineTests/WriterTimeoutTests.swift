@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// `Database.Options.writerTimeout`: a writer waits at most that long for another thread's or
/// another handle's (process's) write transaction, then throws `writerBusy` having written
/// nothing; without a timeout it waits for as long as the other writer takes.
@Suite("Writer timeout: waiting for the writer lock at most so long")
struct WriterTimeoutTests {
    static let key = Array("k".utf8)

    static func options(timeout: Duration?) -> Database.Options {
        var options = Database.Options()
        options.writerTimeout = timeout
        return options
    }

    /// Holds `db`'s write transaction on another thread until `release` is signalled, then
    /// commits `value` under `key`; `held` is signalled once it holds it.
    static func holdWriter(_ db: Database, value: UInt8, held: DispatchSemaphore, release: DispatchSemaphore,
                           done: DispatchSemaphore) {
        Thread.detachNewThread {
            defer { done.signal() }
            guard let transaction = try? db.beginWrite() else {
                held.signal()
                return
            }
            held.signal()
            release.wait()
            do {
                try transaction.createTreeIfMissing("t").put(key, [value])
                try transaction.commit()
            } catch {
                transaction.abort()
            }
        }
    }

    @Test("another handle's writer gives up after its timeout, writes nothing, and writes once the lock is free",
          arguments: [Duration.zero, .milliseconds(150), .milliseconds(-5)])
    func anotherHandle(timeout: Duration) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("timeout.arbor")
        let first = try Database.open(path: path)
        let second = try Database.open(path: path, options: Self.options(timeout: timeout))
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Self.holdWriter(first, value: 1, held: held, release: release, done: done)
        held.wait()
        let start = ContinuousClock.now
        #expect(throws: ArborError.writerBusy(path: path, waited: timeout)) {
            try second.update { tx in try tx.createTreeIfMissing("t").put(Array("other".utf8), [2]) }
        }
        let waited = ContinuousClock.now - start
        #expect(waited >= timeout && waited < timeout + .seconds(20), "gave up after \(waited)")
        release.signal()
        done.wait()
        // The first writer's commit is there, the second's failed write is not; it writes now.
        try second.update { tx in try tx.tree("t").put(Array("later".utf8), [3]) }
        try first.view { tx in
            let tree = try tx.tree("t")
            #expect(try tree.get(Self.key) == [1])
            #expect(try tree.get(Array("other".utf8)) == nil)
            #expect(try tree.get(Array("later".utf8)) == [3])
        }
        #expect(second.checkIntegrity().isSound)
    }

    @Test("a thread waiting behind another thread's write transaction of the same handle gives up after the timeout")
    func sameHandle() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: directory.file("threads.arbor"), options: Self.options(timeout: .milliseconds(100)))
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Self.holdWriter(db, value: 1, held: held, release: release, done: done)
        held.wait()
        #expect(throws: ArborError.writerBusy(path: db.path, waited: .milliseconds(100))) { _ = try db.beginWrite() }
        release.signal()
        done.wait()
        try db.update { tx in try tx.tree("t").put(Self.key, [2]) }
        #expect(try db.view { tx in try tx.tree("t").get(Self.key) } == [2])
    }

    @Test("without a timeout, a writer waits for the other handle's commit and builds on it")
    func noTimeoutWaits() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("wait.arbor")
        let first = try Database.open(path: path)
        let second = try Database.open(path: path)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Self.holdWriter(first, value: 7, held: held, release: release, done: done)
        held.wait()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
        let start = ContinuousClock.now
        let seen = try second.update { tx in try tx.tree("t").get(Self.key) }
        #expect(ContinuousClock.now - start >= .milliseconds(250))
        #expect(seen == [7])
        done.wait()
    }

    @Test("a replacer with a timeout gives up while a transaction holds the lock, without running its body",
          arguments: [Duration.zero, .milliseconds(150), .milliseconds(-5)])
    func replacerGivesUp(timeout: Duration) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("replace.arbor")
        let db = try Database.open(path: path)
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Self.holdWriter(db, value: 4, held: held, release: release, done: done)
        held.wait()
        var ran = false
        let start = ContinuousClock.now
        #expect(throws: ArborError.writerBusy(path: path, waited: max(timeout, .zero))) {
            try Database.withWriterLock(path: path, timeout: timeout) { ran = true }
        }
        let waited = ContinuousClock.now - start
        #expect(!ran)
        #expect(waited >= timeout && waited < timeout + .seconds(20), "gave up after \(waited)")
        release.signal()
        done.wait()
        // Free again: the replacer runs, and sees the commit it waited behind.
        let seen = try Database.withWriterLock(path: path, timeout: .milliseconds(150)) {
            try Database.open(path: path, options: Database.Options(readOnly: true)).view { tx in try tx.tree("t").get(Self.key) }
        }
        #expect(seen == [4])
    }

    @Test("a writer with a timeout gives up while a replacer holds the lock; a replacer without one waits for the commit")
    func writerBehindReplacer() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("behind.arbor")
        let db = try Database.open(path: path, options: Self.options(timeout: .milliseconds(100)))
        try Database.withWriterLock(path: path, timeout: .seconds(5)) {
            #expect(throws: ArborError.writerBusy(path: path, waited: .milliseconds(100))) {
                try db.update { tx in try tx.createTreeIfMissing("t").put(Self.key, [1]) }
            }
        }
        try db.update { tx in try tx.createTreeIfMissing("t").put(Self.key, [2]) }

        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Self.holdWriter(db, value: 9, held: held, release: release, done: done)
        held.wait()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
        let start = ContinuousClock.now
        let seen = try Database.withWriterLock(path: path) {
            try Database.open(path: path, options: Database.Options(readOnly: true)).view { tx in try tx.tree("t").get(Self.key) }
        }
        #expect(ContinuousClock.now - start >= .milliseconds(250))
        #expect(seen == [9])
        done.wait()
    }
}
