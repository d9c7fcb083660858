import CPageKernels

/// XXH3-64 (xxHash 0.8, seed 0, default secret), in Swift (its long-input loop also in C for AVX2).
///
/// The page checksum is the low 32 bits of XXH3-64 of a page's bytes 4..<pageSize
/// (`PageChecksum`). XXH3's long-input loop is eight independent multiply-accumulate lanes,
/// several times faster than table-driven CRC-32C without hardware instructions.
public enum XXH3 {
    static let prime32_1: UInt64 = 0x9E37_79B1
    static let prime32_2: UInt64 = 0x85EB_CA77
    static let prime32_3: UInt64 = 0xC2B2_AE3D
    static let prime64_1: UInt64 = 0x9E37_79B1_85EB_CA87
    static let prime64_2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    static let prime64_3: UInt64 = 0x1656_67B1_9E37_79F9
    static let prime64_4: UInt64 = 0x85EB_CA77_C2B2_AE63
    static let prime64_5: UInt64 = 0x27D4_EB2F_1656_67C5
    static let primeMX1: UInt64 = 0x1656_6791_9E37_79F9
    static let primeMX2: UInt64 = 0x9FB2_1C65_1E98_DF25

    /// The 192-byte default secret of the xxHash specification.
    static let secret: [UInt8] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
        0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
        0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
        0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
        0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
        0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
        0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
        0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
        0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
        0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
        0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
        0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
    ]

    /// XXH3-64 of `bytes` with seed 0.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        secret.withUnsafeBytes { secretBytes in
            let length = bytes.count
            guard let key = secretBytes.baseAddress else { return 0 }
            guard let input = bytes.baseAddress else { return hashEmpty(key) }
            switch length {
            case 0: return hashEmpty(key)
            case 1...3: return hash1to3(input, length, key)
            case 4...8: return hash4to8(input, length, key)
            case 9...16: return hash9to16(input, length, key)
            case 17...128: return hash17to128(input, length, key)
            case 129...240: return hash129to240(input, length, key)
            default: return hashLong(input, length, key)
            }
        }
    }

    /// XXH3-64 of a byte array.
    public static func hash(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { hash($0) } }

    // MARK: Primitives

    @inline(__always) static func read64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        p.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
    }
    @inline(__always) static func read32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(p.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian)
    }
    @inline(__always) static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }
    @inline(__always) static func foldedMultiply(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.low ^ product.high
    }
    @inline(__always) static func avalanche64(_ h: UInt64) -> UInt64 {
        var h = h
        h ^= h >> 33; h = h &* prime64_2
        h ^= h >> 29; h = h &* prime64_3
        return h ^ (h >> 32)
    }
    @inline(__always) static func avalanche(_ h: UInt64) -> UInt64 {
        var h = h
        h ^= h >> 37
        h = h &* primeMX1
        return h ^ (h >> 32)
    }
    @inline(__always) static func rrmxmx(_ h: UInt64, _ length: Int) -> UInt64 {
        var h = h
        h ^= rotl(h, 49) ^ rotl(h, 24)
        h = h &* primeMX2
        h ^= (h >> 35) &+ UInt64(length)
        h = h &* primeMX2
        return h ^ (h >> 28)
    }
    @inline(__always) static func mix16(_ input: UnsafeRawPointer, _ offset: Int, _ key: UnsafeRawPointer, _ keyOffset: Int) -> UInt64 {
        foldedMultiply(read64(input, offset) ^ read64(key, keyOffset), read64(input, offset + 8) ^ read64(key, keyOffset + 8))
    }

    // MARK: Short inputs

    static func hashEmpty(_ key: UnsafeRawPointer) -> UInt64 {
        avalanche64(read64(key, 56) ^ read64(key, 64))
    }

    static func hash1to3(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        let c1 = UInt32(input.load(fromByteOffset: 0, as: UInt8.self))
        let c2 = UInt32(input.load(fromByteOffset: length >> 1, as: UInt8.self))
        let c3 = UInt32(input.load(fromByteOffset: length - 1, as: UInt8.self))
        let combined = (c1 << 16) | (c2 << 24) | c3 | (UInt32(length) << 8)
        let bitflip = (read32(key, 0) ^ read32(key, 4))
        return avalanche64(UInt64(combined) ^ bitflip)
    }

    static func hash4to8(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        let first = read32(input, 0), last = read32(input, length - 4)
        let bitflip = read64(key, 8) ^ read64(key, 16)
        return rrmxmx((last &+ (first << 32)) ^ bitflip, length)
    }

    static func hash9to16(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        let low = read64(input, 0) ^ (read64(key, 24) ^ read64(key, 32))
        let high = read64(input, length - 8) ^ (read64(key, 40) ^ read64(key, 48))
        let accumulator = UInt64(length) &+ low.byteSwapped &+ high &+ foldedMultiply(low, high)
        return avalanche(accumulator)
    }

    static func hash17to128(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        var accumulator = UInt64(length) &* prime64_1
        if length > 32 {
            if length > 64 {
                if length > 96 {
                    accumulator = accumulator &+ mix16(input, 48, key, 96) &+ mix16(input, length - 64, key, 112)
                }
                accumulator = accumulator &+ mix16(input, 32, key, 64) &+ mix16(input, length - 48, key, 80)
            }
            accumulator = accumulator &+ mix16(input, 16, key, 32) &+ mix16(input, length - 32, key, 48)
        }
        accumulator = accumulator &+ mix16(input, 0, key, 0) &+ mix16(input, length - 16, key, 16)
        return avalanche(accumulator)
    }

    static func hash129to240(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        var accumulator = UInt64(length) &* prime64_1
        for round in 0..<8 { accumulator = accumulator &+ mix16(input, 16 * round, key, 16 * round) }
        var end = mix16(input, length - 16, key, 136 - 17)
        accumulator = avalanche(accumulator)
        for round in 8..<(length / 16) { end = end &+ mix16(input, 16 * round, key, 16 * (round - 8) + 3) }
        return avalanche(accumulator &+ end)
    }

    // MARK: Long inputs

    /// The eight accumulators before the first stripe, in the specification's order.
    static let initialLanes = SIMD8<UInt64>(prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1)

    /// With AVX2 the accumulation takes four lanes a vector, half the instructions of the
    /// portable loop.
    static func hashLong(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        merged(CPUFeatures.hasAVX2 ? accumulatedWithAVX2(input, length, key) : accumulated(input, length, key), length, key)
    }

    /// The accumulators after every stripe of `input` (more than 240 bytes), through the AVX2 loop.
    static func accumulatedWithAVX2(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> SIMD8<UInt64> {
        var lanes = initialLanes
        withUnsafeMutablePointer(to: &lanes) { vector in
            vector.withMemoryRebound(to: UInt64.self, capacity: 8) { lanes in
                arbor_page_hash_accumulate_avx2(lanes, input.assumingMemoryBound(to: UInt8.self), length, key.assumingMemoryBound(to: UInt8.self))
            }
        }
        return lanes
    }

    /// The accumulators after every stripe of `input` (more than 240 bytes), through the
    /// portable loop: its eight lanes in four two-lane vectors (SSE2 on x86-64, NEON on ARM).
    /// Each stripe is four vector loads, xors, 32×32→64-bit multiplies (`pmuludq`) and adds
    /// instead of eight of each. Lane order is the specification's: vector `v` holds
    /// accumulators `2v` and `2v + 1`, and each adds the other's input word (the swap).
    static func accumulated(_ input: UnsafeRawPointer, _ length: Int, _ key: UnsafeRawPointer) -> SIMD8<UInt64> {
        typealias Lanes = SIMD2<UInt64>
        let initial = initialLanes
        var v0 = Lanes(initial[0], initial[1]), v1 = Lanes(initial[2], initial[3])
        var v2 = Lanes(initial[4], initial[5]), v3 = Lanes(initial[6], initial[7])
        let low32 = Lanes(repeating: 0xFFFF_FFFF)

        @inline(__always) func load(_ pointer: UnsafeRawPointer, _ offset: Int) -> Lanes {
            Lanes(read64(pointer, offset), read64(pointer, offset + 8))
        }
        @inline(__always) func accumulate(_ lanes: inout Lanes, _ offset: Int, _ keyOffset: Int) {
            let data = load(input, offset)
            let keyed = data ^ load(key, keyOffset)
            lanes &+= Lanes(data.y, data.x) &+ (keyed & low32) &* (keyed &>> 32)
        }
        @inline(__always) func stripe(_ offset: Int, _ keyOffset: Int) {
            accumulate(&v0, offset, keyOffset)
            accumulate(&v1, offset + 16, keyOffset + 16)
            accumulate(&v2, offset + 32, keyOffset + 32)
            accumulate(&v3, offset + 48, keyOffset + 48)
        }
        @inline(__always) func scramble(_ lanes: inout Lanes, _ keyOffset: Int) {
            lanes = ((lanes ^ (lanes &>> 47)) ^ load(key, keyOffset)) &* Lanes(repeating: prime32_1)
        }

        let secretSize = 192, stripesPerBlock = (secretSize - 64) / 8, blockLength = 64 * stripesPerBlock
        let blocks = (length - 1) / blockLength
        for block in 0..<blocks {
            for n in 0..<stripesPerBlock { stripe(block * blockLength + n * 64, n * 8) }
            let s = secretSize - 64
            scramble(&v0, s); scramble(&v1, s + 16); scramble(&v2, s + 32); scramble(&v3, s + 48)
        }
        let lastStripes = ((length - 1) - blockLength * blocks) / 64
        for n in 0..<lastStripes { stripe(blocks * blockLength + n * 64, n * 8) }
        stripe(length - 64, secretSize - 64 - 7)
        return SIMD8(v0.x, v0.y, v1.x, v1.y, v2.x, v2.y, v3.x, v3.y)
    }

    /// The hash of a long input from its accumulators: each pair mixed with the secret, then
    /// the avalanche.
    @inline(__always)
    static func merged(_ lanes: SIMD8<UInt64>, _ length: Int, _ key: UnsafeRawPointer) -> UInt64 {
        var result = UInt64(length) &* prime64_1
        result = result &+ foldedMultiply(lanes[0] ^ read64(key, 11), lanes[1] ^ read64(key, 19))
        result = result &+ foldedMultiply(lanes[2] ^ read64(key, 27), lanes[3] ^ read64(key, 35))
        result = result &+ foldedMultiply(lanes[4] ^ read64(key, 43), lanes[5] ^ read64(key, 51))
        result = result &+ foldedMultiply(lanes[6] ^ read64(key, 59), lanes[7] ^ read64(key, 67))
        return avalanche(result)
    }
}

/// The page checksum: the low 32 bits of XXH3-64 of bytes 4..<pageSize of a page.
public enum PageChecksum {
    /// The checksum of `bytes` (the page without its first four bytes).
    @inline(__always) public static func compute(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(truncatingIfNeeded: XXH3.hash(bytes))
    }

    public static func compute(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { compute($0) } }
}
