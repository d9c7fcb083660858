@testable import Arbor
import Foundation
import Testing

@Suite("Row encoding: compact header, whole-second dates, format 1 still read")
struct RowCodecTests {
    static let columns: [ColumnValue] = [
        .null, .value(.int(-3)), .value(.double(-0.5)), .value(.float(1.5)), .value(.bool(true)), .value(.string("Görlitzer")),
        .value(.date(Date(timeIntervalSince1970: 90_600))), .value(.date(Date(timeIntervalSince1970: 0.25))),
        .value(.date(Date(timeIntervalSinceReferenceDate: 0.1))), .value(.date(Date(timeIntervalSince1970: -86_400))),
        .value(.data(Data([0, 1, 2]))), .value(.uuid(UUID())), .value(.url(URL(fileURLWithPath: "/tmp/vbb x.txt"))),
        .value(.decimal(Decimal(1275) / 100)), .reference(code: 3, key: 123_456),
    ]

    @Test("every column round-trips exactly, dates included")
    func roundTrip() throws {
        let row = StoredRow(entityCode: 300, version: 70_000, columns: Self.columns)
        let bytes = RowCodec.encode(row)
        #expect(try RowCodec.decode(bytes, context: "test") == row)
        #expect(bytes.withUnsafeBytes { RowCodec.entityCode(ofRow: $0) } == 300)
    }

    @Test("a whole-second date takes a varint; a fractional one its 8 bytes")
    func dateSizes() {
        func size(_ date: Date) -> Int { RowCodec.encode(StoredRow(entityCode: 1, version: 1, columns: [.value(.date(date))])).count }
        #expect(size(Date(timeIntervalSince1970: 90_600)) == 4 + 1 + 3)   // header, tag, 3-byte varint
        #expect(size(Date(timeIntervalSince1970: 90_600.5)) == 4 + 1 + 8)
    }

    @Test("format 1 rows (fixed-width header) decode")
    func formatOne() throws {
        var bytes: [UInt8] = [0x01]
        withUnsafeBytes(of: UInt64(9).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(2).littleEndian) { bytes += $0 }
        bytes += [2, 1, 6, 5]  // two columns: int 3 (zigzag 6), bool true
        let row = try RowCodec.decode(bytes, context: "test")
        #expect(row == StoredRow(entityCode: 2, version: 9, columns: [.value(.int(3)), .value(.bool(true))]))
        #expect(bytes.withUnsafeBytes { RowCodec.entityCode(ofRow: $0) } == 2)
    }

    @Test("format 1 dates count from 1970, format 2 dates from 2001")
    func dateEpochs() throws {
        var one: [UInt8] = [0x01]
        withUnsafeBytes(of: UInt64(1).littleEndian) { one += $0 }
        withUnsafeBytes(of: UInt16(1).littleEndian) { one += $0 }
        one += [1, 7]
        withUnsafeBytes(of: (28_800.5 as Double).bitPattern.littleEndian) { one += $0 }
        #expect(try RowCodec.decode(one, context: "test").columns == [.value(.date(Date(timeIntervalSince1970: 28_800.5)))])
    }

    @Test("invalid UTF-8 in a string column is an error, even where the repair has the same length")
    func invalidUTF8() {
        for text: [UInt8] in [[0xF0, 0x90, 0x80], [0xED, 0xA0, 0x80], [0xFF], [0x41, 0xC3], [0xC0, 0xAF]] {
            let bytes: [UInt8] = [0x02, 1, 1, 1, 6, UInt8(text.count)] + text
            #expect(throws: StoreError.self, "\(text)") { try RowCodec.decode(bytes, context: "test") }
        }
        let valid: [UInt8] = [0x02, 1, 1, 1, 6, 4, 0xF0, 0x9F, 0x98, 0x80]
        #expect((try? RowCodec.decode(valid, context: "test"))?.columns == [.value(.string("😀"))])
    }

    @Test("malformed headers are errors, not crashes")
    func malformed() {
        for bytes: [UInt8] in [[], [0x03], [0x02], [0x02, 0x80], [0x02, 1, 0xFF, 0xFF, 0xFF, 0x7F], [0x01, 1, 2]] {
            #expect(throws: StoreError.self) { try RowCodec.decode(bytes, context: "test") }
        }
        #expect([UInt8]([0x02, 1, 0xFF, 0xFF, 0x7F]).withUnsafeBytes { RowCodec.entityCode(ofRow: $0) } == nil)
    }
}
