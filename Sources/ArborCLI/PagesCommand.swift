import ArborEngine
import ArgumentParser

/// `arbor pages FILE`: how the file's pages are used (sqlite3_analyzer's summary).
struct PagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pages",
        abstract: "Page counts by type, fill-factor histogram, overflow and compressed bytes, free pages, wasted space.",
        discussion: "Example: arbor pages transit.arbor")

    @OptionGroup var store: StoreOptions

    struct Report: Codable, Equatable {
        var pageSize: Int
        var pages: Int
        var meta = 2
        var branches = 0
        var leaves = 0
        var compressedLeaves = 0
        var overflow = 0
        var free = 0
        var unowned = 0
        var unreadable = 0
        /// Leaves and branches by fill, in tenths: [0] is 0–10%, [9] is 90–100%.
        var fillHistogram = [Int](repeating: 0, count: 10)
        var overflowBytes = 0
        /// Bytes the compressed leaves hold once decompressed.
        var compressedLogicalBytes = 0
        /// Unused bytes inside leaves, branches and overflow pages, plus free pages.
        var wastedBytes = 0
    }

    static func report(_ db: Database) throws -> Report {
        let check = db.checkIntegrity()
        var report = Report(pageSize: db.pageSize, pages: check.pageOwners.count)
        for (index, owner) in check.pageOwners.enumerated() where index >= 2 {
            switch owner {
            case .meta: continue
            case .free:
                report.free += 1
                report.wastedBytes += db.pageSize
                continue
            case nil:
                report.unowned += 1
                continue
            case .node, .overflow: break
            }
            guard let dump = try? db.dumpPage(PageID(index)) else {
                report.unreadable += 1
                continue
            }
            switch dump.type {
            case .overflow:
                report.overflow += 1
                report.overflowBytes += dump.usedBytes - 24
                report.wastedBytes += db.pageSize - dump.usedBytes
            case .compressedLeaf:
                report.compressedLeaves += 1
                report.compressedLogicalBytes += dump.size
            case .leaf, .compactLeaf, .branch:
                if dump.type.isLeaf { report.leaves += 1 } else { report.branches += 1 }
                report.fillHistogram[min(9, dump.usedBytes * 10 / max(dump.size, 1))] += 1
                report.wastedBytes += dump.size - dump.usedBytes
            case .meta: break
            }
        }
        return report
    }

    static func render(_ report: Report) -> String {
        var lines = [
            "pages            \(report.pages) of \(report.pageSize) bytes",
            "  meta           \(report.meta)",
            "  branch         \(report.branches)",
            "  leaf           \(report.leaves)",
            "  compressed     \(report.compressedLeaves) (\(report.compressedLogicalBytes) bytes uncompressed)",
            "  overflow       \(report.overflow) (\(report.overflowBytes) payload bytes)",
            "  free           \(report.free)",
        ]
        if report.unowned > 0 { lines.append("  unowned        \(report.unowned) (run arbor check)") }
        if report.unreadable > 0 { lines.append("  unreadable     \(report.unreadable) (run arbor check)") }
        lines.append("wasted           \(report.wastedBytes) bytes (\(displaySize(UInt64(report.wastedBytes))))")
        lines.append("fill of leaves and branches:")
        let total = max(1, report.fillHistogram.reduce(0, +))
        for (tenth, count) in report.fillHistogram.enumerated() {
            let bar = String(repeating: "#", count: count * 40 / total)
            lines.append(String(format: "  %3d-%3d%%  %7d  ", tenth * 10, tenth * 10 + 10, count) + bar)
        }
        return lines.joined(separator: "\n")
    }

    func run() throws {
        try store.present(Self.report, render: Self.render)
    }
}
