import ArgumentParser

@main
struct ArborBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arbor-bench",
        abstract: "Benchmarks Arbor against SQLite (through GRDB) on the same data, in one run.",
        subcommands: [EngineBenchmark.self, ObjectsBenchmark.self, TransitBenchmark.self, BulkBenchmark.self, InsertPhase.self, CommitPhase.self, TransitOpen.self, TransitProfile.self, MigrateBenchmark.self, FRCBenchmark.self, SearchBenchmark.self, SearchProfile.self, AccessorBenchmark.self])
}
