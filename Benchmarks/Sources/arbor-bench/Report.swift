import Foundation

/// One measured comparison. `ratio` > 1 means Arbor is faster (or smaller, for sizes and memory).
struct BenchResult: Codable {
    var name: String
    var arbor: Double
    var sqlite: Double
    var unit: String
    var ratio: Double
    /// What the `sqlite` column measured when it is not SQLite (another Arbor path the row
    /// compares with); nil for SQLite.
    var peer: String?

    init(name: String, arbor: Double, sqlite: Double, unit: String, peer: String? = nil) {
        self.name = name
        self.arbor = arbor
        self.sqlite = sqlite
        self.unit = unit
        self.peer = peer
        // Every unit here is "lower is better" (time, bytes).
        self.ratio = arbor > 0 ? sqlite / arbor : 0
    }
}

struct BenchReport: Codable {
    var results: [BenchResult] = []

    /// Measures `times` times, prints the per-row medians and writes them to `json` if given.
    static func run(times: Int, json: String?, _ measureOnce: () throws -> BenchReport) throws {
        var all: [BenchReport] = []
        for run in 1...max(1, times) {
            if times > 1 { print("run \(run) of \(times)") }
            all.append(try measureOnce())
        }
        let report = median(of: all)
        report.printTable()
        if let json { try report.write(json: json) }
    }

    /// Per-row medians of several runs (same rows in the same order).
    static func median(of reports: [BenchReport]) -> BenchReport {
        guard let first = reports.first else { return BenchReport() }
        var merged = BenchReport()
        for (index, row) in first.results.enumerated() {
            let arbor = Clock.median(reports.map { $0.results[index].arbor })
            let sqlite = Clock.median(reports.map { $0.results[index].sqlite })
            merged.results.append(BenchResult(name: row.name, arbor: arbor, sqlite: sqlite, unit: row.unit, peer: row.peer))
        }
        return merged
    }

    func printTable() {
        let header = "benchmark".padding(toLength: 44, withPad: " ", startingAt: 0)
            + "arbor".leftPadded(14) + "sqlite".leftPadded(14) + "  unit".padding(toLength: 10, withPad: " ", startingAt: 0)
            + "ratio".leftPadded(8)
        print(header)
        print(String(repeating: "-", count: header.count))
        for result in results {
            print(result.name.padding(toLength: 44, withPad: " ", startingAt: 0)
                  + format(result.arbor).leftPadded(14) + format(result.sqlite).leftPadded(14)
                  + ("  " + result.unit).padding(toLength: 10, withPad: " ", startingAt: 0)
                  + String(format: "%.2fx", result.ratio).leftPadded(8) + (result.peer.map { "  (peer: \($0))" } ?? ""))
        }
        print("ratio = sqlite / arbor: above 1 means Arbor is faster (or smaller)")
    }

    func write(json path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    private func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : value >= 1 ? String(format: "%.2f", value) : String(format: "%.3f", value)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Wall-clock timing helpers.
enum Clock {
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}

/// Process memory from /proc/self/status, and resetting the peak (Linux).
enum Memory {
    static func kilobytes(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Double(line.split(separator: " ").dropFirst().first.map(String.init) ?? "0") ?? 0
        }
        return 0
    }

    /// Peak resident set size in MiB since the last `resetPeak`.
    static var peakMiB: Double { kilobytes("VmHWM") / 1024 }
    static var residentMiB: Double { kilobytes("VmRSS") / 1024 }

    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }
}

/// Deterministic pseudo-random numbers.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The operating system's file cache.
enum FileCache {
    /// Reads the files at `paths` through once, so that both engines' queries start with their
    /// file in the OS cache (and their own page caches as they were): otherwise the file written
    /// last (SQLite's, imported after Arbor's) is cached and the other may have been evicted,
    /// which measures the import order, not the engines.
    static func warm(_ paths: [String]) {
        for path in paths {
            guard let handle = FileHandle(forReadingAtPath: path) else { continue }
            defer { try? handle.close() }
            while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {}
        }
    }
}
