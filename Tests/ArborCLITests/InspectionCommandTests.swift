@testable import ArborCLI
import ArborEngine
import ArgumentParser
import Foundation
import Testing

/// The inspection commands on a small deterministic store, with golden outputs, and on damaged files.
@Suite("arbor info, pages, page, tree, check, compact")
struct InspectionCommandTests {
    final class Store {
        let directory = NSTemporaryDirectory() + "arbor-cli-" + UUID().uuidString
        var path: String { directory + "/small.arbor" }

        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let db = try Database.open(path: path)
            try db.update { tx in
                let stops = try tx.createTree("Stop")
                for i in 0..<300 {
                    try stops.put(TupleKey.encode([.int64(Int64(i))]), Array("Haltestelle \(i)".utf8))
                }
                try tx.createTree("blobs").put(TupleKey.encode([.string("big")]), [UInt8](repeating: 0x41, count: 9000))
            }
            try db.update { tx in
                let stops = try tx.tree("Stop")
                for i in stride(from: 0, to: 300, by: 4) { try stops.delete(TupleKey.encode([.int64(Int64(i))])) }
            }
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func open() throws -> Database {
            var options = Database.Options()
            options.readOnly = true
            return try Database.open(path: path, options: options)
        }
    }

    @Test("info, golden")
    func info() throws {
        let store = try Store()
        let text = InfoCommand.render(try InfoCommand.report(try store.open()))
        #expect(text == """
            format version   4
            page size        4096
            transaction id   2
            pages            13 (5 free)
            file size        53248 bytes (52.0 KiB)
            compressed       no
            trees            2
              Stop: 225 entries, depth 2, root page 9
              blobs: 1 entries, depth 1, root page 8
            """)
    }

    @Test("tree, golden")
    func tree() throws {
        let store = try Store()
        let text = TreeCommand.render(try TreeCommand.report(try store.open(), name: "Stop"))
        #expect(text == """
            tree "Stop": 225 entries, depth 2, root page 9
              level 1 (branches): 1 pages, 0% full
              level 0 (leaves): 2 pages, 76% full
              keys (1) ... (299)
            """)
    }

    @Test("pages accounts for every page")
    func pages() throws {
        let store = try Store()
        let report = try PagesCommand.report(try store.open())
        #expect(report.pages == 13)
        #expect(report.meta + report.branches + report.leaves + report.overflow + report.free == report.pages)
        #expect(report.overflow == 1)  // 9,000 repeated bytes compress into one overflow page
        #expect(report.overflowBytes < 100)
        #expect(report.free == 5)
        #expect(report.leaves == 4)     // catalog, blobs and two of Stop (the meta page lists the free pages)
        #expect(report.unowned == 0 && report.unreadable == 0)
        #expect(PagesCommand.render(report).contains("leaf           4"))
    }

    @Test("page decodes cells through the tuple encoding")
    func page() throws {
        let store = try Store()
        let db = try store.open()
        let leaf = try TreeCommand.report(db, name: "blobs").root
        let owners = db.checkIntegrity().pageOwners
        let text = PageCommand.render(PageCommand.report(try db.dumpPage(leaf), owner: owners[Int(leaf)]))
        #expect(text.contains("owner: tree \"blobs\" leaf"))
        #expect(text.contains("(\"big\"): 9000 bytes in overflow pages from"))
        #expect(text.contains("(LZ4)"))
        // A free page is labelled as such, so its stale cells are not mistaken for live ones.
        let free = try #require(owners.firstIndex { if case .free = $0 { return true } else { return false } })
        let freeText = PageCommand.render(PageCommand.report(try db.dumpPage(PageID(free)), owner: owners[free]))
        #expect(freeText.contains("owner: the freelist (freed by transaction"))
    }

    @Test("check passes on a sound file and exits 1 listing the problem on a damaged one")
    func check() throws {
        let store = try Store()
        var command = try ArborTool.parseAsRoot(["check", store.path])
        try command.run()
        // Flip a byte in a leaf of "Stop".
        let leaf = try TreeCommand.report(try store.open(), name: "Stop").root
        let handle = try #require(FileHandle(forUpdatingAtPath: store.path))
        try handle.seek(toOffset: UInt64(leaf) * 4096 + 100)
        try handle.write(contentsOf: Data([0xEE]))
        try handle.close()
        var damaged = try ArborTool.parseAsRoot(["check", store.path])
        #expect(throws: ExitCode(1)) { try damaged.run() }
    }

    @Test("every inspection command gives exit 2 on a missing, truncated, zeroed or foreign file",
          arguments: ["info", "pages", "check", "tree", "page"])
    func damagedFiles(command name: String) throws {
        let store = try Store()
        let image = try Data(contentsOf: URL(fileURLWithPath: store.path))
        let cases: [(String, Data?)] = [
            ("missing", nil),
            ("truncated", image.prefix(10000)),
            ("zeroed metas", Data(count: 8192) + image.dropFirst(8192)),
            ("foreign", Data(String(repeating: "SQLite format 3\u{0}", count: 600).utf8)),
        ]
        for (label, contents) in cases {
            let path = store.directory + "/\(label).arbor"
            if let contents { try contents.write(to: URL(fileURLWithPath: path)) }
            var arguments = [name, path]
            if name == "tree" { arguments.append("Stop") }
            if name == "page" { arguments.append("2") }
            var command = try ArborTool.parseAsRoot(arguments)
            #expect(throws: ExitCode(2), "\(name) on a \(label) file") { try command.run() }
        }
    }

    @Test("compact writes a smaller sound copy")
    func compact() throws {
        let store = try Store()
        let output = store.directory + "/compact.arbor"
        var command = try ArborTool.parseAsRoot(["compact", store.path, output, "--compress"])
        try command.run()
        var options = Database.Options()
        options.readOnly = true
        let copy = try Database.open(path: output, options: options)
        #expect(copy.checkIntegrity().isSound)
        #expect(try copy.info().fileSize < (try store.open().info().fileSize))
    }

    @Test("compact in place replaces the store; a writer that had it open must reopen it")
    func compactInPlace() throws {
        let store = try Store()
        let writer = try Database.open(path: store.path)
        try writer.update { tx in try tx.tree("Stop").put(TupleKey.encode([.int64(1_000)]), Array("Neu".utf8)) }
        var command = try ArborTool.parseAsRoot(["compact", store.path, store.path])
        try command.run()
        #expect(throws: ArborError.fileReplaced(path: store.path)) {
            try writer.update { tx in try tx.tree("Stop").put(TupleKey.encode([.int64(1_001)]), Array("Verloren".utf8)) }
        }
        let reopened = try Database.open(path: store.path)
        #expect(reopened.checkIntegrity().isSound)
        #expect(try reopened.view { try $0.tree("Stop").get(TupleKey.encode([.int64(1_000)])) } == Array("Neu".utf8))
        #expect(try reopened.info().freePages == 0)
        try reopened.update { tx in try tx.tree("Stop").put(TupleKey.encode([.int64(1_001)]), Array("Da".utf8)) }
    }
}
