import ArborEngine
import ArgumentParser

/// `arbor page FILE N [--hex]`: one page decoded.
struct PageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "page",
        abstract: "Decode one page: header, cells, keys (through the tuple encoding) and value sizes.",
        discussion: "Example: arbor page transit.arbor 7 --hex")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The page number.") var number: UInt32
    @Flag(help: "Also print the raw bytes.") var hex = false

    struct Report: Codable {
        struct Cell: Codable {
            var key: String
            var child: UInt32?
            var valueLength: Int?
            var overflowPage: UInt32?
            var compressed: Bool?
        }
        var page: UInt32
        /// What uses the page, from a walk of every tree and the freelist ("unowned" if nothing).
        var owner: String
        var type: String
        var level: Int
        var transactionID: UInt64
        var link: UInt32
        var usedBytes: Int
        var size: Int
        var cells: [Cell]
        var hex: String?
    }

    static func report(_ dump: PageDump, owner: PageOwner?) -> Report {
        Report(
            page: dump.page, owner: owner.map(\.description) ?? "unowned", type: "\(dump.type)", level: dump.level, transactionID: dump.transactionID, link: dump.link,
            usedBytes: dump.usedBytes, size: dump.size,
            cells: dump.cells.map {
                Report.Cell(key: displayKey($0.key), child: $0.child, valueLength: $0.valueLength,
                            overflowPage: $0.overflowPage, compressed: $0.overflowPage == nil ? nil : $0.compressed)
            })
    }

    static func render(_ report: Report) -> String {
        var lines = [
            "page \(report.page): \(report.type), level \(report.level), written by transaction \(report.transactionID)",
            "owner: \(report.owner)" + (report.owner.hasPrefix("the freelist") ? " (the cells below are stale)" : ""),
            "used \(report.usedBytes) of \(report.size) bytes, \(report.cells.count) cells"
                + (report.type == "branch" ? ", leftmost child \(report.link)" : "")
                + (report.type == "overflow" ? ", next page \(report.link)" : ""),
        ]
        for (index, cell) in report.cells.enumerated() {
            var line = String(format: "%5d  ", index) + cell.key
            if let child = cell.child { line += " -> page \(child)" }
            if let length = cell.valueLength {
                line += ": \(length) bytes"
                if let overflow = cell.overflowPage {
                    line += " in overflow pages from \(overflow)" + (cell.compressed == true ? " (LZ4)" : "")
                }
            }
            lines.append(line)
        }
        if let hex = report.hex { lines.append(hex) }
        return lines.joined(separator: "\n")
    }

    func run() throws {
        let db = try store.open()
        do {
            let owners = db.checkIntegrity().pageOwners
            let owner = Int(number) < owners.count ? owners[Int(number)] : nil
            var report: Report
            do {
                report = Self.report(try db.dumpPage(number), owner: owner)
            } catch let error as ArborError where hex {
                // A damaged page can still be shown raw.
                printError("arbor: \(store.file): \(error)")
                report = Report(page: number, owner: owner.map(\.description) ?? "unowned", type: "undecodable", level: 0,
                                transactionID: 0, link: 0, usedBytes: 0, size: db.pageSize, cells: [])
            }
            if hex { report.hex = hexDump(try db.rawPage(number)) }
            print(store.json ? try jsonText(report) : Self.render(report))
        } catch {
            throw store.fail(error)
        }
    }
}
