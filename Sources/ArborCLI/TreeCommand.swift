import ArborEngine
import ArgumentParser

/// `arbor tree FILE NAME`: the shape of one tree.
struct TreeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tree",
        abstract: "The structure of one tree: pages and fill per level, overflow pages, key range.",
        discussion: "Example: arbor tree transit.arbor Stop")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The tree's name (see arbor info).") var name: String

    struct Report: Codable, Equatable {
        struct Level: Codable, Equatable {
            var level: Int
            var pages: Int
            var averageFillPercent: Int
        }
        var name: String
        var entries: UInt64
        var depth: Int
        var root: UInt32
        var levels: [Level]
        var overflowPages: Int
        var firstKey: String?
        var lastKey: String?
    }

    static func report(_ db: Database, name: String) throws -> Report {
        let (info, first, last) = try db.view { tx -> (TreeInfo, [UInt8]?, [UInt8]?) in
            let tree = try tx.tree(name)
            let cursor = try tree.makeCursor()
            let first = try cursor.first() ? cursor.key : nil
            let last = try cursor.last() ? cursor.key : nil
            return (tree.info, first, last)
        }
        let owners = db.checkIntegrity().pageOwners
        var pagesPerLevel: [Int: (pages: Int, used: Int, size: Int)] = [:]
        var overflow = 0
        for (index, owner) in owners.enumerated() {
            switch owner {
            case .node(.named(name), let level):
                guard let dump = try? db.dumpPage(PageID(index)) else { continue }
                pagesPerLevel[level, default: (0, 0, 0)].pages += 1
                pagesPerLevel[level, default: (0, 0, 0)].used += dump.usedBytes
                pagesPerLevel[level, default: (0, 0, 0)].size += dump.size
            case .overflow(.named(name)):
                overflow += 1
            default:
                continue
            }
        }
        let levels = pagesPerLevel.keys.sorted(by: >).map { level in
            let stats = pagesPerLevel[level, default: (0, 0, 0)]
            return Report.Level(level: level, pages: stats.pages, averageFillPercent: stats.size > 0 ? stats.used * 100 / stats.size : 0)
        }
        return Report(name: name, entries: info.count, depth: info.depth, root: info.root, levels: levels,
                      overflowPages: overflow, firstKey: first.map(displayKey), lastKey: last.map(displayKey))
    }

    static func render(_ report: Report) -> String {
        var lines = ["tree \"\(report.name)\": \(report.entries) entries, depth \(report.depth), root page \(report.root)"]
        for level in report.levels {
            lines.append("  level \(level.level) (\(level.level == 0 ? "leaves" : "branches")): \(level.pages) pages, \(level.averageFillPercent)% full")
        }
        if report.overflowPages > 0 { lines.append("  overflow pages: \(report.overflowPages)") }
        if let first = report.firstKey, let last = report.lastKey { lines.append("  keys \(first) ... \(last)") }
        return lines.joined(separator: "\n")
    }

    func run() throws {
        try store.present({ try Self.report($0, name: name) }, render: Self.render)
    }
}
