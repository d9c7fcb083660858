@testable import ArborEngine
import ArborEngineTestSupport
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

    @Test("the vector loop agrees with a lane-by-lane reference on random inputs of every long length class")
    func vectorLoopMatchesScalarReference() {
        var generator = SplitMix64(seed: 0x5EED)
        // Lengths around the block (1024) and stripe (64) boundaries, and page sizes.
        let lengths = [241, 255, 256, 257, 1023, 1024, 1025, 1087, 1088, 2048, 4092, 4096, 8188, 16380, 65532]
            + (0..<40).map { _ in Int.random(in: 241...20_000, using: &generator) }
        for length in lengths {
            let input = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(XXH3.hash(input) == ScalarXXH3Long.hash(input), "length \(length)")
        }
    }

    @Test("the portable loop and the AVX2 loop leave the same accumulators (the AVX2 one where the CPU has it)")
    func bothLoopsAgree() {
        var generator = SplitMix64(seed: 0xA7C2)
        let lengths = [241, 255, 256, 1023, 1024, 1025, 1088, 4092, 8188, 65532] + (0..<30).map { _ in Int.random(in: 241...20_000, using: &generator) }
        for length in lengths {
            let input = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            input.withUnsafeBytes { bytes in
                XXH3.secret.withUnsafeBytes { secret in
                    guard let base = bytes.baseAddress, let key = secret.baseAddress else { return }
                    let portable = XXH3.accumulated(base, length, key)
                    #expect(XXH3.merged(portable, length, key) == ScalarXXH3Long.hash(input), "length \(length)")
                    if CPUFeatures.hasAVX2 {
                        #expect(XXH3.accumulatedWithAVX2(base, length, key) == portable, "length \(length)")
                    }
                }
            }
        }
    }
}

/// XXH3-64 for inputs over 240 bytes, eight scalar lanes as the specification writes them: the
/// reference the library's vector loop is checked against.
enum ScalarXXH3Long {
    /// The specification's default secret (itself checked by the reference vectors).
    static let secret = XXH3.secret

    static func read64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }

    static func hash(_ input: [UInt8]) -> UInt64 {
        precondition(input.count > 240)
        var accumulators: [UInt64] = [0xC2B2_AE3D, 0x9E37_79B1_85EB_CA87, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9,
                                      0x85EB_CA77_C2B2_AE63, 0x85EB_CA77, 0x27D4_EB2F_1656_67C5, 0x9E37_79B1]
        func stripe(_ offset: Int, _ keyOffset: Int) {
            for lane in 0..<8 {
                let data = read64(input, offset + 8 * lane)
                let keyed = data ^ read64(secret, keyOffset + 8 * lane)
                accumulators[lane ^ 1] &+= data
                accumulators[lane] &+= (keyed & 0xFFFF_FFFF) &* (keyed >> 32)
            }
        }
        let length = input.count, blockLength = 1024
        let blocks = (length - 1) / blockLength
        for block in 0..<blocks {
            for n in 0..<16 { stripe(block * blockLength + n * 64, n * 8) }
            for lane in 0..<8 {
                let value = accumulators[lane]
                accumulators[lane] = ((value ^ (value >> 47)) ^ read64(secret, 128 + 8 * lane)) &* 0x9E37_79B1
            }
        }
        for n in 0..<(((length - 1) - blockLength * blocks) / 64) { stripe(blocks * blockLength + n * 64, n * 8) }
        stripe(length - 64, 121)
        var result = UInt64(length) &* 0x9E37_79B1_85EB_CA87
        for pair in 0..<4 {
            let product = (accumulators[2 * pair] ^ read64(secret, 11 + 16 * pair))
                .multipliedFullWidth(by: accumulators[2 * pair + 1] ^ read64(secret, 19 + 16 * pair))
            result &+= product.low ^ product.high
        }
        result ^= result >> 37
        result &*= 0x1656_6791_9E37_79F9
        return result ^ (result >> 32)
    }
}
