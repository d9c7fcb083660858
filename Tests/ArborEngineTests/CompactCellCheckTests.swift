import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// The check of a compact leaf's cells runs eight cells a step with AVX2 where the CPU has it,
/// then one by one from where the vector loop stopped. Both ways must accept the same leading
/// cells: the vector loop may stop early (the scalar loop then goes on), never late.
@Suite("Compact leaf cell check: the AVX2 loop and the scalar loop accept the same cells")
struct CompactCellCheckTests {
    /// What the vector loop accepted, what the scalar loop accepts alone, and what the two
    /// accept together, for the compact leaf `image`.
    static func counts(_ image: [UInt8]) -> (vector: Int, scalar: Int, combined: Int) {
        let count = Int(image[PageHeader.count]) | Int(image[PageHeader.count + 1]) << 8
        let slotsEnd = PageHeader.size + 2 * count
        return image.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, slotsEnd <= image.count else { return (0, 0, 0) }
            let vector = Page.commonCompactCellsWithAVX2(base, size: image.count, slotsEnd: slotsEnd, count: count)
            let scalar = Page.commonCompactCells(base, size: image.count, slotsEnd: slotsEnd, count: count, from: 0)
            let combined = Page.commonCompactCells(base, size: image.count, slotsEnd: slotsEnd, count: count, from: vector)
            return (vector, scalar, combined)
        }
    }

    /// Checks one image; returns whether the vector loop stopped before the scalar loop did.
    @discardableResult
    static func expectAgreement(_ image: [UInt8], _ label: String) -> Bool {
        let count = Int(image[PageHeader.count]) | Int(image[PageHeader.count + 1]) << 8
        let (vector, scalar, combined) = counts(image)
        #expect(vector % 8 == 0 && vector <= scalar, "\(label): the vector loop accepted \(vector) cells, the scalar loop \(scalar)")
        #expect(combined == scalar, "\(label): \(combined) cells accepted in two steps, \(scalar) in one")
        // It stops only at a group of eight holding a refused cell or one of the last few bytes.
        if vector + 8 <= count {
            let group = (vector..<(vector + 8)).map { Int(image[PageHeader.size + 2 * $0]) | Int(image[PageHeader.size + 2 * $0 + 1]) << 8 }
            #expect(scalar < vector + 8 || group.contains { $0 + 4 > image.count }, "\(label): the vector loop stopped at \(vector) for no reason")
        } else {
            #expect(vector == count - count % 8, "\(label): \(vector) of \(count) cells accepted by the vector loop")
        }
        return vector < scalar
    }

    @Test("on the leaves of a store, whole and damaged", .enabled(if: CPUFeatures.hasAVX2), arguments: [4096, 8192])
    func storeLeaves(pageSize: Int) throws {
        let leaves = try PageLayoutValidationTests.treePages(pageSize: pageSize).filter { $0.image[PageHeader.type] == PageType.compactLeaf.rawValue }
        #expect(leaves.count > 4)
        for (id, image) in leaves { Self.expectAgreement(image, "page \(id)") }
        // Leaves of short keys and values are in the common form throughout.
        #expect(leaves.contains { Self.counts($0.image).vector >= 64 })
        var random = SplitMix64(seed: UInt64(pageSize) &+ 0xCE11)
        var stoppedEarly = 0
        for round in 0..<4_000 {
            var (_, image) = leaves[Int(random.next() % UInt64(leaves.count))]
            let count = Int(image[PageHeader.count]) | Int(image[PageHeader.count + 1]) << 8
            for _ in 0..<(1 + random.next() % 2) {
                let slot = PageHeader.size + 2 * Int(random.next() % UInt64(count))
                let offset = Int(image[slot]) | Int(image[slot + 1]) << 8
                switch random.next() % 5 {
                case 0:  // a cell's offset moved: before the cell area, or into the page's last bytes
                    let moved = random.next() % 2 == 0 ? PageHeader.size + 2 * count - Int(random.next() % 3)
                        : pageSize - 1 - Int(random.next() % 6)
                    image[slot] = UInt8(truncatingIfNeeded: moved)
                    image[slot + 1] = UInt8(truncatingIfNeeded: moved >> 8)
                case 1:  // one of a cell's first three bytes (its lengths and header) replaced
                    image[min(pageSize - 1, offset + Int(random.next() % 3))] = UInt8(truncatingIfNeeded: random.next())
                case 2:  // one of their bits flipped: a length that continues, an overflow value
                    image[min(pageSize - 1, offset + Int(random.next() % 3))] ^= UInt8(1) << (random.next() % 8)
                case 3:  // an empty key
                    image[offset] = 0
                default:  // a cell moved to where its value would end just inside or outside the page
                    let moved = pageSize - 3 - Int(random.next() % 300)
                    image[slot] = UInt8(truncatingIfNeeded: moved)
                    image[slot + 1] = UInt8(truncatingIfNeeded: moved >> 8)
                }
            }
            if Self.expectAgreement(image, "round \(round)") { stoppedEarly += 1 }
        }
        // Some damage falls where only the scalar loop decides (near the page's end).
        #expect(stoppedEarly > 0)
    }

    @Test("on random bytes with every slot count", .enabled(if: CPUFeatures.hasAVX2))
    func randomPages() {
        var random = SplitMix64(seed: 0xB17E5)
        for round in 0..<3_000 {
            let size = 4096
            var image = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let count = Int(random.next() % 300)
            image[PageHeader.count] = UInt8(count & 0xFF)
            image[PageHeader.count + 1] = UInt8(count >> 8)
            // Mostly plausible cells: offsets in the cell area, small lengths and headers.
            let slotsEnd = PageHeader.size + 2 * count
            for index in 0..<count where random.next() % 16 != 0 {
                let offset = slotsEnd + Int(random.next() % UInt64(size - slotsEnd))
                image[PageHeader.size + 2 * index] = UInt8(offset & 0xFF)
                image[PageHeader.size + 2 * index + 1] = UInt8(offset >> 8)
                image[offset] = UInt8(1 + random.next() % 40)
                if offset + 1 < size { image[offset + 1] = UInt8(truncatingIfNeeded: (random.next() % 100) << 1 | (random.next() % 64 == 0 ? 1 : 0)) }
            }
            Self.expectAgreement(image, "round \(round)")
        }
    }
}
