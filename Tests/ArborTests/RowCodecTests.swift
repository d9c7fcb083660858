@testable import Arbor
import ArborEngineTestSupport
import Foundation
import Testing

@Suite("Row encoding: compact header, whole-second dates, inline small integers and references, formats 1 and 2 still read")
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
        #expect(size(Date(timeIntervalSince1970: 90_600)) == 3 + 1 + 3)   // header, tag, 3-byte varint
        #expect(size(Date(timeIntervalSince1970: 90_600.5)) == 3 + 1 + 8)
    }

    @Test("integers 0..<64 are their tag; other non-negative ones an unsigned varint; references to codes below 64 carry the code in the tag")
    func compactColumns() {
        func size(_ column: ColumnValue) -> Int { RowCodec.encode(StoredRow(entityCode: 1, version: 1, columns: [column])).count - 3 }
        #expect(size(.value(.int(0))) == 1)
        #expect(size(.value(.int(63))) == 1)
        #expect(size(.value(.int(64))) == 2)
        #expect(size(.value(.int(127))) == 2)
        #expect(size(.value(.int(128))) == 3)
        #expect(size(.value(.int(-1))) == 2)
        #expect(size(.reference(code: 2, key: 12_800)) == 3)
        #expect(size(.reference(code: 63, key: 127)) == 2)
        #expect(size(.reference(code: 64, key: 127)) == 1 + 1 + 2)  // tag 12, code, zigzag key
    }

    /// A row of up to 11 columns: integers and references near encoding edges, dates, and the
    /// columns of `columns`.
    static func randomRow(_ rng: inout SplitMix64) -> StoredRow {
        let edges: [Int64] = [0, 1, 63, 64, 127, 128, -1, -64, .max, .min, 12_800, 3_000_000]
        var columns: [ColumnValue] = []
        for _ in 0..<Int(rng.next() % 12) {
            let pick = rng.next()
            let integer = pick % 3 == 0 ? edges[Int(rng.next() % UInt64(edges.count))] : Int64(bitPattern: rng.next()) >> (rng.next() % 64)
            switch pick % 5 {
            case 0, 1: columns.append(.value(.int(integer)))
            case 2: columns.append(.reference(code: UInt16(truncatingIfNeeded: rng.next() % 70), key: integer))
            case 3: columns.append(.value(.date(Date(timeIntervalSince1970: Double(integer % 1_000_000_000)))))
            default: columns.append(columns.count % 2 == 0 ? .value(.string(Self.texts[Int(rng.next() % UInt64(Self.texts.count))]))
                                    : Self.columns[Int(rng.next() % UInt64(Self.columns.count))])
            }
        }
        return StoredRow(entityCode: UInt16(truncatingIfNeeded: rng.next() % 300 + 1), version: rng.next() % 1_000, columns: columns)
    }

    static let texts = ["", "U Görlitzer Bahnhof", "S+U Tegel Tor", "ß", "😀 Zoo", "Straße Damm (Berlin)", String(repeating: "x", count: 300), "東京"]

    @Test("random rows round-trip, and testColumns reads each column as decode does")
    func randomRoundTrip() throws {
        var rng = SplitMix64(seed: 0xA4B0)
        for _ in 0..<2_000 {
            let row = Self.randomRow(&rng)
            let columns = row.columns.values, count = columns.count
            let bytes = RowCodec.encode(row)
            #expect(try RowCodec.decode(bytes, context: "test") == row)
            guard !columns.isEmpty else { continue }
            let slots = Array(0..<count)
            var seen: [ColumnValue] = []
            let passed = try bytes.withUnsafeBytes { raw in
                try RowCodec.testColumns(slots, of: raw, entity: row.entityCode) { _, value in seen.append(value); return true }
            }
            #expect(passed == true)
            #expect(seen == columns)
            // A slot past the last column is not answered in place (the caller decodes and reports).
            let beyond = try bytes.withUnsafeBytes { try RowCodec.testColumns([count], of: $0, entity: row.entityCode) { _, _ in true } }
            #expect(beyond == nil)
        }
    }

    @Test("number(at:) reads a date or double column in place exactly as decoding it does, and nothing else")
    func numbersInPlace() {
        var rng = SplitMix64(seed: 0xDA7E)
        var read = 0
        for _ in 0..<3_000 {
            var row = Self.randomRow(&rng)
            // More dates and doubles than the generator makes, fractional and whole.
            var columns = row.columns.values
            for slot in columns.indices where rng.next() % 3 == 0 {
                let seconds = Double(Int64(bitPattern: rng.next()) >> 30) + (rng.next() % 2 == 0 ? 0 : 0.25)
                columns[slot] = rng.next() % 2 == 0 ? .value(.date(Date(timeIntervalSince1970: seconds)))
                    : .value(.double(rng.next() % 8 == 0 ? .nan : seconds))
            }
            row = StoredRow(entityCode: row.entityCode, version: row.version, columns: columns)
            let bytes = RowCodec.encode(row)
            bytes.withUnsafeBytes { raw in
                for slot in 0...columns.count {
                    for dates in [true, false] {
                        let expected: Double?
                        switch slot < columns.count ? columns[slot] : .null {
                        case .value(.date(let date)) where dates: expected = date.timeIntervalSinceReferenceDate
                        case .value(.double(let number)) where !dates: expected = number.isNaN ? nil : number
                        default: expected = nil
                        }
                        let found = RowCodec.number(at: slot, of: raw, entity: row.entityCode, dates: dates)
                        #expect(found?.bitPattern == expected?.bitPattern, "slot \(slot) of \(columns)")
                        if found != nil { read += 1 }
                    }
                }
                #expect(RowCodec.number(at: 0, of: raw, entity: row.entityCode &+ 1, dates: true) == nil)
            }
        }
        #expect(read > 3_000)
    }

    @Test("varints: the value, the error and the offset after are those of reading byte by byte")
    func varintsAsByteByByte() {
        /// The reference: LEB128 read one byte at a time, at most ten bytes, the tenth at most 1.
        func reference(_ bytes: [UInt8]) -> (value: UInt64?, offset: Int) {
            var result: UInt64 = 0
            for index in 0..<10 {
                guard index < bytes.count else { return (nil, index) }
                let byte = bytes[index]
                if index == 9 && byte > 1 { return (nil, index + 1) }
                result |= UInt64(byte & 0x7F) << UInt64(7 * index)
                if byte & 0x80 == 0 { return (result, index + 1) }
            }
            return (nil, 10)
        }
        var rng = SplitMix64(seed: 0x1EB)
        let interesting: [UInt8] = [0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFF]
        for _ in 0..<20_000 {
            let count = Int(rng.next() % 13)
            let bytes = (0..<count).map { _ in rng.next() % 2 == 0 ? interesting[Int(rng.next() % 7)] : UInt8(truncatingIfNeeded: rng.next()) | 0x80 }
            let expected = reference(bytes)
            bytes.withUnsafeBytes { raw in
                var reader = ByteReader(bytes: raw)
                let value = try? reader.varint()
                #expect(value == expected.value, "\(bytes)")
                #expect(reader.offset == expected.offset, "\(bytes)")
            }
        }
        for value: UInt64 in [0, 1, 127, 128, 16_383, 16_384, 1_700_000_000, .max, .max - 1, 1 << 63] {
            var encoded: [UInt8] = []
            RowCodec.appendVarint(value, &encoded)
            encoded.withUnsafeBytes { raw in
                var reader = ByteReader(bytes: raw)
                #expect((try? reader.varint()) == value)
                #expect(reader.isAtEnd)
            }
        }
    }

    @Test("format 2 rows (with a column count) decode")
    func formatTwo() throws {
        let bytes: [UInt8] = [0x02, 7, 2, 3, 1, 6, 12, 1, 0x80, 0xC8, 0x01, 0x0D, 0x04]  // int 3, ref (1, 12_800), date 2 s
        let row = try RowCodec.decode(bytes, context: "test")
        #expect(row == StoredRow(entityCode: 2, version: 7, columns: [.value(.int(3)), .reference(code: 1, key: 12_800),
                                                                        .value(.date(Date(timeIntervalSince1970: 2)))]))
        #expect(bytes.withUnsafeBytes { RowCodec.entityCode(ofRow: $0) } == 2)
        let tested = try bytes.withUnsafeBytes { try RowCodec.testColumns([2], of: $0, entity: 2) { _, value in value == row.columns[2] } }
        #expect(tested == true)
        #expect(throws: StoreError.self) { try RowCodec.decode([0x02, 7, 2, 2, 0x41], context: "test") }  // one column of two
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
        #expect(try RowCodec.decode(one, context: "test").columns.values == [.value(.date(Date(timeIntervalSince1970: 28_800.5)))])
    }

    @Test("invalid UTF-8 in a string column is an error, even where the repair has the same length")
    func invalidUTF8() {
        for text: [UInt8] in [[0xF0, 0x90, 0x80], [0xED, 0xA0, 0x80], [0xFF], [0x41, 0xC3], [0xC0, 0xAF]] {
            let bytes: [UInt8] = [0x02, 1, 1, 1, 6, UInt8(text.count)] + text
            #expect(throws: StoreError.self, "\(text)") { try RowCodec.decode(bytes, context: "test") }
        }
        let valid: [UInt8] = [0x02, 1, 1, 1, 6, 4, 0xF0, 0x9F, 0x98, 0x80]
        #expect((try? RowCodec.decode(valid, context: "test"))?.columns.values == [.value(.string("😀"))])
    }

    @Test("malformed headers are errors, not crashes")
    func malformed() {
        for bytes: [UInt8] in [[], [0x03], [0x02], [0x02, 0x80], [0x02, 1, 0xFF, 0xFF, 0xFF, 0x7F], [0x01, 1, 2], [0x04, 1, 1],
                               [0x03, 1, 1, 0xC0], [0x03, 1, 1, 0x81], [0x03, 1, 1, 0x0E, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]] {
            #expect(throws: StoreError.self) { try RowCodec.decode(bytes, context: "test") }
        }
        #expect([UInt8]([0x02, 1, 0xFF, 0xFF, 0x7F]).withUnsafeBytes { RowCodec.entityCode(ofRow: $0) } == nil)
    }
}
