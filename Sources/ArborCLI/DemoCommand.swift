import Arbor
import ArborEngine
import ArborTransit
import ArgumentParser
import Foundation

/// `arbor demo`: the README's main job — generate a Berlin-shaped feed, import it, answer the
/// transit app's questions with plans and timings, and check the file.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Generate a Berlin-shaped GTFS feed, import it, and run the transit scenario's queries.",
        discussion: """
            Examples:
              arbor demo --small
              arbor demo --stops 12800 --stop-times 3000000 --keep /tmp/arbor-demo
            """)

    @Option(help: "Stops to generate.") var stops = 12_800
    @Option(name: .customLong("stop-times"), help: "Stop times to generate.") var stopTimes = 3_000_000
    @Flag(help: "A quick look: 1,000 stops and 50,000 stop times.") var small = false
    @Option(help: "Keep the feed and the store in this directory (default: a temporary one, removed after).") var keep: String?

    func run() throws {
        let (stopCount, timeCount) = small ? (1_000, 50_000) : (max(stops, 1), max(stopTimes, 0))
        let directory = URL(fileURLWithPath: keep ?? NSTemporaryDirectory() + "arbor-demo-\(UUID().uuidString.prefix(8))")
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        do {
            try runDemo(stops: stopCount, stopTimes: timeCount, directory: directory)
        } catch let error as GTFSError {
            printError("arbor: \(error)")
            throw ExitCode(3)
        } catch let code as ExitCode {
            throw code
        } catch {
            printError("arbor: \(error)")
            throw ExitCode(2)
        }
    }

    func runDemo(stops: Int, stopTimes: Int, directory: URL) throws {
        let feed = directory.appendingPathComponent("feed"), storeURL = directory.appendingPathComponent("transit.arbor")
        try? FileManager.default.removeItem(at: storeURL)
        print("Arbor demo: \(stops) stops, \(stopTimes) stop times, in \(directory.path)\n")

        var elapsed = try Self.time { try FeedGenerator(stops: stops, stopTimes: stopTimes).write(to: feed) }
        print(String(format: "1. generated a Berlin-shaped GTFS feed in %.1f s", elapsed))
        let display = ProgressDisplay()
        var imported = GTFSImportResult()
        elapsed = try Self.time { imported = try GTFSImporter.importFeed(from: feed, into: storeURL, progress: display.update) }
        display.finish()
        let rows = Double(imported.stops + imported.stopTimes)
        print(String(format: "2. imported %d stops and %d stop times in %.1f s (%.0f rows/s)\n", imported.stops, imported.stopTimes,
                     elapsed, rows / max(elapsed, 1e-9)))

        let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait { try questions(context) }
        try fileReport(storeURL, directory: directory)
    }

    /// The scenario's questions, around Alexanderplatz at 08:00.
    func questions(_ context: ManagedObjectContext) throws {
        let center = FeedGenerator.center
        let box = TransitQueries.box(around: center, meters: 800)

        var nearby: [(stop: Stop, meters: Double)] = []
        var statistics: [FetchStatistics] = []
        var elapsed = try Self.time {
            let request = TransitQueries.stopsRequest(in: box)
            nearby = TransitQueries.within(800, of: center, try context.fetch(request, as: Stop.self))
            statistics = try context.explain(request)
        }
        print("3. stops within 800 m of Alexanderplatz: \(nearby.count)" + Self.timing(elapsed))
        Self.printPlan(statistics)
        for (stop, meters) in nearby.prefix(5) { print(String(format: "     %5.0f m  %@", meters, stop.name)) }

        let window = (start: 8 * 3600, end: 8 * 3600 + 20 * 60)
        var departing: [(stop: Stop, meters: Double)] = []
        elapsed = try Self.time {
            let request = try TransitQueries.stopsRequest(in: box, departingBetween: window.start, and: window.end)
            departing = TransitQueries.within(800, of: center, try context.fetch(request, as: Stop.self))
            statistics = try context.explain(request)
        }
        print("\n4. of those, with a departure between 08:00 and 08:20: \(departing.count)" + Self.timing(elapsed))
        Self.printPlan(statistics)
        for (stop, meters) in departing.prefix(5) {
            let next = try TransitQueries.nextDeparture(at: stop, from: window.start, context: context)
            print(String(format: "     %5.0f m  %@  next %@", meters, stop.name, next.map(TransitQueries.clock) ?? "–"))
        }

        var found: [Stop] = []
        elapsed = try Self.time {
            let request = try TransitQueries.nameRequest(prefix: "u gorli")
            found = try context.fetch(request, as: Stop.self)
            statistics = try context.explain(request)
        }
        print("\n5. name BEGINSWITH[cd] \"u gorli\": \(found.count) stop\(found.count == 1 ? "" : "s")" + Self.timing(elapsed))
        Self.printPlan(statistics)
        for stop in found.prefix(5) { print("     \(stop.name) (\(stop.stopID))") }

        var count = 0
        var sum = 0.0
        let before = Self.residentMiB()
        elapsed = try Self.time {
            var request = FetchRequest(entityName: "StopTime")
            request.fetchBatchSize = 50
            for time in try context.fetchResults(request, as: StopTime.self) {
                count += 1
                sum += time.departureTime?.timeIntervalSince1970 ?? 0
            }
        }
        let peak = Self.peakResidentMiB()
        print(String(format: "\n6. paged through all %d stop times, 50 at a time: %.2f s (%.0f objects/s), resident memory %.0f MiB → peak %.0f MiB",
                     count, elapsed, Double(count) / max(elapsed, 1e-9), before, peak))
        print(String(format: "     mean departure %@", count > 0 ? TransitQueries.clock(Int(sum / Double(count))) : "–"))
    }

    func fileReport(_ storeURL: URL, directory: URL) throws {
        var options = Database.Options()
        options.readOnly = true
        let database = try Database.open(path: storeURL.path, options: options)
        var result = database.checkIntegrity()
        let elapsed = try Self.time { result = database.checkIntegrity() }
        let size = (try FileManager.default.attributesOfItem(atPath: storeURL.path)[.size] as? NSNumber)?.uint64Value ?? 0
        print("\n7. the store: \(displaySize(size)); check: " + (result.isSound ? "ok (\(result.pagesChecked) pages, \(result.entriesChecked) entries)"
                                                                  : "\(result.problems.count) problems") + Self.timing(elapsed))
        let compacted = directory.appendingPathComponent("transit-compact.arbor")
        try? FileManager.default.removeItem(at: compacted)
        let compaction = try database.compact(to: compacted.path, compress: true)
        print("   compacted and compressed for shipping: \(displaySize(compaction.compactedBytes)) (\(compacted.lastPathComponent), read-only)")
        if !result.isSound { throw ExitCode(1) }
    }

    static func time(_ body: () throws -> Void) throws -> Double {
        let started = ContinuousClock.now
        try body()
        return GTFSImportCommand.seconds(ContinuousClock.now - started)
    }

    static func timing(_ seconds: Double) -> String { String(format: "  (%.2f ms)", seconds * 1000) }

    static func printPlan(_ statistics: [FetchStatistics]) {
        for item in statistics { print("   plan: \(item.plan); examined \(item.rowsExamined), matched \(item.rowsMatched)") }
    }

    /// Resident memory now and at its peak (Linux `/proc/self/status`); 0 elsewhere.
    static func residentMiB() -> Double { statusValue("VmRSS:") }
    static func peakResidentMiB() -> Double { statusValue("VmHWM:") }

    private static func statusValue(_ key: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }),
              let kib = Double(line.dropFirst(key.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") else { return 0 }
        return kib / 1024
    }
}
