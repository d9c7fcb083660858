/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), computed slicing-by-8.
///
/// Used as the page checksum. Pure Swift so the format does not depend on a C library. The eight
/// 256-entry tables live in one flat, immutable buffer so the inner loop has no bounds checks
/// or array indirections.
public enum CRC32C {
    /// 8 × 256 entries: table `t` at `t * 256`.
    private struct Tables: @unchecked Sendable {
        // Written once during initialization, then only read.
        let base: UnsafeMutablePointer<UInt32>
    }

    private static let tables: Tables = {
        let base = UnsafeMutablePointer<UInt32>.allocate(capacity: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            base[i] = crc
        }
        for t in 1..<8 {
            for i in 0..<256 {
                let previous = base[(t - 1) * 256 + i]
                base[t * 256 + i] = (previous >> 8) ^ base[Int(previous & 0xFF)]
            }
        }
        return Tables(base: base)
    }()

    /// The CRC-32C of `bytes`, continuing from `seed` (0 for a fresh checksum).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        guard let start = bytes.baseAddress else { return seed }
        let t = tables.base
        var crc = ~seed
        var pointer = start
        var remaining = bytes.count
        while remaining >= 8 {
            let low = pointer.loadUnaligned(as: UInt32.self).littleEndian ^ crc
            let high = pointer.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
            crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                ^ t[256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
            pointer += 8
            remaining -= 8
        }
        while remaining > 0 {
            crc = (crc >> 8) ^ t[Int((crc ^ UInt32(pointer.load(as: UInt8.self))) & 0xFF)]
            pointer += 1
            remaining -= 1
        }
        return ~crc
    }

    /// The CRC-32C of a byte array.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
