import ArborEngine
import ArgumentParser

/// `arbor compact FILE OUT [--compress]`: the VACUUM INTO of Arbor.
struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Write a compacted copy: no free pages, packed leaves; optionally LZ4-compressed and read-only.",
        discussion: """
            OUT is written completely or not at all; it may be FILE itself (compacted in place). Writers of OUT wait \
            until it is replaced; one that has the old file open must reopen it to write. \
            Example: arbor compact transit.arbor shipped.arbor --compress
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The compacted copy to write.") var output: String
    @Flag(help: "LZ4-compress leaves (the copy can then only be opened read-only).") var compress = false

    struct Report: Codable {
        var sourceBytes: UInt64
        var compactedBytes: UInt64
        var trees: Int
        var entries: UInt64
        var leaves: Int
        var compressedLeaves: Int
    }

    func run() throws {
        let db = try store.open()
        do {
            // OUT's writer lock is held until the copy is renamed over it: a store other processes
            // write to (FILE itself, compacted in place) loses no save made meanwhile.
            let result = try Database.withWriterLock(path: output) { try db.compact(to: output, compress: compress) }
            let report = Report(sourceBytes: result.sourceBytes, compactedBytes: result.compactedBytes, trees: result.trees,
                                entries: result.entries, leaves: result.leaves, compressedLeaves: result.compressedLeaves)
            if store.json {
                print(try jsonText(report))
            } else {
                let saved = report.sourceBytes > 0 ? 100 - Double(report.compactedBytes) * 100 / Double(report.sourceBytes) : 0
                print("\(store.file): \(displaySize(report.sourceBytes)) -> \(output): \(displaySize(report.compactedBytes)) "
                      + String(format: "(%.0f%% smaller)", saved))
                print("\(report.trees) trees, \(report.entries) entries, \(report.leaves) leaves"
                      + (compress ? " (\(report.compressedLeaves) compressed)" : ""))
            }
        } catch {
            throw store.fail(error)
        }
    }
}
