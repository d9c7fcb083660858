import ArborEngine
import Testing

@Suite("CRC-32C page checksum")
struct ChecksumTests {
    @Test("the standard check value and known vectors")
    func knownVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum(Array(0..<32)) == 0x46DD_794E)
    }

    @Test("slicing-by-8 agrees with the bitwise definition at every length and alignment")
    func slicingMatchesBitwise() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return ~crc
        }
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for start in 0..<9 {
            for end in stride(from: start, through: data.count, by: 7) {
                #expect(CRC32C.checksum(Array(data[start..<end])) == bitwise(data[start..<end]))
            }
        }
    }
}
