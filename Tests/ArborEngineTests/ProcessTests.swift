@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real processes on one store (`ArborProcessHarness`): writers killed with SIGKILL at random
/// moments, two writer processes taking turns, a reader process keeping its snapshot while this
/// process rewrites everything.
@Suite("Processes: killed writers, writers taking turns, a reader in another process")
struct ProcessTests {
    /// A harness process whose standard output is collected until it exits.
    final class Harness: @unchecked Sendable {
        let process = Process()
        private let output = Pipe()
        private let input = Pipe()
        private let collected = Locked(Data())
        private let finished = DispatchSemaphore(value: 0)

        init(_ arguments: [String]) throws {
            process.executableURL = try Self.executable()
            process.arguments = arguments
            process.standardOutput = output
            process.standardInput = input
            process.standardError = FileHandle.standardError
            try process.run()
            let handle = output.fileHandleForReading
            Thread.detachNewThread { [collected, finished] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    collected.withLock { $0.append(chunk) }
                }
                finished.signal()
            }
        }

        /// The harness executable built beside this test bundle.
        static func executable() throws -> URL {
            var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent("ArborProcessHarness")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "ArborProcessHarness next to the test bundle"])
        }

        var lines: [String] {
            collected.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
        }

        /// Waits (up to `timeout` seconds) for an output line starting with `prefix`.
        func waitForLine(startingWith prefix: String, timeout: Double = 60) -> String? {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if let line = lines.first(where: { $0.hasPrefix(prefix) }) { return line }
                Thread.sleep(forTimeInterval: 0.005)
            }
            return nil
        }

        func send(_ line: String) {
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
        }

        func kill() {
            Glibc.kill(process.processIdentifier, SIGKILL)
        }

        /// Waits for the exit and the end of the output; the exit status (or the signal).
        @discardableResult
        func wait() -> Int32 {
            process.waitUntilExit()
            finished.wait()
            return process.terminationStatus
        }
    }

    static func key(_ prefix: String, _ index: Int) -> [UInt8] {
        Array(prefix.utf8) + withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) }
    }

    static func number(_ bytes: [UInt8]?) -> Int? {
        guard let bytes, bytes.count == 8 else { return nil }
        return Int(bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// SIGKILL at a random moment of a writer in each durability mode (four threads sharing group
    /// commits for "group"): the store opens, passes the check, holds every acknowledged commit
    /// (at most one unacknowledged one per thread besides), keeps its count consistent, and the
    /// next writer process commits on it.
    @Test("a writer killed at random moments loses no acknowledged commit", arguments: ["full", "normal", "group"])
    func killedWriter(mode: String) throws {
        let directory = TemporaryDirectory()
        var random = SplitMix64(seed: mode == "full" ? 1 : mode == "normal" ? 2 : 3)
        var totalAcked = 0
        for attempt in 0..<4 {
            let path = directory.file("killed-\(attempt).arbor")
            let writer = try Harness(["writer", path, mode, "1000000"])
            #expect(writer.waitForLine(startingWith: "acked") != nil, "the writer started committing")
            Thread.sleep(forTimeInterval: Double(random.next() % 300) / 1_000)
            writer.kill()
            writer.wait()
            #expect(writer.process.terminationReason == .uncaughtSignal)
            let acked = Set(writer.lines.compactMap { $0.hasPrefix("acked ") ? Int($0.dropFirst(6)) : nil })
            totalAcked += acked.count

            let db = try Database.open(path: path)
            let report = db.checkIntegrity()
            #expect(report.isSound, "\(mode) attempt \(attempt): \(report)")
            try db.view { tx in
                let tree = try tx.tree("t")
                var present: Set<Int> = []
                try tree.forEach(in: KeyRange.prefix(Array("k/".utf8))) { key, value in
                    guard let index = Self.number(Array(key.dropFirst(2))) else { return true }
                    present.insert(index)
                    #expect(value == [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1 + (index * 7_919) % 3_000))
                    return true
                }
                #expect(acked.isSubset(of: present), "\(mode): acknowledged commits lost: \(acked.subtracting(present).sorted().prefix(5))")
                #expect(present.count - acked.count <= (mode == "group" ? 4 : 1), "\(mode): \(present.count) present, \(acked.count) acknowledged")
                #expect(Self.number(try tree.get(Array("count".utf8))) == present.count, "the count and the entries were committed together")
            }
            // Another process carries on from the recovered state.
            let next = try Harness(["writer", path, mode, "20"])
            #expect(next.wait() == 0)
            #expect(try Database.open(path: path).checkIntegrity().isSound)
        }
        print("killed writer (\(mode)): \(totalAcked) acknowledged commits over 4 kills, all present")
    }

    /// Two processes each commit 200 read-increment-write transactions at once: no update is
    /// lost (the final count is 400) and the counts each commit saw are 0 to 399, each once.
    @Test("two writer processes take turns without losing an update")
    func writersTakeTurns() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("turns.arbor")
        let writers = try (1...2).map { try Harness(["turns", path, "\($0)", "200"]) }
        for writer in writers { #expect(writer.wait() == 0) }
        let db = try Database.open(path: path)
        #expect(db.checkIntegrity().isSound)
        try db.view { tx in
            let tree = try tx.tree("t")
            #expect(Self.number(try tree.get(Array("count".utf8))) == 400)
            var seen: [Int] = []
            for process in 1...2 {
                try tree.forEach(in: KeyRange.prefix(Array("t/\(process)/".utf8))) { _, value in
                    seen.append(Self.number(value) ?? -1)
                    return true
                }
            }
            #expect(seen.sorted() == Array(0..<400))
        }
    }

    /// Opening checks the pages the newest commit lists before any snapshot is registered, so
    /// another process's later commits may have freed and reused them meanwhile: a store opened
    /// 300 times while a writer process commits always opens, at a commit it does not pass over.
    @Test("a store opened while another process commits opens whole")
    func openWhileAnotherCommits() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("opening.arbor")
        let writer = try Harness(["writer", path, "normal", "1000000"])
        defer {
            writer.kill()
            writer.wait()
        }
        #expect(writer.waitForLine(startingWith: "acked") != nil, "the writer started committing")
        var failures: [String] = []
        for attempt in 0..<300 {
            do {
                let db = try Database.open(path: path)
                if let rejected = db.rejectedAtOpen { failures.append("open \(attempt) passed over transaction \(rejected.txid)") }
                try db.view { tx in _ = try tx.tree("t").get(Array("count".utf8)) }
            } catch {
                failures.append("open \(attempt): \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 300 opens: \(failures.prefix(3))")
        #expect(writer.lines.count > 10, "the writer kept committing while the store was opened")
    }

    /// A writer process commits while this process replaces its store, holding the writer lock
    /// (a compacted copy of another store renamed over it): the writer's next commit fails with
    /// `fileReplaced`, so it exits with status 1 instead of committing to a file no one opens
    /// again, and the path holds the replacement whole.
    @Test("a writer process whose store is replaced stops instead of writing to the old file")
    func writerOfReplacedStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("replaced.arbor")
        let writer = try Harness(["writer", path, "full", "1000000"])
        #expect(writer.waitForLine(startingWith: "acked") != nil, "the writer started committing")
        let replacement = try Database.open(path: directory.file("replacement.arbor"))
        try replacement.update { tx in try tx.createTree("t").put(Array("count".utf8), withUnsafeBytes(of: UInt64(7).bigEndian) { Array($0) }) }
        try Database.withWriterLock(path: path) { try replacement.compact(to: path) }
        let deadline = Date().addingTimeInterval(60)
        while writer.process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if writer.process.isRunning {
            writer.kill()
            Issue.record("the writer went on committing after its store was replaced")
        }
        #expect(writer.wait() == 1)
        let db = try Database.open(path: path)
        #expect(db.checkIntegrity().isSound)
        #expect(try db.view { Self.number(try $0.tree("t").get(Array("count".utf8))) } == 7)
    }

    /// A reader process takes a snapshot of 2,000 entries; this process then rewrites, deletes
    /// and re-inserts every entry 20 times; the reader's second read of its snapshot is
    /// identical, and the store passes the check.
    @Test("a reader in another process keeps its snapshot while this one rewrites everything")
    func readerProcessKeepsSnapshot() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("reader.arbor")
        let db = try Database.open(path: path)
        try db.update { tx in
            let tree = try tx.createTree("t")
            for index in 0..<2_000 { try tree.put(Self.key("k/", index), [UInt8](repeating: 1, count: 80)) }
        }
        let reader = try Harness(["reader", path])
        let snapshot = try #require(reader.waitForLine(startingWith: "snapshot"))
        for round in 0..<20 {
            try db.update { tx in
                let tree = try tx.tree("t")
                for index in 0..<2_000 {
                    if (index + round) % 5 == 0 {
                        _ = try tree.delete(Self.key("k/", index))
                    } else {
                        try tree.put(Self.key("k/", index), [UInt8](repeating: UInt8(round), count: 60 + round * 7 + index % 90))
                    }
                }
            }
        }
        reader.send("go")
        #expect(reader.wait() == 0)
        let words = snapshot.split(separator: " ")
        #expect(reader.lines.last == "same \(words[2]) \(words[3])")
        #expect(words[2] == "2000")
        #expect(db.checkIntegrity().isSound)
    }

    /// A writer process holds the write transaction: a writer here with a timeout gives up after
    /// it with `writerBusy`, having written nothing; one with a longer timeout gets the lock when
    /// the other process commits, and builds on its commit.
    @Test("a writer with a timeout gives up while another process writes, and gets the lock once it is done")
    func writerTimeoutAcrossProcesses() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("busy.arbor")
        try Database.open(path: path).update { tx in try tx.createTree("t").put(Array("count".utf8), Self.encode(5)) }
        let holder = try Harness(["holder", path])
        _ = try #require(holder.waitForLine(startingWith: "holding"))
        var options = Database.Options()
        options.writerTimeout = .milliseconds(300)
        let db = try Database.open(path: path, options: options)
        let start = ContinuousClock.now
        #expect(throws: ArborError.writerBusy(path: path, waited: .milliseconds(300))) { try db.update { tx in try tx.tree("t").put(Array("x".utf8), [1]) } }
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(300) && waited < .seconds(30), "gave up after \(waited)")
        // Released while a writer with a longer timeout waits: it takes the lock after the commit.
        var patient = options
        patient.writerTimeout = .seconds(60)
        let waiting = try Database.open(path: path, options: patient)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { holder.send("go") }
        try waiting.update { tx in
            let tree = try tx.tree("t")
            try tree.put(Array("count".utf8), Self.encode((Self.number(try tree.get(Array("count".utf8))) ?? 0) + 10))
        }
        #expect(holder.wait() == 0)
        #expect(holder.lines.last == "released")
        let (count, refused) = try db.view { tx in (try tx.tree("t").get(Array("count".utf8)), try tx.tree("t").get(Array("x".utf8))) }
        #expect(Self.number(count) == 16)
        #expect(refused == nil)
    }

    static func encode(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(value).bigEndian) { Array($0) } }
}
