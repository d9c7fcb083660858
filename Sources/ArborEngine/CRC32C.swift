/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), computed slicing-by-8.
///
/// Used as the page checksum. Pure Swift so the format does not depend on a C library;
/// about 1–2 GB/s in release builds, i.e. a few microseconds per 4 KiB page.
public enum CRC32C {
    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][i] = crc
        }
        for i in 0..<256 {
            for t in 1..<8 {
                let previous = tables[t - 1][i]
                tables[t][i] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The CRC-32C of `bytes`, continuing from `seed` (0 for a fresh checksum).
    public static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        var index = 0
        let count = bytes.count
        let t0 = tables[0], t1 = tables[1], t2 = tables[2], t3 = tables[3]
        let t4 = tables[4], t5 = tables[5], t6 = tables[6], t7 = tables[7]
        while index + 8 <= count {
            let low = bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian ^ crc
            let high = bytes.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self).littleEndian
            crc = t7[Int(low & 0xFF)] ^ t6[Int((low >> 8) & 0xFF)]
                ^ t5[Int((low >> 16) & 0xFF)] ^ t4[Int(low >> 24)]
                ^ t3[Int(high & 0xFF)] ^ t2[Int((high >> 8) & 0xFF)]
                ^ t1[Int((high >> 16) & 0xFF)] ^ t0[Int(high >> 24)]
            index += 8
        }
        while index < count {
            crc = (crc >> 8) ^ t0[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
            index += 1
        }
        return ~crc
    }

    /// The CRC-32C of a byte array.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
