import ArborEngine
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench engine`: the storage engine against SQLite (GRDB, a WITHOUT ROWID table with a
/// BLOB primary key, WAL, synchronous=NORMAL) on N entries of 16-byte keys and 100-byte values.
struct EngineBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "engine",
        abstract: "ArborEngine vs SQLite: bulk and random insert, point gets, scans, ranges, small commits, a long reader.",
        discussion: "Example: swift run -c release arbor-bench engine --entries 1000000 --json engine.json")

    @Option(help: "Entries to insert.") var entries = 1_000_000
    @Option(name: .customLong("cache-mib"), help: "Page cache for both engines, MiB.") var cacheMiB = 64
    @Option(help: "Random point gets per round (5 rounds).") var gets = 200_000
    @Option(help: "Range scans of 100 entries per round (5 rounds).") var ranges = 10_000
    @Option(help: "Small commits (one put each).") var commits = 10_000
    @Option(name: .customLong("writer-commits"), help: "Small commits per thread of the 4 concurrent writers.") var writerCommits = 2_500
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench"
    @Option(help: "Write the results as JSON to this path.") var json: String?
    @Option(help: "Repeat everything this many times and report per-row medians (the machine is noisy).") var runs = 1

    func run() throws {
        try BenchReport.run(times: runs, json: json, measureOnce)
    }

    func measureOnce() throws -> BenchReport {
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let data = Dataset(count: entries, seed: 42)
        var report = BenchReport()
        print("engine benchmark: \(entries) entries (16-byte keys, 100-byte values), cache \(cacheMiB) MiB, in \(directory)")

        let arbor = ArborSide(directory: directory, cacheMiB: cacheMiB)
        let sqlite = try SQLiteSide(directory: directory, cacheMiB: cacheMiB)
        print("(inserts run in child processes; their peak resident memory growth is reported)")

        // 1–2. Inserts, each in a child process so its memory is measured alone.
        let arborSequential = try InsertPhase.spawn(engine: "arbor", order: "sequential", entries: entries, cacheMiB: cacheMiB, directory: directory)
        let sqliteSequential = try InsertPhase.spawn(engine: "sqlite", order: "sequential", entries: entries, cacheMiB: cacheMiB, directory: directory)
        report.results.append(.init(name: "sequential insert, 1 transaction", arbor: arborSequential.seconds * 1000,
                                    sqlite: sqliteSequential.seconds * 1000, unit: "ms"))
        let arborRandom = try InsertPhase.spawn(engine: "arbor", order: "random", entries: entries, cacheMiB: cacheMiB, directory: directory)
        let sqliteRandom = try InsertPhase.spawn(engine: "sqlite", order: "random", entries: entries, cacheMiB: cacheMiB, directory: directory)
        report.results.append(.init(name: "random insert, 1 transaction", arbor: arborRandom.seconds * 1000,
                                    sqlite: sqliteRandom.seconds * 1000, unit: "ms"))
        report.results.append(.init(name: "peak memory growth, sequential insert", arbor: arborSequential.peakGrowthMiB,
                                    sqlite: sqliteSequential.peakGrowthMiB, unit: "MiB"))
        report.results.append(.init(name: "peak memory growth, random insert", arbor: arborRandom.peakGrowthMiB,
                                    sqlite: sqliteRandom.peakGrowthMiB, unit: "MiB"))
        report.results.append(.init(name: "file size after sequential insert", arbor: arborSequential.fileMiB,
                                    sqlite: sqliteSequential.fileMiB, unit: "MiB"))
        report.results.append(.init(name: "file size after random insert", arbor: arborRandom.fileMiB,
                                    sqlite: sqliteRandom.fileMiB, unit: "MiB"))

        // Reads run on the randomly built stores (realistic fill).
        var probe = SplitMix(state: 7)
        let getKeys = (0..<gets).map { _ in Int(probe.next() % UInt64(entries)) }
        let rangeStarts = (0..<ranges).map { _ in Int(probe.next() % UInt64(entries)) }

        // 3. Random point gets.
        // Each round opens the store afresh (cold page cache, warm OS cache); every get is timed.
        let arborGets = try (0..<5).flatMap { _ in try arbor.gets(data, getKeys, name: "random") }
        let sqliteGets = try (0..<5).flatMap { _ in try sqlite.gets(data, getKeys, name: "random") }
        report.results.append(.init(name: "random point get, median", arbor: Clock.median(arborGets),
                                    sqlite: Clock.median(sqliteGets), unit: "µs/op"))
        report.results.append(.init(name: "random point get, p95", arbor: Clock.percentile(arborGets, 0.95),
                                    sqlite: Clock.percentile(sqliteGets, 0.95), unit: "µs/op"))
        // 4. Full scan.
        let arborScan = try (0..<3).map { _ in try arbor.fullScan(name: "random", expected: entries) * 1000 }
        let sqliteScan = try (0..<3).map { _ in try sqlite.fullScan(name: "random", expected: entries) * 1000 }
        report.results.append(.init(name: "full scan (median of 3)", arbor: Clock.median(arborScan),
                                    sqlite: Clock.median(sqliteScan), unit: "ms"))
        // 5. Range scans of 100 entries.
        let arborRanges = try (0..<5).map { _ in try arbor.ranges(data, rangeStarts, name: "random") / Double(ranges) * 1e6 }
        let sqliteRanges = try (0..<5).map { _ in try sqlite.ranges(data, rangeStarts, name: "random") / Double(ranges) * 1e6 }
        report.results.append(.init(name: "range scan of 100 entries (median of 5)", arbor: Clock.median(arborRanges),
                                    sqlite: Clock.median(sqliteRanges), unit: "µs/op"))
        // 6. Small commits, like for like: durable at return (Arbor .full, SQLite FULL in WAL
        // mode), and durable at the next scheduled sync (Arbor .normal: every 1,000 commits or
        // second) beside SQLite NORMAL (durable at the next checkpoint). Syncs per commit
        // counted with strace.
        let arborFull = try arbor.smallCommits(commits, name: "random", durability: .full)
        let sqliteFull = try sqlite.smallCommits(commits, name: "random", synchronous: "FULL")
        let arborNormal = try arbor.smallCommits(commits, name: "random", durability: .normal)
        let sqliteNormal = try sqlite.smallCommits(commits, name: "random", synchronous: "NORMAL")
        report.results.append(.init(name: "\(commits) small commits (arbor full / sqlite FULL)", arbor: arborFull * 1000,
                                    sqlite: sqliteFull * 1000, unit: "ms"))
        report.results.append(.init(name: "\(commits) small commits (arbor normal / sqlite NORMAL)", arbor: arborNormal * 1000,
                                    sqlite: sqliteNormal * 1000, unit: "ms"))
        // 7. Four threads committing at once, durable on return.
        let arborWriters = try ConcurrentCommits.arbor(arbor, threads: 4, commits: writerCommits, name: "random")
        let sqliteWriters = try ConcurrentCommits.sqlite(sqlite, threads: 4, commits: writerCommits, name: "random")
        report.results.append(.init(name: "4 writers x \(writerCommits) small commits (arbor full / sqlite FULL, 4 connections)",
                                    arbor: arborWriters * 1000, sqlite: sqliteWriters * 1000, unit: "ms"))
        // 8. A long reader open over 40 rewrites of 3,000 entries: the store's size with it and
        // without it (SQLite: database plus WAL).
        let arborLong = try LongReader.arbor(arbor)
        let sqliteLong = try LongReader.sqlite(sqlite)
        report.results.append(.init(name: "long reader: store size with the reader", arbor: arborLong.withReader / 1_048_576,
                                    sqlite: sqliteLong.withReader / 1_048_576, unit: "MiB"))
        report.results.append(.init(name: "long reader: size with / without the reader", arbor: arborLong.withReader / arborLong.withoutReader,
                                    sqlite: sqliteLong.withReader / sqliteLong.withoutReader, unit: "x"))
        for mode in ["full", "normal"] {
            let counted = 300
            guard let arborSyncs = try CommitPhase.syncsPerCommit(engine: "arbor", mode: mode, commits: counted, cacheMiB: cacheMiB, directory: directory),
                  let sqliteSyncs = try CommitPhase.syncsPerCommit(engine: "sqlite", mode: mode, commits: counted, cacheMiB: cacheMiB, directory: directory)
            else { print("(strace not installed: syncs per commit not counted)"); break }
            let label = mode == "full" ? "arbor full / sqlite FULL" : "arbor normal / sqlite NORMAL"
            report.results.append(.init(name: "syncs per small commit (\(label))", arbor: arborSyncs, sqlite: sqliteSyncs, unit: "syncs"))
        }

        if runs > 1 { report.printTable() }
        try? FileManager.default.removeItem(atPath: directory)
        return report
    }
}

/// N distinct random 16-byte keys and deterministic 100-byte values, stored flat.
struct Dataset {
    let count: Int
    let keyBytes: [UInt8]
    let valuePattern: [UInt8]
    let sortedOrder: [Int]
    let randomOrder: [Int]

    init(count: Int, seed: UInt64) {
        self.count = count
        var generator = SplitMix(state: seed)
        var keys = [UInt8](repeating: 0, count: count * 16)
        for index in 0..<count {
            // 8 random bytes then the index: distinct keys, uniformly spread.
            var random = generator.next()
            var ordinal = UInt64(index).bigEndian
            withUnsafeBytes(of: &random) { for b in 0..<8 { keys[index * 16 + b] = $0[b] } }
            withUnsafeBytes(of: &ordinal) { for b in 0..<8 { keys[index * 16 + 8 + b] = $0[b] } }
        }
        keyBytes = keys
        valuePattern = (0..<356).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
        sortedOrder = (0..<count).sorted { a, b in
            keys[(a * 16)..<(a * 16 + 16)].lexicographicallyPrecedes(keys[(b * 16)..<(b * 16 + 16)])
        }
        var shuffled = Array(0..<count)
        shuffled.shuffle(using: &generator)
        randomOrder = shuffled
    }

    func key(_ index: Int) -> [UInt8] { Array(keyBytes[(index * 16)..<(index * 16 + 16)]) }

    /// A random 16-byte key for the small-commit rows (0xEE padding keeps it apart from the data set's).
    static func commitKey(_ generator: inout SplitMix) -> [UInt8] {
        var key = [UInt8](repeating: 0xEE, count: 16)
        withUnsafeBytes(of: generator.next()) { for b in 0..<8 { key[b] = $0[b] } }
        return key
    }
    func value(_ index: Int) -> [UInt8] { Array(valuePattern[(index % 256)..<(index % 256 + 100)]) }
}

struct InsertResult: Codable {
    var seconds: Double
    var peakGrowthMiB: Double
    var fileMiB: Double
}

/// `arbor-bench insert-phase`: one insert run in its own process (spawned by `engine`), printing
/// its result as JSON so peak memory is that of this engine alone.
struct InsertPhase: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "insert-phase", shouldDisplay: false)

    @Option var engine: String
    @Option var order: String
    @Option var entries: Int
    @Option(name: .customLong("cache-mib")) var cacheMiB: Int
    @Option var directory: String

    func run() throws {
        let data = Dataset(count: entries, seed: 42)
        let order = self.order == "sequential" ? data.sortedOrder : data.randomOrder
        let result = engine == "arbor"
            ? try ArborSide(directory: directory, cacheMiB: cacheMiB).insert(data, order: order, name: self.order)
            : try SQLiteSide(directory: directory, cacheMiB: cacheMiB).insert(data, order: order, name: self.order)
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }

    static func spawn(engine: String, order: String, entries: Int, cacheMiB: Int, directory: String) throws -> InsertResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["insert-phase", "--engine", engine, "--order", order, "--entries", "\(entries)",
                             "--cache-mib", "\(cacheMiB)", "--directory", directory]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let line = String(decoding: output, as: UTF8.self).split(separator: "\n").last else {
            throw BenchError.wrongAnswer("\(engine) \(order) insert failed (exit \(process.terminationStatus))")
        }
        return try JSONDecoder().decode(InsertResult.self, from: Data(line.utf8))
    }
}
