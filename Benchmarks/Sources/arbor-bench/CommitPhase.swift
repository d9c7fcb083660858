import ArborEngine
import ArgumentParser
import Foundation

/// `arbor-bench commit-phase`: small commits in a process of their own (spawned by `engine`
/// under `strace -c`), so that the syncs each side issues per commit are counted.
struct CommitPhase: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "commit-phase", shouldDisplay: false)

    @Option var engine: String
    /// `full` (Arbor .full, SQLite FULL) or `normal` (Arbor .normal, SQLite NORMAL).
    @Option var mode: String
    @Option var commits: Int
    @Option(name: .customLong("cache-mib")) var cacheMiB: Int
    @Option var directory: String
    @Option(help: "When the store is missing, first insert this many random entries (for profiling on its own).")
    var prepare = 0
    @Option(help: "Threads committing at once (`--commits` each), as the \"4 writers\" row does.")
    var threads = 1

    func run() throws {
        if prepare > 0, engine == "arbor" {
            let side = ArborSide(directory: directory, cacheMiB: cacheMiB)
            if !FileManager.default.fileExists(atPath: side.path("random")) {
                let data = Dataset(count: prepare, seed: 42)
                _ = try side.insert(data, order: data.randomOrder, name: "random")
            }
        } else if prepare > 0 {
            let side = try SQLiteSide(directory: directory, cacheMiB: cacheMiB)
            if !FileManager.default.fileExists(atPath: side.path("random")) {
                let data = Dataset(count: prepare, seed: 42)
                _ = try side.insert(data, order: data.randomOrder, name: "random")
            }
        }
        if threads > 1 {
            let seconds = engine == "arbor"
                ? try ConcurrentCommits.arbor(ArborSide(directory: directory, cacheMiB: cacheMiB), threads: threads, commits: commits, name: "random")
                : try ConcurrentCommits.sqlite(SQLiteSide(directory: directory, cacheMiB: cacheMiB), threads: threads, commits: commits, name: "random")
            print(String(format: "%@: %d threads x %d commits in %.1f ms", engine, threads, commits, seconds * 1000))
        } else if engine == "arbor" {
            _ = try ArborSide(directory: directory, cacheMiB: cacheMiB)
                .smallCommits(commits, name: "random", durability: mode == "full" ? .full : .normal)
        } else {
            _ = try SQLiteSide(directory: directory, cacheMiB: cacheMiB)
                .smallCommits(commits, name: "random", synchronous: mode == "full" ? "FULL" : "NORMAL")
        }
    }

    /// Syncs (`fsync` plus `fdatasync`) per commit of `commits` small commits, counted by strace
    /// in a child process; nil when strace is not installed.
    static func syncsPerCommit(engine: String, mode: String, commits: Int, cacheMiB: Int, directory: String) throws -> Double? {
        let strace = "/usr/bin/strace"
        guard FileManager.default.isExecutableFile(atPath: strace) else { return nil }
        let output = directory + "/strace-\(engine)-\(mode).txt"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strace)
        process.arguments = ["-f", "-c", "-e", "trace=fsync,fdatasync", "-o", output,
                             URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path,
                             "commit-phase", "--engine", engine, "--mode", mode, "--commits", "\(commits)",
                             "--cache-mib", "\(cacheMiB)", "--directory", directory]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError.wrongAnswer("\(engine) \(mode) commits under strace failed (exit \(process.terminationStatus))")
        }
        // strace -c: "% time  seconds  usecs/call  calls  errors  syscall" rows.
        var syncs = 0
        for line in try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let name = fields.last, name == "fsync" || name == "fdatasync", fields.count >= 5,
                  let calls = Int(fields[3]) else { continue }
            syncs += calls
        }
        return Double(syncs) / Double(commits)
    }
}
