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
    @Flag(help: "Print one JSON report at the end instead of text.") var json = false

    /// What the demo found, for `--json`.
    struct Report: Codable {
        struct Step: Codable {
            var question: String
            var answer: Int
            var milliseconds: Double
            var plans: [String]
            var examples: [String]
        }
        var stops = 0
        var stopTimes = 0
        var generateSeconds = 0.0
        var importSeconds = 0.0
        var steps: [Step] = []
        var fileBytes: UInt64 = 0
        var sound = false
        var problems = 0
        var shippedBytes: UInt64 = 0
    }

    /// Collects the report and prints text as the demo goes (unless `--json`).
    final class Recorder {
        var report = Report()
        let quiet: Bool
        init(quiet: Bool) { self.quiet = quiet }
        func say(_ text: String) { if !quiet { Swift.print(text) } }
        func step(_ question: String, _ answer: Int, _ seconds: Double, _ statistics: [FetchStatistics], _ examples: [String]) {
            report.steps.append(Report.Step(question: question, answer: answer, milliseconds: seconds * 1000,
                                            plans: statistics.map { "\($0.plan); \($0.counts)" },
                                            examples: examples))
            say(question + ": \(answer)" + DemoCommand.timing(seconds))
            for item in statistics { say("   plan: \(item.plan); \(item.counts)") }
            for example in examples { say("     " + example) }
        }
    }

    func run() throws {
        let (stopCount, timeCount) = small ? (1_000, 50_000) : (max(stops, 1), max(stopTimes, 0))
        let directory = URL(fileURLWithPath: keep ?? NSTemporaryDirectory() + "arbor-demo-\(UUID().uuidString.prefix(8))")
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        let recorder = Recorder(quiet: json)
        do {
            try runDemo(stops: stopCount, stopTimes: timeCount, directory: directory, recorder)
            if json { print(try jsonText(recorder.report)) }
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

    func runDemo(stops: Int, stopTimes: Int, directory: URL, _ recorder: Recorder) throws {
        let feed = directory.appendingPathComponent("feed"), storeURL = directory.appendingPathComponent("transit.arbor")
        try? FileManager.default.removeItem(at: storeURL)
        recorder.say("Arbor demo: \(stops) stops, \(stopTimes) stop times, in \(directory.path)\n")

        var elapsed = try Self.time { try FeedGenerator(stops: stops, stopTimes: stopTimes).write(to: feed) }
        recorder.report.generateSeconds = elapsed
        recorder.say(String(format: "1. generated a Berlin-shaped GTFS feed in %.1f s", elapsed))
        let display = ProgressDisplay()
        var imported = GTFSImportResult()
        elapsed = try Self.time { imported = try GTFSImporter.importFeed(from: feed, into: storeURL, progress: display.update) }
        display.finish()
        recorder.report.stops = imported.stops
        recorder.report.stopTimes = imported.stopTimes
        recorder.report.importSeconds = elapsed
        let rows = Double(imported.stops + imported.stopTimes)
        recorder.say(String(format: "2. imported %d stops and %d stop times in %.1f s (%.0f rows/s)\n", imported.stops, imported.stopTimes,
                            elapsed, rows / max(elapsed, 1e-9)))

        let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: storeURL)
        let context = container.newBackgroundContext()
        try context.performAndWait { try questions(context, recorder) }
        try fileReport(storeURL, directory: directory, recorder)
    }

    /// The scenario's questions, around Alexanderplatz at 08:00.
    func questions(_ context: ManagedObjectContext, _ recorder: Recorder) throws {
        let center = FeedGenerator.center
        let box = TransitQueries.box(around: center, meters: 800)

        var nearby: [(stop: Stop, meters: Double)] = []
        var statistics: [FetchStatistics] = []
        var elapsed = try Self.time {
            let request = TransitQueries.stopsRequest(in: box)
            nearby = TransitQueries.within(800, of: center, try context.fetch(request, as: Stop.self))
            statistics = try context.explain(request)
        }
        recorder.step("3. stops within 800 m of Alexanderplatz", nearby.count, elapsed, statistics,
                      nearby.prefix(5).map { String(format: "%5.0f m  %@", $0.meters, $0.stop.name) })

        let window = (start: 8 * 3600, end: 8 * 3600 + 20 * 60)
        var departing: [(stop: Stop, meters: Double)] = []
        elapsed = try Self.time {
            let request = try TransitQueries.stopsRequest(in: box, departingBetween: window.start, and: window.end)
            departing = TransitQueries.within(800, of: center, try context.fetch(request, as: Stop.self))
            statistics = try context.explain(request)
        }
        let departures = try departing.prefix(5).map { item -> String in
            let next = try TransitQueries.nextDeparture(at: item.stop, from: window.start, context: context)
            return String(format: "%5.0f m  %@  next %@", item.meters, item.stop.name, next.map(TransitQueries.clock) ?? "–")
        }
        recorder.say("")
        recorder.step("4. of those, with a departure between 08:00 and 08:20", departing.count, elapsed, statistics, departures)

        /// Asks a question of stop names: the answer, its plan and time, the first five stops.
        func names(_ question: String, _ request: FetchRequest) throws {
            var found: [Stop] = []
            let elapsed = try Self.time {
                found = Array(try context.fetch(request, as: Stop.self))
                statistics = try context.explain(request)
            }
            recorder.say("")
            recorder.step(question, found.count, elapsed, statistics, found.prefix(5).map { "\($0.name) (\($0.stopID))" })
        }
        try names("5. stops whose name BEGINSWITH[cd] \"u gorli\"", try TransitQueries.nameRequest(prefix: "u gorli"))
        // The seed's free-text search: words from the middle of a name, in any order.
        try names("6. stops with words beginning \"bahn gorli\" (WORDSBEGINWITH[cd])", try TransitQueries.wordsRequest("bahn gorli"))
        try names("7. stops whose name CONTAINS[cd] \"damm\"", try TransitQueries.containsRequest("damm"))

        var count = 0
        var sum = 0.0
        Self.resetPeakResident()  // so the peak below is the paging's, not the import's
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
        recorder.say("")
        recorder.step("8. stop times paged through, 50 at a time", count, elapsed, [], [
            String(format: "%.0f objects/s; resident memory %.0f MiB before, peak %.0f MiB", Double(count) / max(elapsed, 1e-9), before, peak),
            "mean departure " + (count > 0 ? TransitQueries.clock(Int(sum / Double(count))) : "–"),
        ])
        try departureList(context, recorder)
    }

    /// Every stop time as a list in sections by stop name, as a departures screen shows it.
    func departureList(_ context: ManagedObjectContext, _ recorder: Recorder) throws {
        var request = FetchRequest(entityName: "StopTime",
                                   sortDescriptors: [ObjectSortDescriptor("stop.name"), ObjectSortDescriptor("departureTime")])
        request.fetchBatchSize = 50
        let controller = FetchedResultsController<StopTime>(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "stop.name")
        let elapsed = try Self.time { try controller.performFetch() }
        let sections = controller.sections ?? []
        var examples = [String(format: "%d stop times in %d sections, %d index titles", controller.count, sections.count,
                               controller.sectionIndexTitles.count)]
        for section in sections.prefix(3) {
            let first = section.objects.first.flatMap { ($0 as? StopTime)?.departureTime }
            examples.append("\(section.name): \(section.numberOfObjects) departures, first "
                + (first.map { TransitQueries.clock(Int($0.timeIntervalSince1970)) } ?? "–"))
        }
        recorder.say("")
        recorder.step("9. all stop times as a list in sections by stop (fetched results controller)", sections.count, elapsed, [], examples)
    }

    func fileReport(_ storeURL: URL, directory: URL, _ recorder: Recorder) throws {
        var options = Database.Options()
        options.readOnly = true
        let database = try Database.open(path: storeURL.path, options: options)
        var result = database.checkIntegrity()
        let elapsed = try Self.time { result = database.checkIntegrity() }
        let size = (try FileManager.default.attributesOfItem(atPath: storeURL.path)[.size] as? NSNumber)?.uint64Value ?? 0
        recorder.report.fileBytes = size
        recorder.report.sound = result.isSound
        recorder.report.problems = result.problems.count
        recorder.say("\n10. the store: \(displaySize(size)); check: " + (result.isSound ? "ok (\(result.pagesChecked) pages, \(result.entriesChecked) entries)"
                                                                           : "\(result.problems.count) problems") + Self.timing(elapsed))
        let compacted = directory.appendingPathComponent("transit-compact.arbor")
        try? FileManager.default.removeItem(at: compacted)
        let compaction = try database.compact(to: compacted.path, compress: true)
        recorder.report.shippedBytes = compaction.compactedBytes
        recorder.say("   compressed for shipping: \(displaySize(compaction.compactedBytes)) (\(compacted.lastPathComponent), read-only)")
        if !result.isSound { throw ExitCode(1) }
    }

    static func time(_ body: () throws -> Void) throws -> Double {
        let started = ContinuousClock.now
        try body()
        return GTFSImportCommand.seconds(ContinuousClock.now - started)
    }

    static func timing(_ seconds: Double) -> String { String(format: "  (%.2f ms)", seconds * 1000) }

    /// Starts a new peak-resident-memory measurement (Linux: writing 5 to `clear_refs` resets
    /// VmHWM); does nothing where that is not possible.
    static func resetPeakResident() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
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
