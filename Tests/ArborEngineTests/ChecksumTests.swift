import ArborEngine
import Testing

@Suite("XXH3-64 page checksum")
struct ChecksumTests {
    /// Reference values from the xxHash library (python-xxhash `xxh3_64_intdigest`) for the input
    /// `(i * 7 + 3) & 0xFF` of each length: every length class of the algorithm is covered.
    static let vectors: [(Int, UInt64)] = [
        (0, 0x2d06_8005_38d3_94c2), (1, 0x13e6_08bc_156d_efed), (3, 0xa908_8dda_485b_481c),
        (8, 0x6053_9db6_3047_1163), (16, 0xb8c8_59b0_f030_b585), (17, 0x714a_0440_8e79_b80f),
        (100, 0xb593_7857_f0d7_8c9f), (128, 0x6742_5a03_6502_61bf), (129, 0xc664_bf33_11c6_abc4),
        (240, 0x6455_6dc6_b462_a6cf), (241, 0x8bea_dd3a_8874_fe17), (500, 0xb8bc_3e56_83ce_226a),
        (1024, 0x9b81_661c_641c_72b1), (4092, 0x1a43_20e3_30c4_0bcb), (4096, 0xd742_8746_842b_e37e),
        (65532, 0x276f_028e_9a42_50a4),
    ]

    @Test("matches the reference implementation for every length class")
    func referenceVectors() {
        for (length, expected) in Self.vectors {
            let input = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            #expect(XXH3.hash(input) == expected, "length \(length)")
        }
        #expect(PageChecksum.compute((0..<4092).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }) == 0x30c4_0bcb)
    }

    @Test("every single-bit flip of a page changes the checksum")
    func detectsBitFlips() {
        let page = (0..<4092).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        let original = PageChecksum.compute(page)
        for bit in stride(from: 0, to: page.count * 8, by: 13) {
            var damaged = page
            damaged[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(PageChecksum.compute(damaged) != original)
        }
    }
}
