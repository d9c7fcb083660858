import Arbor
import ArborEngine
import ArgumentParser
import Foundation

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
        /// One line per entity when the file holds an object model.
        var model: [String]?
        /// One line per lightweight migration the store went through (absent when none).
        var migrations: [String]?
    }

    static func report(_ db: Database) throws -> Report {
        let info = try db.info()
        return Report(
            formatVersion: info.formatVersion, pageSize: info.pageSize, transactionID: info.transactionID,
            pageCount: info.pageCount, freePages: info.freePages, fileSize: info.fileSize, compressed: info.isCompressed,
            trees: info.trees.map { Report.TreeRow(name: $0.name, entries: $0.info.count, depth: $0.info.depth, root: $0.info.root) },
            model: try modelSummary(db, info: info), migrations: try migrations(db, info: info))
    }

    /// The store's model history, when it has one.
    static func migrations(_ db: Database, info: DatabaseInfo) throws -> [String]? {
        guard info.trees.contains(where: { $0.name == "arbor.metadata" }) else { return nil }
        let history = try PersistentStore.modelHistory(at: URL(fileURLWithPath: db.path))
        guard !history.isEmpty else { return nil }
        let formatter = ISO8601DateFormatter()
        return history.map { record in
            "\(formatter.string(from: record.date)) \(record.fromVersionHash) -> \(record.toVersionHash): "
                + record.changes.joined(separator: "; ")
        }
    }

    /// The entities of the stored object model, when the file has one.
    static func modelSummary(_ db: Database, info: DatabaseInfo) throws -> [String]? {
        guard info.trees.contains(where: { $0.name == "arbor.metadata" }) else { return nil }
        let schema = try PersistentStore.storedSchema(at: URL(fileURLWithPath: db.path))
        func plural(_ count: Int, _ word: String) -> String { "\(count) \(word)\(count == 1 ? "" : "s")" }
        return schema.entities.map { entity in
            "\(entity.name)\(entity.superentity.map { " : \($0)" } ?? ""): " + [plural(entity.attributes.count, "attribute"),
                plural(entity.relationships.count, "relationship"), plural(entity.indexes.count, "index")].joined(separator: ", ")
                .replacingOccurrences(of: "indexs", with: "indexes")
        }
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
        if let model = report.model {
            lines.append("model            \(model.count) entit\(model.count == 1 ? "y" : "ies")")
            for entity in model { lines.append("  " + entity) }
        }
        if let migrations = report.migrations {
            lines.append("migrations       \(migrations.count)")
            for migration in migrations { lines.append("  " + migration) }
        }
        return lines.joined(separator: "\n")
    }

    func run() throws {
        try store.present(Self.report, render: Self.render)
    }
}
