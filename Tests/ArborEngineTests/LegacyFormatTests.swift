import ArborEngine
import Foundation
import Testing

/// Files written by format version 1, whose leaves (type 3) carry a flag byte per cell, must stay
/// readable and writable. The fixtures were made by the version-1 writer (commit 3a95f5e) with
/// the entries `expectedEntries()` describes.
@Suite("Format version 1 files (type 3 leaves)")
struct LegacyFormatTests {
    static func smallValue(_ index: Int) -> [UInt8] {
        (0..<(index % 61)).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }
    }

    static func noise(_ count: Int) -> [UInt8] {
        var state: UInt32 = 2_463_534_242
        return (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
    }

    /// What the fixtures hold in their tree "entries": 120 inline values, a compressible value in
    /// a compressed overflow chain (key 1000) and an incompressible one in a plain chain (1001).
    static func expectedEntries() -> [[UInt8]: [UInt8]] {
        var entries: [[UInt8]: [UInt8]] = [:]
        for index in 0..<120 { entries[key(index)] = smallValue(index) }
        entries[key(1000)] = Array(String(repeating: "Görlitzer Bahnhof ", count: 600).utf8)
        entries[key(1001)] = noise(6000)
        return entries
    }

    static func copyFixture(_ name: String, into directory: TemporaryDirectory) throws -> String {
        let source = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        let target = directory.file(name)
        try FileManager.default.copyItem(atPath: source.path, toPath: target)
        return target
    }

    static func contents(_ db: Database) throws -> [[UInt8]: [UInt8]] {
        let entries = try db.view { try $0.tree("entries").entries() }
        return Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The tree leaves in use (freed pages of earlier commits left out).
    static func liveLeaves(_ db: Database) throws -> [PageDump] {
        try db.checkIntegrity().pageOwners.enumerated().compactMap { page, owner in
            guard case .node = owner else { return nil }
            let dump = try db.dumpPage(PageID(page))
            return dump.type.isLeaf ? dump : nil
        }
    }

    static func leafTypes(_ db: Database) throws -> [PageType] { try liveLeaves(db).map(\.type) }

    static func leafHolding(_ key: [UInt8], in db: Database) throws -> PageDump? {
        try liveLeaves(db).first { $0.cells.contains { $0.key == key } }
    }

    @Test("a version 1 file reads back every entry, overflow chains compressed or not")
    func readsTypeThreeLeaves() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: try Self.copyFixture("leaf-type3.arbor", into: directory))
        #expect(db.checkIntegrity().isSound, "\(db.checkIntegrity())")
        let types = try Self.leafTypes(db)
        #expect(!types.isEmpty && types.allSatisfy { $0 == .leaf })
        #expect(try Self.contents(db) == Self.expectedEntries())
        let holder = try #require(try Self.leafHolding(key(1000), in: db))
        #expect(holder.cells.first { $0.key == key(1000) }?.compressed == true)
        #expect(holder.cells.first { $0.key == key(1001) }?.compressed == false)
    }

    @Test("writing to a version 1 file rewrites touched leaves compactly and keeps the rest readable")
    func writesOverTypeThreeLeaves() throws {
        let directory = TemporaryDirectory()
        let path = try Self.copyFixture("leaf-type3.arbor", into: directory)
        var model = Self.expectedEntries()
        do {
            let db = try Database.open(path: path)
            try db.update { tx in
                let tree = try tx.tree("entries")
                try tree.put(key(3), [1, 2, 3])
                model[key(3)] = [1, 2, 3]
                try tree.delete(key(4))
                model[key(4)] = nil
            }
            let types = try Self.leafTypes(db)
            #expect(types.contains(.compactLeaf))
            #expect(types.contains(.leaf), "the untouched leaf keeps its version 1 layout")
        }
        let reopened = try Database.open(path: path)
        #expect(reopened.checkIntegrity().isSound, "\(reopened.checkIntegrity())")
        #expect(try Self.contents(reopened) == model)
        // Rewriting the leaf that holds both overflow references must keep their compression.
        try reopened.update { tx in try tx.tree("entries").put(key(1002), [9]) }
        model[key(1002)] = [9]
        #expect(try Self.contents(reopened) == model)
        let holder = try #require(try Self.leafHolding(key(1000), in: reopened))
        #expect(holder.type == .compactLeaf)
        #expect(holder.cells.first { $0.key == key(1000) }?.compressed == true)
        #expect(holder.cells.first { $0.key == key(1001) }?.compressed == false)
    }

    @Test("a compressed read-only copy made by version 1 reads back every entry")
    func readsCompressedTypeThreeLeaves() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.readOnly = true
        let db = try Database.open(path: try Self.copyFixture("leaf-type3-compressed.arbor", into: directory), options: options)
        #expect(db.checkIntegrity().isSound, "\(db.checkIntegrity())")
        #expect(try Self.contents(db) == Self.expectedEntries())
    }

    @Test("new files write compact leaves only")
    func newFilesAreCompact() throws {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: directory.file("new.arbor"))
        try db.update { tx in
            let tree = try tx.createTree("entries")
            for (key, value) in Self.expectedEntries() { try tree.put(key, value) }
        }
        let types = try Self.leafTypes(db)
        #expect(!types.isEmpty && types.allSatisfy { $0 == .compactLeaf })
        #expect(try Self.contents(db) == Self.expectedEntries())
        #expect(try db.info().formatVersion == 4)
    }
}
