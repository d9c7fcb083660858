import ArborEngine
import ArgumentParser

/// `arbor info FILE`: the file's header facts and its trees.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Format version, page size, transaction id, page counts and every tree.",
        discussion: "Example: arbor info transit.arbor")

    @OptionGroup var store: StoreOptions

    struct Report: Codable, Equatable {
        struct TreeRow: Codable, Equatable {
            var name: String
            var entries: UInt64
            var depth: Int
            var root: UInt32
        }
        var formatVersion: UInt32
        var pageSize: Int
        var transactionID: UInt64
        var pageCount: UInt32
        var freePages: UInt64
        var fileSize: UInt64
        var compressed: Bool
        var trees: [TreeRow]
    }

    static func report(_ db: Database) throws -> Report {
        let info = try db.info()
        return Report(
            formatVersion: info.formatVersion, pageSize: info.pageSize, transactionID: info.transactionID,
            pageCount: info.pageCount, freePages: info.freePages, fileSize: info.fileSize, compressed: info.isCompressed,
            trees: info.trees.map { Report.TreeRow(name: $0.name, entries: $0.info.count, depth: $0.info.depth, root: $0.info.root) })
    }

    static func render(_ report: Report) -> String {
        var lines = [
            "format version   \(report.formatVersion)",
            "page size        \(report.pageSize)",
            "transaction id   \(report.transactionID)",
            "pages            \(report.pageCount) (\(report.freePages) free)",
            "file size        \(report.fileSize) bytes (\(displaySize(report.fileSize)))",
            "compressed       \(report.compressed ? "yes (read-only)" : "no")",
            "trees            \(report.trees.count)",
        ]
        for tree in report.trees {
            lines.append("  \(tree.name): \(tree.entries) entries, depth \(tree.depth), root page \(tree.root)")
        }
        return lines.joined(separator: "\n")
    }

    func run() throws {
        try store.present(Self.report, render: Self.render)
    }
}
