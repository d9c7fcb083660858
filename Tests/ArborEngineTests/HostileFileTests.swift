import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// Damaged and foreign files must give typed errors or integrity problems naming the page —
/// never a crash, a hang or an unbounded allocation.
@Suite("Corrupt, truncated and foreign files")
struct HostileFileTests {
    /// A small store image with two trees, overflow values and a non-empty freelist.
    static func sampleImage(pageSize: Int = 4096) throws -> [UInt8] {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: .init(pageSize: pageSize))
        try db.update { tx in
            try fill(try tx.createTree("stops"), count: 800, valueLength: 30)
            let blobs = try tx.createTree("blobs")
            for i in 0..<6 { try blobs.put(key(i), (0..<(5000 + i * 700)).map { UInt8(truncatingIfNeeded: $0 * 7 + i) }) }
        }
        try db.update { tx in
            let stops = try tx.tree("stops")
            for i in stride(from: 0, to: 800, by: 3) { try stops.delete(key(i)) }
        }
        return file.currentBytes
    }

    /// Opens, checks and scans an image; returns whether anything reported damage.
    static func exercise(_ image: [UInt8]) -> Bool {
        do {
            let db = try Database.open(file: SimulatedFile(bytes: image))
            let report = db.checkIntegrity()
            try db.view { tx in
                for name in try tx.treeNames() { _ = try tx.tree(name).entries() }
            }
            return !report.isSound
        } catch {
            #expect(error is ArborError, "untyped error \(error)")
            return true
        }
    }

    @Test("the sample image is sound")
    func sampleIsSound() throws {
        #expect(!Self.exercise(try Self.sampleImage()))
    }

    @Test("a flipped byte in any tree page is detected")
    func flippedBytes() throws {
        let image = try Self.sampleImage()
        let pages = image.count / 4096
        var detected = 0
        var g = SplitMix64(seed: 3)
        for page in 2..<pages {
            var damaged = image
            let offset = page * 4096 + Int(g.next() % 4096)
            damaged[offset] ^= UInt8(1 << (g.next() % 8))
            if Self.exercise(damaged) { detected += 1 }
        }
        // Free pages are never read, so damage there is harmless; every other page is checksummed.
        let free = try Database.open(file: SimulatedFile(bytes: image)).info().freePages
        #expect(detected >= pages - 2 - Int(free))
    }

    @Test("random garbage anywhere never crashes", arguments: [4096, 8192])
    func randomGarbage(pageSize: Int) throws {
        let image = try Self.sampleImage(pageSize: pageSize)
        var g = SplitMix64(seed: UInt64(pageSize))
        for _ in 0..<200 {
            var damaged = image
            for _ in 0..<(1 + g.next() % 8) {
                let offset = Int(g.next() % UInt64(image.count))
                damaged[offset] = UInt8(truncatingIfNeeded: g.next())
            }
            _ = Self.exercise(damaged)
        }
    }

    @Test("a zeroed or torn newest meta page falls back to the previous commit")
    func metaFallback() throws {
        let image = try Self.sampleImage()
        let db = try Database.open(file: SimulatedFile(bytes: image))
        let txid = try db.info().transactionID
        var damaged = image
        let newest = Int(txid % 2)
        for offset in (newest * 4096)..<(newest * 4096 + 4096) { damaged[offset] = 0 }
        let fallback = try Database.open(file: SimulatedFile(bytes: damaged))
        #expect(try fallback.info().transactionID == txid - 1)
        #expect(fallback.checkIntegrity().isSound)
        let count = try fallback.view { try $0.tree("stops").count }
        #expect(count == 800)  // the state before the deletes
    }

    @Test("both meta pages destroyed, truncation, foreign files and newer versions give typed errors")
    func typedOpenErrors() throws {
        let image = try Self.sampleImage()
        var noMeta = image
        for offset in 0..<8192 { noMeta[offset] = 0xAB }
        #expect(throws: ArborError.self) { try Database.open(file: SimulatedFile(bytes: noMeta)) }

        #expect(throws: ArborError.truncatedFile(expectedBytes: UInt64(image.count), actualBytes: 20480)) {
            try Database.open(file: SimulatedFile(bytes: Array(image[0..<20480])))
        }
        let text = Array(String(repeating: "SQLite format 3\u{0} is not us. ", count: 400).utf8)
        #expect(throws: ArborError.notAnArborFile(path: "<memory>")) { try Database.open(file: SimulatedFile(bytes: text)) }
        #expect(throws: ArborError.notAnArborFile(path: "<memory>")) { try Database.open(file: SimulatedFile(bytes: [1, 2, 3])) }

        var newer = image
        for page in 0..<2 {
            newer[page * 4096 + 32] = 9  // format version 9
            resealPage(&newer, page: page)
        }
        #expect(throws: ArborError.unsupportedFormatVersion(found: 9, supported: 4)) {
            try Database.open(file: SimulatedFile(bytes: newer))
        }
    }

    @Test("a page pointing to itself is reported, not followed forever")
    func cycleIsBounded() throws {
        // Make the root branch of "stops" point at itself: the level check must reject it.
        // A later commit elsewhere first: a rewritten page of the newest commit would only make
        // the store open at the commit before (CommitVerificationTests).
        let file = SimulatedFile(bytes: try Self.sampleImage())
        let db = try Database.open(file: file)
        try db.update { tx in try tx.createTree("later").put([1], [1]) }
        let image = file.currentBytes
        let root = try db.view { try $0.tree("stops").info.root }
        var damaged = image
        let base = Int(root) * 4096
        withUnsafeBytes(of: root.littleEndian) { for (i, b) in $0.enumerated() { damaged[base + 20 + i] = b } }
        resealPage(&damaged, page: Int(root))
        let report = try Database.open(file: SimulatedFile(bytes: damaged)).checkIntegrity()
        #expect(!report.isSound)
        #expect(report.problems.contains { $0.page == root })
    }
}
