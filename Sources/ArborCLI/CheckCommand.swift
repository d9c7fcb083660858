import ArborEngine
import ArgumentParser

/// `arbor check FILE`: the full integrity check.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify every page, key order, page ownership, overflow chain and count.",
        discussion: "Exits 0 when the file is sound, 1 with every problem listed otherwise. Example: arbor check transit.arbor")

    @OptionGroup var store: StoreOptions

    struct Report: Codable {
        struct Problem: Codable {
            var page: UInt32?
            var kind: String
            var detail: String
        }
        var sound: Bool
        var trees: Int
        var entries: UInt64
        var pages: Int
        var problems: [Problem]
    }

    func run() throws {
        let db = try store.open()
        let result = db.checkIntegrity()
        let report = Report(
            sound: result.isSound, trees: result.treesChecked, entries: result.entriesChecked, pages: result.pagesChecked,
            problems: result.problems.map { Report.Problem(page: $0.page, kind: $0.kind.rawValue, detail: $0.detail) })
        if store.json {
            print(try jsonText(report))
        } else if result.isSound {
            print("ok: \(report.trees) trees, \(report.entries) entries, \(report.pages) pages")
        } else {
            for problem in result.problems { print(problem.description) }
            print("\(result.problems.count) problem\(result.problems.count == 1 ? "" : "s") found")
        }
        if !result.isSound { throw ExitCode(1) }
    }
}
