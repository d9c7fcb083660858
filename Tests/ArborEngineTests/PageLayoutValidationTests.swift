import ArborEngineTestSupport
@testable import ArborEngine
import Foundation
import Testing

/// The layout check a page passes when it is read from the file is what lets cell accessors
/// read without bounds checks: whatever it accepts must keep every key and value inside the page.
/// Pages are damaged in their cell area and sealed again (a valid checksum), so the layout check
/// itself — not the checksum — has to catch the damage.
@Suite("Page layout validation: accepted pages keep every cell inside the page")
struct PageLayoutValidationTests {
    /// Leaf and branch page images of a small store (two trees, short and long keys).
    static func treePages(pageSize: Int) throws -> [(id: PageID, image: [UInt8])] {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: .init(pageSize: pageSize))
        try db.update { tx in
            let short = try tx.createTree("short")
            for i in 0..<2_000 { try short.put(Array("k\(i)".utf8), Array(repeating: UInt8(i % 251), count: i % 40)) }
            // Keys and values of 128 bytes and more: their lengths take two-byte varints.
            let long = try tx.createTree("long")
            for i in 0..<300 { try long.put(Array((String(repeating: "x", count: 130) + "\(i)").utf8), Array(repeating: 7, count: 150)) }
            // Short keys with values of 64 bytes and more, as rows are: two-byte value headers.
            let rows = try tx.createTree("rows")
            for i in 0..<600 { try rows.put(Array("r\(i)".utf8), Array(repeating: UInt8(i % 251), count: 64 + i % 300)) }
        }
        let bytes = file.currentBytes
        return stride(from: 2 * pageSize, to: bytes.count, by: pageSize).compactMap { start in
            let image = Array(bytes[start..<(start + pageSize)])
            let type = PageType(rawValue: image[PageHeader.type])
            guard type == .leaf || type == .compactLeaf || type == .branch else { return nil }
            return (PageID(start / pageSize), image)
        }
    }

    /// Recomputes the checksum of a damaged image.
    static func seal(_ image: inout [UInt8]) {
        image.withUnsafeMutableBytes { sealPage($0) }
    }

    /// Every key and inline value of `page` lies within it.
    static func cellsInBounds(_ page: Page) -> Bool {
        for index in 0..<page.count {
            let (start, length) = page.keyLocation(index)
            guard start >= PageHeader.size, length >= 0, start + length <= page.size else { return false }
            if page.level == 0, page.compactCells {
                let cell = compactLeafCell(in: page.raw, at: page.cellOffset(index), limit: page.size)
                if cell.header & 1 == 0, cell.value + Int(cell.header >> 1) > page.size { return false }
            }
        }
        return true
    }

    @Test("damaged cells are rejected or stay in bounds; reading in place and from a copy agree", arguments: [4096, 8192])
    func damagedCells(pageSize: Int) throws {
        let pages = try Self.treePages(pageSize: pageSize)
        #expect(pages.count > 4)
        #expect(pages.contains { $0.image[PageHeader.level] > 0 }, "no branch page to damage")
        var random = SplitMix64(seed: UInt64(pageSize))
        var rejected = 0, accepted = 0
        for round in 0..<3_000 {
            let (id, original) = pages[Int(random.next() % UInt64(pages.count))]
            var image = original
            // Damage inside the cell area: anywhere (slots, keys, values), or the first bytes
            // of a cell (its lengths and header), where a wrong length would reach outside.
            let count = Int(image[PageHeader.count]) | Int(image[PageHeader.count + 1]) << 8
            for _ in 0..<(1 + random.next() % 3) {
                var offset = PageHeader.size + Int(random.next() % UInt64(pageSize - PageHeader.size))
                if random.next() % 2 == 0, count > 0 {
                    let slot = PageHeader.size + 2 * Int(random.next() % UInt64(count))
                    offset = min(pageSize - 1, (Int(image[slot]) | Int(image[slot + 1]) << 8) + Int(random.next() % 6))
                }
                image[offset] = random.next() % 2 == 0 ? UInt8(truncatingIfNeeded: random.next()) : image[offset] ^ 0x80
            }
            Self.seal(&image)
            let copied = Result { try image.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) } }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
            image.withUnsafeBytes { buffer.copyMemory(from: $0) }
            let adopted = Result { try Page.validated(id: id, adopting: buffer) }
            switch (copied, adopted) {
            case (.success(let page), .success(let other)):
                accepted += 1
                #expect(Self.cellsInBounds(page), "round \(round): page \(id) accepted with a cell outside it")
                #expect(Array(page.raw) == Array(other.raw))
            case (.failure(let error), .failure):
                rejected += 1
                guard case ArborError.corruptPage(let page, _) = error else {
                    Issue.record("round \(round): untyped error \(error)")
                    continue
                }
                #expect(page == id)
            default:
                Issue.record("round \(round): the copying and adopting reads disagree")
            }
        }
        // Both outcomes occur: the damage is neither always harmless nor always caught.
        #expect(rejected > 100)
        #expect(accepted > 100)
    }

    @Test("a one-byte key length running past the page end is rejected in leaves and branches", arguments: [4096, 8192])
    func lengthPastTheEnd(pageSize: Int) throws {
        let pages = try Self.treePages(pageSize: pageSize)
        var checked = (leaves: 0, branches: 0)
        for (id, original) in pages {
            let page = try original.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) }
            guard page.level > 0 || page.compactCells, page.count > 0 else { continue }
            // The cell nearest the end of the page, and where its bytes end.
            let index = try #require((0..<page.count).max { page.cellOffset($0) < page.cellOffset($1) })
            let offset = page.cellOffset(index)
            let (keyStart, keyLength) = page.keyLocation(index)
            var end = keyStart + keyLength
            if page.level == 0 {
                let cell = compactLeafCell(in: page.raw, at: offset, limit: page.size)
                guard cell.header & 1 == 0 else { continue }
                end = cell.value + Int(cell.header >> 1)
            }
            // A one-byte length at the usual place (leaf: first byte; branch: after the child).
            let lengthAt = page.level == 0 ? offset : offset + 4
            guard keyLength < 0x7F, keyStart == lengthAt + (page.level == 0 ? 2 : 1) else { continue }
            var image = original
            image[lengthAt] = 0x7F
            Self.seal(&image)
            let pastTheEnd = end + (0x7F - keyLength) > pageSize
            let result = Result { try image.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) } }
            if pastTheEnd {
                #expect(throws: ArborError.self) { try result.get() }
                if page.level == 0 { checked.leaves += 1 } else { checked.branches += 1 }
            } else if case .success(let accepted) = result {
                #expect(Self.cellsInBounds(accepted))
            }
        }
        #expect(checked.leaves > 0 && checked.branches > 0, "\(checked)")
    }

    @Test("a cell offset inside the header or slots, or at the last byte, is rejected", arguments: [4096, 8192])
    func offsetOutsideTheCellArea(pageSize: Int) throws {
        let pages = try Self.treePages(pageSize: pageSize)
        var checked = 0
        for (id, original) in pages where original[PageHeader.level] == 0 {
            let count = Int(original[PageHeader.count]) | Int(original[PageHeader.count + 1]) << 8
            guard count > 1 else { continue }
            let slotsEnd = PageHeader.size + 2 * count
            // The first, a middle and the last slot, each pointed at a place cells cannot start.
            for slot in [0, count / 2, count - 1] {
                for offset in [0, PageHeader.size - 2, slotsEnd - 2, slotsEnd - 1, pageSize - 1] {
                    var image = original
                    image[PageHeader.size + 2 * slot] = UInt8(offset & 0xFF)
                    image[PageHeader.size + 2 * slot + 1] = UInt8(offset >> 8)
                    Self.seal(&image)
                    #expect(throws: ArborError.self, "page \(id) slot \(slot) at \(offset)") {
                        try image.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) }
                    }
                    checked += 1
                }
            }
        }
        #expect(checked > 50)
    }

    @Test("a two-byte value header running past the page end is rejected", arguments: [4096, 8192])
    func valueHeaderPastTheEnd(pageSize: Int) throws {
        let pages = try Self.treePages(pageSize: pageSize)
        var checked = 0
        for (id, original) in pages where original[PageHeader.level] == 0 {
            let page = try original.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) }
            guard page.compactCells else { continue }
            for index in [0, page.count / 2, page.count - 1] {
                let offset = page.cellOffset(index)
                let cell = compactLeafCell(in: page.raw, at: offset, limit: page.size)
                // Cells with a one-byte key length and a two-byte inline value header.
                guard original[offset] < 0x80, original[offset + 1] >= 0x80, original[offset + 2] < 0x80, cell.header & 1 == 0 else { continue }
                let room = pageSize - cell.value
                // The longest value that still fits, then one byte more (two-byte headers hold up to 8,191).
                for (length, fits) in [(room, true), (room + 1, false)] where length < 8_192 {
                    var image = original
                    let header = length << 1
                    image[offset + 1] = UInt8(header & 0x7F) | 0x80
                    image[offset + 2] = UInt8(header >> 7)
                    Self.seal(&image)
                    let result = Result { try image.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) } }
                    if fits {
                        // Accepted (it may overlap other cells, but stays inside the page).
                        let accepted = try result.get()
                        #expect(Self.cellsInBounds(accepted))
                    } else {
                        #expect(throws: ArborError.self, "page \(id) cell \(index) value of \(length) bytes") { try result.get() }
                    }
                }
                // The same header marked as an overflow reference is checked as one.
                var overflow = original
                overflow[offset + 1] |= 1
                Self.seal(&overflow)
                if case .success(let accepted) = Result(catching: { try overflow.withUnsafeBytes { try Page.validated(id: id, image: $0, verifyChecksum: true) } }) {
                    #expect(Self.cellsInBounds(accepted))
                }
                checked += 1
            }
        }
        #expect(checked > 10, "\(checked) cells with two-byte value headers")
    }
}
