import Arbor
import ArborEngineTestSupport
import ArborTransit
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `arbor import gtfs --update` as a real process, killed at random moments: the store is the
/// old edition or the new one, never anything in between, and always sound.
@Suite("arbor import gtfs as a process: killed mid-way, two at once")
struct ImportProcessTests {
    /// The `arbor` executable built beside this test bundle.
    static func arborExecutable() throws -> URL {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = runner.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("arbor")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "arbor next to \(runner.path)"])
    }

    /// A feed of `stops` stops and `times` stop times; `edition` changes names and times.
    static func writeFeed(_ directory: URL, stops: Int, times: Int, edition: Int) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var stopRows = "stop_id,stop_name,stop_lat,stop_lon\n"
        for index in 0..<stops where !(edition == 2 && index % 50 == 7) {
            let name = edition == 2 && index % 10 == 0 ? "Stop \(index) neu" : "Stop \(index)"
            stopRows += "\(index),\(name),\(52 + Double(index % 100) / 100),\(13 + Double(index / 100) / 100)\n"
        }
        if edition == 2 { stopRows += "new1,Neu,52.9,13.9\n" }
        var timeRows = "trip_id,arrival_time,departure_time,stop_id\n"
        for index in 0..<times {
            let stop = (index * 7) % stops
            if edition == 2 && stop % 50 == 7 { continue }
            let seconds = 14_400 + (index * 37) % 60_000 + (edition == 2 && stop % 3 == 0 ? 60 : 0)
            let clock = String(format: "%02d:%02d:%02d", seconds / 3600, (seconds / 60) % 60, seconds % 60)
            timeRows += "T\(index / 20),\(clock),\(clock),\(stop)\n"
        }
        try Data(stopRows.utf8).write(to: directory.appendingPathComponent("stops.txt"))
        try Data(timeRows.utf8).write(to: directory.appendingPathComponent("stop_times.txt"))
    }

    /// A scratch directory with two editions of a feed (`writeFeed`) and a store of the first.
    struct Editions {
        let scratch: URL, first: URL, second: URL, store: URL

        init(_ label: String, stops: Int, times: Int) throws {
            scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("arbor-\(label)-\(UUID().uuidString)")
            first = scratch.appendingPathComponent("first")
            second = scratch.appendingPathComponent("second")
            store = scratch.appendingPathComponent("original.arbor")
            try ImportProcessTests.writeFeed(first, stops: stops, times: times, edition: 1)
            try ImportProcessTests.writeFeed(second, stops: stops, times: times, edition: 2)
            _ = try GTFSImporter.importFeed(from: first, into: store)
        }

        func remove() { try? FileManager.default.removeItem(at: scratch) }
    }

    /// The stores' contents: every stop with its name and departures in order.
    static func contents(_ url: URL) throws -> [String] {
        let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: url, options: PersistentStore.Options(readOnly: true))
        let store = try #require(container.persistentStoreCoordinator.persistentStores.first)
        #expect(store.checkIntegrity().isSound)
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var request = FetchRequest(entityName: "Stop")
            request.sortDescriptors = [ObjectSortDescriptor("stopID")]
            return try context.fetch(request, as: Stop.self).map { stop in
                "\(stop.stopID) \(stop.name) " + stop.stopTimes.map { String(Int($0.departureTime?.timeIntervalSince1970 ?? -1)) }.joined(separator: ",")
            }
        }
    }

    @Test("killed at random moments, the store is the old edition or the new one")
    func killedMidWay() throws {
        let executable = try Self.arborExecutable()
        let editions = try Editions("kill", stops: 1_000, times: 40_000)
        defer { editions.remove() }
        let (scratch, second, original) = (editions.scratch, editions.second, editions.store)
        let before = try Self.contents(original)

        func run(_ store: URL, killAfter delay: Double?) throws -> Int32 {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["import", "gtfs", second.path, store.path, "--update"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if let delay {
                Thread.sleep(forTimeInterval: delay)
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
            return process.terminationStatus
        }
        // One run to the end: the new edition, and how long an update takes.
        let finished = scratch.appendingPathComponent("finished.arbor")
        try FileManager.default.copyItem(at: original, to: finished)
        let started = Date()
        #expect(try run(finished, killAfter: nil) == 0)
        let duration = Date().timeIntervalSince(started)
        let after = try Self.contents(finished)
        #expect(after != before)

        var random = SplitMix64(seed: 77)
        var sawBefore = 0, sawAfter = 0
        for attempt in 0..<6 {
            let store = scratch.appendingPathComponent("killed-\(attempt).arbor")
            try FileManager.default.copyItem(at: original, to: store)
            let delay = duration * Double(random.next() % 1_000) / 900
            _ = try run(store, killAfter: delay)
            let state = try Self.contents(store)
            #expect(state == before || state == after, "killed after \(delay) s of \(duration) s")
            if state == before { sawBefore += 1 } else if state == after { sawAfter += 1 }
        }
        #expect(sawBefore > 0)
    }

    /// Two `arbor import gtfs` processes into one store at once, each feed with its own prefix:
    /// the second waits for the first's writer lock and imports into its result, so the store
    /// ends with both feeds (before, the later rename dropped the other import's feed).
    @Test("two imports into one store at once both land")
    func concurrentImports() throws {
        let executable = try Self.arborExecutable()
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("arbor-both-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let feed = scratch.appendingPathComponent("feed")
        try Self.writeFeed(feed, stops: 300, times: 10_000, edition: 1)
        for round in 0..<3 {
            let store = scratch.appendingPathComponent("both-\(round).arbor")
            let processes = try ["a:", "b:"].map { prefix in
                let process = Process()
                process.executableURL = executable
                process.arguments = ["import", "gtfs", feed.path, store.path, "--prefix", prefix]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                return process
            }
            for process in processes {
                process.waitUntilExit()
                #expect(process.terminationStatus == 0, "round \(round)")
            }
            let stops = try Self.contents(store)
            for prefix in ["a:", "b:"] {
                #expect(stops.filter { $0.hasPrefix(prefix) }.count == 300, "round \(round): the feed imported with \(prefix)")
            }
        }
    }

    @Test("with --writer-timeout, an import gives up while another process holds the store's writer lock, and changes nothing")
    func writerTimeout() throws {
        let executable = try Self.arborExecutable()
        let editions = try Editions("busy", stops: 200, times: 2_000)
        defer { editions.remove() }
        let (second, store) = (editions.second, editions.store)
        let before = try Self.contents(store)

        func run(_ extra: [String]) throws -> (status: Int32, errors: String) {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["import", "gtfs", second.path, store.path, "--update"] + extra
            process.standardOutput = FileHandle.nullDevice
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        // This process holds the lock, as an app's save would: the import waits 0.3 s, then fails.
        let start = ContinuousClock.now
        let busy = try PersistentStore.withWriterLock(at: store) { try run(["--writer-timeout", "0.3"]) }
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(busy.status != 0)
        #expect(busy.errors.contains("writer lock"), "\(busy.errors)")
        #expect(try Self.contents(store) == before)
        // Free: the same import lands.
        #expect(try run(["--writer-timeout", "5"]).status == 0)
        let after = try Self.contents(store)
        #expect(after != before)
        #expect(after.contains { $0.hasPrefix("new1 Neu") })
    }
}
