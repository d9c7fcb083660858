@testable import Arbor
import ArborEngineTestSupport
import Foundation
import Testing

@Suite("Rows read with their columns kept encoded: the same values, the same errors")
struct RowColumnsTests {
    @Test("a row read keeps its columns encoded (unless one is a URL or decimal) and reads as a decoded row")
    func encodedReadsAsDecoded() throws {
        var rng = SplitMix64(seed: 0xC01)
        var encodedRows = 0
        for _ in 0..<3_000 {
            let row = RowCodecTests.randomRow(&rng)
            let bytes = RowCodec.encode(row)
            let lazy = try RowCodec.decode(bytes, context: "test")
            let eager = try RowCodec.decode(bytes, context: "test", keepsColumnsEncoded: false)
            #expect(!eager.columns.isEncoded)
            let parses = row.columns.contains { column in
                switch column {
                case .value(.url), .value(.decimal): return true
                default: return false
                }
            }
            #expect(lazy.columns.isEncoded == !parses)
            if lazy.columns.isEncoded { encodedRows += 1 }
            #expect(lazy == row && eager == row)
            #expect(lazy.hashValue == eager.hashValue)
            #expect(lazy.columns.count == row.columns.count)
            for slot in row.columns.indices { #expect(lazy.columns[slot] == row.columns[slot]) }
            // Whether a row may hold references is known from its tags when it is kept encoded.
            let hasReference = row.columns.contains { if case .reference = $0 { return true } else { return false } }
            #expect(lazy.columns.mayHaveReferences == (hasReference || !lazy.columns.isEncoded))
            // Reference checks decode reference columns only, and find what the values do.
            for limit: UInt16 in [0, 3, 40, 70] {
                let expected = row.columns.values.lazy.compactMap { column -> UInt16? in
                    if case .reference(let code, _) = column, code >= limit { return code }
                    return nil
                }.first
                #expect(lazy.columns.firstReference { $0 >= limit } == expected)
            }
        }
        #expect(encodedRows > 1_000)
    }

    @Test("rows wider than the offsets kept on the stack (64 columns) read the same")
    func wideRows() throws {
        for width in [63, 64, 65, 200] {
            let columns = (0..<width).map { slot -> ColumnValue in
                switch slot % 4 {
                case 0: return .value(.string("column \(slot) ä"))
                case 1: return .value(.int(Int64(slot) * 1_000_003))
                case 2: return .reference(code: UInt16(slot % 90), key: Int64(slot))
                default: return .null
                }
            }
            let row = StoredRow(entityCode: 7, version: 1, columns: columns)
            let read = try RowCodec.decode(RowCodec.encode(row), context: "test")
            #expect(read.columns.isEncoded)
            #expect(read.columns.values == columns)
            #expect(read.columns.firstReference { $0 >= 60 } == (width > 62 ? 62 : nil))
        }
    }

    @Test("rows a fetch reads into one arena read as decoded rows, at most 16 to an allocation of at most 4 KiB")
    func arenaRowsReadAsDecoded() throws {
        var rng = SplitMix64(seed: 0xA7E4A)
        let arena = RowArena()
        var placed: [(read: StoredRow, expected: StoredRow)] = []
        for index in 0..<3_000 {
            var row = RowCodecTests.randomRow(&rng)
            // Now and then a row larger than an allocation shared by several.
            if index % 97 == 0 { row.columns = RowColumns(row.columns.values + [.value(.string(String(repeating: "ä", count: 2_500)))]) }
            let bytes = RowCodec.encode(row)
            let read = try bytes.withUnsafeBytes { try RowCodec.decode($0, tree: "test", key: Int64(index), arena: arena) }
            placed.append((read, try RowCodec.decode(bytes, context: "test", keepsColumnsEncoded: false)))
        }
        // Checked once all are placed: a later row written into an allocation changes no earlier one.
        var rowsByAllocation: [UnsafeMutableRawPointer: Int] = [:]
        for (read, expected) in placed {
            #expect(read == expected)
            #expect(read.columns.count == expected.columns.count)
            for slot in expected.columns.indices {
                var raw: [UInt8] = [], expectedRaw: [UInt8] = []
                read.columns.appendEncoded(slot, to: &raw)
                expected.columns.appendEncoded(slot, to: &expectedRaw)
                #expect(raw == expectedRaw)
            }
            #expect(read.columns.firstReference { $0 >= 30 } == expected.columns.firstReference { $0 >= 30 })
            guard let storage = read.columns.unretainedEncodedStorage else { continue }
            rowsByAllocation[storage.rows.toOpaque(), default: 0] += 1
            let capacity = storage.rows.takeUnretainedValue().withUnsafeMutablePointerToHeader { $0.pointee.capacity }
            #expect(capacity <= RowArena.maxBytes || rowsByAllocation[storage.rows.toOpaque()] == 1)
        }
        #expect(rowsByAllocation.values.allSatisfy { $0 <= RowArena.maxRows })
        let encoded = rowsByAllocation.values.reduce(0, +)
        #expect(encoded > 1_000 && rowsByAllocation.count * 4 < encoded)
    }

    @Test("damaged rows: keeping columns encoded accepts exactly the rows a full decode accepts, with the same values")
    func damagedRowsAgree() {
        var rng = SplitMix64(seed: 0xBAD)
        let interesting: [UInt8] = [0x00, 0x01, 0x06, 0x0C, 0x0E, 0x0F, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
        var rejected = 0, accepted = 0
        for _ in 0..<20_000 {
            var bytes = RowCodec.encode(RowCodecTests.randomRow(&rng))
            for _ in 0..<(1 + Int(rng.next() % 3)) where bytes.count > 3 {
                let position = 3 + Int(rng.next() % UInt64(bytes.count - 3))
                bytes[position] = rng.next() % 2 == 0 ? interesting[Int(rng.next() % UInt64(interesting.count))] : UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 4 == 0 { bytes.removeLast(Int(rng.next() % UInt64(min(bytes.count, 4) + 1))) }
            let lazy = try? RowCodec.decode(bytes, context: "test")
            let eager = try? RowCodec.decode(bytes, context: "test", keepsColumnsEncoded: false)
            // Compared re-encoded: a damaged double may be a NaN, which equals nothing.
            #expect(lazy.map(RowCodec.encode) == eager.map(RowCodec.encode), "\(bytes)")
            if lazy != nil {
                accepted += 1
            } else {
                rejected += 1
            }
        }
        #expect(rejected > 2_000 && accepted > 2_000)
    }

    @Test("damaged rows: a visit finding its columns in place accepts exactly the rows a reading of those columns accepts, with the same values")
    func damagedRowsInSlotsAgree() throws {
        var rng = SplitMix64(seed: 0x5107)
        let interesting: [UInt8] = [0x00, 0x01, 0x06, 0x0C, 0x0E, 0x0F, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]
        var rejected = 0, accepted = 0
        for round in 0..<20_000 {
            var bytes = RowCodec.encode(RowCodecTests.randomRow(&rng))
            for _ in 0..<Int(rng.next() % 3) where bytes.count > 3 {
                let position = 3 + Int(rng.next() % UInt64(bytes.count - 3))
                bytes[position] = rng.next() % 2 == 0 ? interesting[Int(rng.next() % UInt64(interesting.count))] : UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 4 == 0 { bytes.removeLast(Int(rng.next() % UInt64(min(bytes.count, 4) + 1))) }
            let wanted = (0..<(1 + Int(rng.next() % 4))).map { _ in Int(rng.next() % 12) }
            let slots = RowSlots(RowSlotLayout(wanted, columnCount: 12))
            let expected = Self.referenceSlots(bytes, slots.slots)
            let loaded: Bool = bytes.withUnsafeBytes { area in
                do {
                    try slots.load(encoded: area)
                } catch {
                    return false
                }
                // Read while the row is held, as a visit reads it.
                defer { slots.endRow() }
                let values = slots.slots.map { slots.column($0) }
                // Compared re-encoded: a damaged double may be a NaN, which equals nothing.
                #expect(expected.map { $0.map(Self.encoded) } == values.map(Self.encoded), "round \(round): \(bytes) slots \(slots.slots)")
                return true
            }
            #expect(loaded == (expected != nil), "round \(round): \(bytes) slots \(slots.slots)")
            if loaded { accepted += 1 } else { rejected += 1 }
            #expect(slots.column(slots.slots[0]) == .null)  // nothing is read once the row's visit ended
        }
        #expect(rejected > 2_000 && accepted > 2_000, "\(accepted) \(rejected)")
    }

    /// The columns `slots` (ascending) of an encoded row, read plainly with a `ByteReader` (as
    /// a visit read them before it found them in place); nil where that reading throws.
    static func referenceSlots(_ bytes: [UInt8], _ slots: [Int]) -> [ColumnValue]? {
        bytes.withUnsafeBytes { area -> [ColumnValue]? in
            var reader = ByteReader(bytes: area)
            guard (try? reader.byte()) == RowCodec.formatByte, (try? reader.varint()) != nil, (try? reader.varint()) != nil else { return nil }
            var position = 0
            var values: [ColumnValue] = []
            for slot in slots {
                while position < slot {
                    guard (try? RowCodec.skipColumn(&reader)) != nil else { return nil }
                    position += 1
                }
                guard let value = try? RowCodec.column(&reader, format: RowCodec.formatByte) else { return nil }
                values.append(value)
                position += 1
            }
            return values
        }
    }

    @Test("the column check ends each column where a reading of it ends, refuses what a reading refuses, and what it accepts reads in place as a reading decodes it")
    func columnEndMatchesReading() {
        var rng = SplitMix64(seed: 0xC0_1E4D)
        let tags: [UInt8] = Array(0...15) + [0x3F, 0x40, 0x7F, 0x80, 0x95, 0xBF, 0xC0, 0xFF]
        let interesting: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xBF, 0xC2, 0xE0, 0xED, 0xF4, 0xFF]
        var ended = 0, refused = 0, skippedOnly = 0
        for round in 0..<100_000 {
            // A tag, then a payload of random length: long varints (all high bits), lengths
            // past the end, bytes that are not UTF-8, near the end of the area or far from it.
            var bytes = [tags[Int(rng.next() % UInt64(tags.count))]]
            let payload = Int(rng.next() % (round % 3 == 0 ? 24 : 12))
            for _ in 0..<payload {
                switch rng.next() % 4 {
                case 0: bytes.append(0xFF)
                case 1: bytes.append(interesting[Int(rng.next() % UInt64(interesting.count))])
                case 2: bytes.append(UInt8(rng.next() % 0x80))
                default: bytes.append(UInt8(truncatingIfNeeded: rng.next()))
                }
            }
            let start = Int(rng.next() % 3)
            bytes = [UInt8](repeating: 0x40, count: start) + bytes
            let expected: Int? = bytes.withUnsafeBytes { area in
                var reader = ByteReader(bytes: area)
                for _ in 0..<start { _ = try? reader.byte() }
                guard (try? Self.referenceCheck(&reader)) == true else { return nil }
                return reader.offset
            }
            let actual = bytes.withUnsafeBytes { area in area.baseAddress.flatMap { RowCodec.columnEnd($0, at: start, count: area.count) } }
            #expect(actual == expected, "\(bytes) from \(start)")
            if expected == nil { refused += 1 } else { ended += 1 }
            bytes.withUnsafeBytes { area in
                guard let base = area.baseAddress else { return }
                // A column the check accepts reads in place as a reading decodes it.
                if actual != nil {
                    var reader = ByteReader(bytes: area)
                    for _ in 0..<start { _ = try? reader.byte() }
                    let decoded = try? RowCodec.column(&reader, format: RowCodec.formatByte)
                    #expect(decoded.map(Self.encoded) == Self.encoded(RowCodec.checkedColumn(base, at: start, count: area.count)), "\(bytes) from \(start)")
                }
                // Skipping (no text checked) accepts at least what the check accepts, and ends
                // where skipping with a reader ends.
                let skipped = RowCodec.columnEnd(base, at: start, count: area.count, checksText: false)
                if actual != nil { #expect(skipped == actual, "\(bytes) from \(start)") }
                if let skipped {
                    var reader = ByteReader(bytes: area)
                    for _ in 0..<start { _ = try? reader.byte() }
                    #expect((try? RowCodec.skipColumn(&reader)) != nil && reader.offset == skipped, "\(bytes) from \(start)")
                    if actual == nil { skippedOnly += 1 }
                }
            }
        }
        #expect(ended > 20_000 && refused > 20_000 && skippedOnly > 500, "\(ended) \(refused) \(skippedOnly)")
    }

    /// A column's bytes: columns compared as they are stored (a NaN equals itself).
    static func encoded(_ column: ColumnValue) -> [UInt8] {
        var out: [UInt8] = []
        RowCodec.append(column, &out)
        return out
    }

    /// What reading a column checks, written plainly with a `ByteReader` (as the column check
    /// was before it walked a pointer): true when `column(_:format:)` would decode the column.
    static func referenceCheck(_ reader: inout ByteReader) throws -> Bool {
        let raw = try reader.byte()
        if raw >= RowCodec.smallIntBase {
            if raw < RowCodec.codedReferenceBase { return true }
            if raw < RowCodec.codedReferenceBase + RowCodec.inlineLimit { return try reader.varint() <= UInt64(Int64.max) }
        }
        guard let tag = RowCodec.Tag(rawValue: raw) else { return false }
        switch tag {
        case .null, .boolFalse, .boolTrue: return true
        case .int: _ = try reader.varint()
        case .nonNegativeInt: return try reader.varint() <= UInt64(Int64.max)
        case .wholeSecondsDate: return RowCodec.unzigzag(try reader.varint()).magnitude < RowCodec.wholeSecondsLimit.magnitude
        case .double, .date: _ = try reader.bytes(8)
        case .float: _ = try reader.bytes(4)
        case .uuid: _ = try reader.bytes(16)
        case .data: _ = try reader.lengthPrefixed()
        case .string: return UTF8Check.isValid(try reader.lengthPrefixed())
        case .url, .decimal: return false
        case .reference: return try reader.varint() <= UInt64(UInt16.max) && (try? reader.varint()) != nil
        }
        return true
    }

    @Test("the UTF-8 check accepts exactly what Swift's validating decoder accepts")
    func utf8CheckMatchesSwift() {
        var rng = SplitMix64(seed: 0x0708)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
                                    0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var valid = 0
        for round in 0..<50_000 {
            // Some long ASCII runs first, so the eight-at-a-time path meets what follows them.
            var bytes = [UInt8](repeating: 0x61, count: round % 3 == 0 ? Int(rng.next() % 20) : 0)
            for _ in 0..<Int(rng.next() % 9) { bytes.append(interesting[Int(rng.next() % UInt64(interesting.count))]) }
            // And ASCII runs after them, so the eight-at-a-time path resumes inside and after a
            // sequence, and stops at a high byte anywhere in its word.
            if round % 2 == 1 {
                bytes += [UInt8](repeating: 0x62, count: Int(rng.next() % 12))
                for _ in 0..<Int(rng.next() % 4) { bytes.append(interesting[Int(rng.next() % UInt64(interesting.count))]) }
                bytes += [UInt8](repeating: 0x63, count: Int(rng.next() % 10))
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBytes { UTF8Check.isValid($0) } == expected, "\(bytes)")
            if expected { valid += 1 }
        }
        #expect(valid > 3_000)
        let samples = ["U Görlitzer Bahnhof", "東京", "😀", "\u{10FFFF}", "\u{D7FF}\u{E000}", String(repeating: "abcdefgh", count: 9) + "é",
                       "Tram Möckern Fließstraße (Bernau)", "é" + String(repeating: "x", count: 15) + "ß" + "abcdefg"]
        for text in samples { #expect(Array(text.utf8).withUnsafeBytes { UTF8Check.isValid($0) }, "\(text)") }
    }
}
