import Arbor
import ArborTransit
import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `arbor import`: importers into Arbor stores.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import data into a store.",
        subcommands: [GTFSImportCommand.self])
}

/// `arbor import gtfs DIR OUT`: a transit store from a GTFS feed.
struct GTFSImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gtfs",
        abstract: "Build a transit store (stops, stop times) from a GTFS feed's stops.txt and stop_times.txt.",
        discussion: """
            OUT is written completely or left as it was: the import works on a copy and moves it into place \
            at the end, while readers of the old file go on reading it; other writers of OUT, and other imports \
            into it, wait until it ends. Importing into an existing store adds \
            the feed; give each feed its own --prefix so stop IDs stay apart. With --update, the feed is a new \
            edition of one in the store: stops are found by stop_id and updated, new ones added, the stop times \
            of stops whose timetable changed replaced, and stops that left the feed (those with the feed's \
            prefix) deleted with their stop times. Times become Dates that many seconds after \
            1970-01-01T00:00:00Z (25:10:00 is 90600 s).
            Examples:
              arbor import gtfs vbb/ transit.arbor
              arbor import gtfs vbb/ transit.arbor --skip-bad-rows
              arbor import gtfs hvv/ transit.arbor --prefix hvv:
              arbor import gtfs vbb-2026-12/ transit.arbor --update
            """)

    @Argument(help: "The feed directory (stops.txt, stop_times.txt).") var directory: String
    @Argument(help: "The store to create or add to.") var output: String
    @Option(help: "Prepended to the feed's stop IDs.") var prefix = ""
    @Flag(help: "The feed is a new edition of one in the store: update its stops and stop times, delete the stops it dropped.")
    var update = false
    @Flag(inversion: .prefixedNo, help: "Write the store compacted, as shipped (default: yes for a new store, no for --update).")
    var compact: Bool?
    @Flag(name: .customLong("skip-bad-rows"), help: "Skip rows that break the GTFS rules and count them, instead of failing.")
    var skipBadRows = false
    @Option(name: .customLong("batch-size"), help: "Stop times per batch insert, each one transaction (more: fewer commits, more memory).") var batchSize = GTFSImportOptions().batchSize
    @Option(name: .customLong("memory-mib"), help: "MiB of modified pages a batch keeps in memory before writing them early (less: less memory, a slower import).") var memoryMiB = GTFSImportOptions().maxDirtyBytes >> 20
    @Option(name: .customLong("writer-timeout"), help: "Seconds to wait while another process writes to the store (default: as long as it takes); then fail, writing nothing.")
    var writerTimeout: Double?
    @Flag(help: "Print the result as JSON.") var json = false

    struct Report: Codable {
        var stops: Int
        var stopTimes: Int
        var insertedStops: Int
        var updatedStops: Int
        var unchangedStops: Int
        var deletedStops: Int
        var stopTimesWritten: Int
        var stopTimesDeleted: Int
        var skippedRows: Int
        var firstSkipped: [String]
        var seconds: Double
        var fileBytes: UInt64
        var peakMemoryBytes: UInt64
    }

    func run() throws {
        var options = GTFSImportOptions()
        options.prefix = prefix
        options.skipBadRows = skipBadRows
        options.update = update
        options.compacts = compact
        options.batchSize = max(batchSize, 1)
        options.maxDirtyBytes = max(memoryMiB, 1) << 20
        if let writerTimeout {
            guard writerTimeout.isFinite else { throw ValidationError("--writer-timeout must be a number of seconds") }
            // Clamped: a billion seconds is "forever", and its milliseconds fit an Int64.
            options.writerTimeout = .milliseconds(Int64((min(max(writerTimeout, 0), 1e9) * 1000).rounded()))
        }
        let display = ProgressDisplay()
        let started = ContinuousClock.now
        let result: GTFSImportResult
        do {
            result = try GTFSImporter.importFeed(from: URL(fileURLWithPath: directory), into: URL(fileURLWithPath: output),
                                                 options: options, progress: display.update)
        } catch let error as GTFSError {
            display.finish()
            printError("arbor: \(directory)/\(error.description)")
            throw ExitCode(3)
        } catch {
            display.finish()
            printError("arbor: \(output): \(error)")
            throw ExitCode(2)
        }
        display.finish()
        let seconds = Self.seconds(ContinuousClock.now - started)
        let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? NSNumber)?.uint64Value ?? 0
        let peak = Self.peakMemoryBytes()
        let report = Report(stops: result.stops, stopTimes: result.stopTimes, insertedStops: result.insertedStops, updatedStops: result.updatedStops,
                            unchangedStops: result.unchangedStops, deletedStops: result.deletedStops, stopTimesWritten: result.stopTimesWritten,
                            stopTimesDeleted: result.stopTimesDeleted, skippedRows: result.skippedRows,
                            firstSkipped: result.firstSkipped.map(\.description), seconds: seconds, fileBytes: size, peakMemoryBytes: peak)
        if json {
            print(try jsonText(report))
            return
        }
        print("imported \(result.stops) stops and \(result.stopTimes) stop times into \(output) in "
              + String(format: "%.1f s (%.0f rows/s), %@; peak memory %@", seconds, Double(result.stops + result.stopTimes) / max(seconds, 1e-9),
                       displaySize(size), displaySize(peak)))
        if update {
            print("stops: \(result.insertedStops) inserted, \(result.updatedStops) updated, \(result.unchangedStops) unchanged, \(result.deletedStops) deleted; "
                  + "stop times: \(result.stopTimesWritten) written, \(result.stopTimesDeleted) deleted")
        }
        if result.skippedRows > 0 {
            print("skipped \(result.skippedRows) bad row\(result.skippedRows == 1 ? "" : "s"):")
            for error in result.firstSkipped { print("  \(error)") }
            if result.skippedRows > result.firstSkipped.count { print("  …") }
        }
    }

    /// The process's peak resident memory.
    static func peakMemoryBytes() -> UInt64 {
        var usage = rusage()
        #if os(Linux)
        let who = RUSAGE_SELF.rawValue
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return 0 }
        return UInt64(max(usage.ru_maxrss, 0)) * 1024  // kilobytes on Linux
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Import progress on standard error: a bar redrawn in place on a terminal, plain lines every
/// few seconds otherwise (logs, CI).
final class ProgressDisplay {
    private let isTerminal = isatty(STDERR_FILENO) != 0
    private var started = ContinuousClock.now
    private var lastLine = ContinuousClock.now
    private var file = ""
    private var drawn = false
    private var completed = false

    func update(_ progress: GTFSImportProgress) {
        if progress.file != file {
            if drawn && isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
            file = progress.file
            started = ContinuousClock.now
            completed = false
        }
        let elapsed = GTFSImportCommand.seconds(ContinuousClock.now - started)
        let fraction = progress.totalBytes > 0 ? Double(progress.bytesRead) / Double(progress.totalBytes) : 1
        let rate = Double(progress.rows) / max(elapsed, 1e-3)
        let remaining = fraction > 0.001 ? elapsed * (1 - fraction) / fraction : 0
        let eta = String(format: "%d:%02d", Int(remaining) / 60, Int(remaining) % 60)
        if isTerminal {
            let width = 30
            let filled = min(width, Int(fraction * Double(width)))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            let line = String(format: "\r%@ %@ %3.0f%%  %d rows  %.0f rows/s  ETA %@ ", file, bar, fraction * 100, progress.rows, rate, eta)
            FileHandle.standardError.write(Data(line.utf8))
            drawn = true
        } else if ContinuousClock.now - lastLine > .seconds(5) || (fraction >= 1 && !completed) {
            lastLine = ContinuousClock.now
            completed = fraction >= 1
            printError(String(format: "%@: %.0f%% (%d rows, %.0f rows/s, ETA %@)", file, fraction * 100, progress.rows, rate, eta))
        }
    }

    func finish() {
        if drawn && isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
    }
}
