import Foundation

/// One stored column: an attribute value or a reference to another row (a to-one relationship).
enum ColumnValue: Hashable, Sendable {
    case value(AttributeValue)
    /// A reference to the row `key` of the entity with `code` (in the destination's hierarchy).
    case reference(code: UInt16, key: Int64)

    static let null = ColumnValue.value(.null)

    var isNull: Bool { if case .value(.null) = self { return true } else { return false } }
}

/// A row as stored: its concrete entity, its version (bumped by every save that writes it, the
/// equivalent of Core Data's Z_OPT) and its columns in the entity's slot order.
struct StoredRow: Hashable, Sendable {
    var entityCode: UInt16
    var version: UInt64
    var columns: RowColumns

    init(entityCode: UInt16, version: UInt64, columns: RowColumns) {
        self.entityCode = entityCode
        self.version = version
        self.columns = columns
    }

    init(entityCode: UInt16, version: UInt64, columns: [ColumnValue]) {
        self.init(entityCode: entityCode, version: version, columns: RowColumns(columns))
    }

    /// Checks that the row has one column per slot of `info` (Spec/object-store.md §3): a short
    /// or long row is damage, not missing values. The row (`key` of row tree `tree`) is named
    /// only in the error.
    /// - Throws: `StoreError.corruptRow` saying how many columns it has.
    /// - Complexity: O(1); inlined into the per-row loops that call it, the error made apart.
    @inline(__always)
    func checkColumnCount(of info: EntityInfo, tree: String, key: Int64) throws {
        let count = columns.count
        if count != info.columnCount { throw Self.columnCountError(count, info, tree, key) }
    }

    @inline(never)
    private static func columnCountError(_ count: Int, _ info: EntityInfo, _ tree: String, _ key: Int64) -> StoreError {
        .corruptRow(location: "\(tree)/\(key)", detail: "\(count) columns where \(info.name) has \(info.columnCount)")
    }
}

/// The binary encoding of rows (Spec/object-store.md, "Rows").
enum RowCodec {
    /// Format 3: varint header without a column count (the columns run to the end of the value).
    /// Format 2 (with a column count) and format 1 (fixed-width version and entity code) are still read.
    static let formatByte: UInt8 = 0x03
    static let countedFormat: UInt8 = 0x02
    static let fixedHeaderFormat: UInt8 = 0x01

    enum Tag: UInt8 {
        case null = 0, int = 1, double = 2, float = 3, boolFalse = 4, boolTrue = 5, string = 6, date = 7,
             data = 8, uuid = 9, url = 10, decimal = 11, reference = 12, wholeSecondsDate = 13, nonNegativeInt = 14
    }

    /// Tags 0x40 ..< 0x80 are the integers 0 ..< 64 themselves (no payload): flags, enumerations,
    /// small counts and order keys take one byte.
    static let smallIntBase: UInt8 = 0x40
    /// Tags 0x80 ..< 0xC0 are references to entity code `tag − 0x80`, followed by the primary
    /// key as an unsigned varint (most models have fewer than 64 entities).
    static let codedReferenceBase: UInt8 = 0x80
    static let inlineLimit: UInt8 = 0x40
    /// Whole-second dates are stored as such only below this magnitude (about 285 million
    /// years; below 2^53, so every such second is exact as a `Double`); a decoded one beyond
    /// it is damage.
    static let wholeSecondsLimit: Int64 = 9_000_000_000_000_000

    static func encode(_ row: StoredRow) -> [UInt8] {
        // Reserved before the first byte goes in (an array literal would be reallocated):
        // room for every column at its widest fixed size.
        var out: [UInt8] = []
        out.reserveCapacity(16 + row.columns.count * 9)
        encode(row, appendingTo: &out)
        return out
    }

    /// `encode` appended to `out` (a buffer reused from row to row).
    static func encode(_ row: StoredRow, appendingTo out: inout [UInt8]) {
        out.append(formatByte)
        appendVarint(row.version, &out)
        appendVarint(UInt64(row.entityCode), &out)
        for column in row.columns { append(column, &out) }
    }

    static func append(_ column: ColumnValue, _ out: inout [UInt8]) {
        switch column {
        case .reference(let code, let key):
            if code < UInt16(inlineLimit), key >= 0 {
                out.append(codedReferenceBase + UInt8(code))
                appendVarint(UInt64(key), &out)
            } else {
                out.append(Tag.reference.rawValue)
                appendVarint(UInt64(code), &out)
                appendVarint(zigzag(key), &out)
            }
        case .value(let value):
            switch value {
            case .null: out.append(Tag.null.rawValue)
            case .int(let v):
                if v >= 0 && v < Int64(inlineLimit) {
                    out.append(smallIntBase + UInt8(v))
                } else if v >= 0 {
                    out.append(Tag.nonNegativeInt.rawValue)
                    appendVarint(UInt64(v), &out)
                } else {
                    out.append(Tag.int.rawValue)
                    appendVarint(zigzag(v), &out)
                }
            case .double(let v): out.append(Tag.double.rawValue); appendFixed(v.bitPattern, &out)
            case .float(let v): out.append(Tag.float.rawValue); appendFixed(v.bitPattern, &out)
            case .bool(let v): out.append(v ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
            case .string(let v): out.append(Tag.string.rawValue); appendBytes(Array(v.utf8), &out)
            case .date(let v):
                // Whole seconds (timetables, most timestamps) as a varint, when that is exact.
                let seconds = v.timeIntervalSince1970
                if seconds.magnitude < Double(wholeSecondsLimit), let whole = Int64(exactly: seconds), Date(timeIntervalSince1970: Double(whole)) == v {
                    out.append(Tag.wholeSecondsDate.rawValue)
                    appendVarint(zigzag(whole), &out)
                } else {
                    // Otherwise Date's own representation, exactly: seconds since 2001-01-01.
                    out.append(Tag.date.rawValue)
                    appendFixed(v.timeIntervalSinceReferenceDate.bitPattern, &out)
                }
            case .data(let v): out.append(Tag.data.rawValue); appendBytes(Array(v), &out)
            case .uuid(let v):
                out.append(Tag.uuid.rawValue)
                withUnsafeBytes(of: v.uuid) { out.append(contentsOf: $0) }
            case .url(let v): out.append(Tag.url.rawValue); appendBytes(Array(v.absoluteString.utf8), &out)
            case .decimal(let v): out.append(Tag.decimal.rawValue); appendBytes(Array(v.description.utf8), &out)
            }
        }
    }

    /// Decodes a row; every length and count is checked against the bytes present.
    /// - Throws: `StoreError.corruptRow` describing the first inconsistency.
    static func decode(_ bytes: [UInt8], context: @autoclosure () -> String, keepsColumnsEncoded: Bool = true) throws -> StoredRow {
        try bytes.withUnsafeBytes { try decode($0, context: context(), keepsColumnsEncoded: keepsColumnsEncoded) }
    }

    /// `decode` reading the bytes in place (a value in its page). A format-3 row keeps a copy
    /// of its columns encoded (see `RowColumns`) unless `keepsColumnsEncoded` is false.
    static func decode(_ bytes: UnsafeRawBufferPointer, context: @autoclosure () -> String,
                       keepsColumnsEncoded: Bool = true) throws -> StoredRow {
        do { return try decoded(bytes, keepsColumnsEncoded: keepsColumnsEncoded) } catch {
            throw StoreError.corruptRow(location: context(), detail: error.detail)
        }
    }

    /// `decode` of the row `key` of the row tree `tree`, which are named only in the error of a
    /// malformed row: a hot loop's autoclosure naming the row would capture what names it
    /// (a retain and a release for every row read).
    /// A fetch passes its `arena`, which its rows' columns share.
    static func decode(_ bytes: UnsafeRawBufferPointer, tree: String, key: Int64, keepsColumnsEncoded: Bool = true,
                       arena: RowArena? = nil) throws -> StoredRow {
        do { return try decoded(bytes, keepsColumnsEncoded: keepsColumnsEncoded, arena: arena) } catch {
            throw StoreError.corruptRow(location: "\(tree)/\(key)", detail: error.detail)
        }
    }

    /// `decode(_:tree:key:keepsColumnsEncoded:)` of a copied row.
    static func decode(_ bytes: [UInt8], tree: String, key: Int64, keepsColumnsEncoded: Bool = true) throws -> StoredRow {
        try bytes.withUnsafeBytes { try decode($0, tree: tree, key: key, keepsColumnsEncoded: keepsColumnsEncoded) }
    }

    /// A row's bytes that cannot be read: what is wrong, and at which byte.
    struct Malformed: Error {
        let detail: String
    }

    /// `decode` without naming the row (its columns kept in `arena` when given).
    static func decoded(_ bytes: UnsafeRawBufferPointer, keepsColumnsEncoded: Bool, arena: RowArena? = nil) throws(Malformed) -> StoredRow {
        var reader = ByteReader(bytes: bytes)
        do {
            let format = try reader.byte()
            let version: UInt64, code: UInt16
            switch format {
            case formatByte, countedFormat:
                version = try reader.varint()
                let wide = try reader.varint()
                guard wide <= UInt64(UInt16.max) else { throw ByteReader.Failure.detail("entity code \(wide) out of range") }
                code = UInt16(wide)
            case fixedHeaderFormat:
                version = try reader.fixed(UInt64.self)
                code = try reader.fixed(UInt16.self)
            default: throw ByteReader.Failure.detail("unknown row format \(format)")
            }
            if format == formatByte, keepsColumnsEncoded, let columns = encodedColumns(reader, arena: arena) {
                return StoredRow(entityCode: code, version: version, columns: columns)
            }
            var columns: [ColumnValue] = []
            if format == formatByte {
                // Columns run to the end; each takes at least one byte. Room for a typical
                // row only: reserving one column per remaining byte allocated a buffer twenty
                // times too large (and the allocator's slow path) for every row read.
                columns.reserveCapacity(min(reader.remaining, 16))
                while !reader.isAtEnd { columns.append(try column(&reader, format: format)) }
            } else {
                let count = try reader.varint()
                // Every column takes at least one byte: a larger count cannot be honest.
                guard count <= UInt64(bytes.count) else { throw ByteReader.Failure.detail("column count \(count) exceeds row size") }
                columns.reserveCapacity(Int(count))
                for _ in 0..<Int(count) { columns.append(try column(&reader, format: format)) }
                guard reader.isAtEnd else { throw ByteReader.Failure.detail("\(reader.remaining) trailing bytes") }
            }
            return StoredRow(entityCode: code, version: version, columns: columns)
        } catch let failure as ByteReader.Failure {
            throw Malformed(detail: "\(failure.text) at byte \(reader.offset)")
        } catch {
            throw Malformed(detail: "\(error)")
        }
    }

    /// One column from `reader`. (Columns that passed `columnEnd` are read with
    /// `checkedColumn` instead, which checks nothing again.)
    static func column(_ reader: inout ByteReader, format: UInt8) throws -> ColumnValue {
        let raw = try reader.byte()
        if raw >= smallIntBase {
            if raw < codedReferenceBase { return .value(.int(Int64(raw - smallIntBase))) }
            if raw < codedReferenceBase + inlineLimit { return .reference(code: UInt16(raw - codedReferenceBase), key: try nonNegative(&reader)) }
        }
        guard let tag = Tag(rawValue: raw) else { throw ByteReader.Failure.detail("unknown column tag \(raw)") }
        switch tag {
        case .null: return .null
        case .int: return .value(.int(unzigzag(try reader.varint())))
        case .nonNegativeInt: return .value(.int(try nonNegative(&reader)))
        case .double: return .value(.double(Double(bitPattern: try reader.fixed(UInt64.self))))
        case .float: return .value(.float(Float(bitPattern: try reader.fixed(UInt32.self))))
        case .boolFalse: return .value(.bool(false))
        case .boolTrue: return .value(.bool(true))
        case .string: return .value(.string(try reader.string()))
        case .date:
            let seconds = Double(bitPattern: try reader.fixed(UInt64.self))
            // Format 1 counted from 1970; format 2 from 2001 (Date's own reference, lossless).
            return .value(.date(format == fixedHeaderFormat ? Date(timeIntervalSince1970: seconds) : Date(timeIntervalSinceReferenceDate: seconds)))
        case .wholeSecondsDate:
            let seconds = unzigzag(try reader.varint())
            guard seconds.magnitude < wholeSecondsLimit.magnitude else { throw ByteReader.Failure.detail("date out of range") }
            return .value(.date(Date(timeIntervalSince1970: Double(seconds))))
        case .data: return .value(.data(Data(try reader.lengthPrefixed())))
        case .uuid:
            let b = Array(try reader.bytes(16))
            return .value(.uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                                            b[12], b[13], b[14], b[15]))))
        case .url:
            let text = try reader.string()
            guard let url = URL(string: text) else { throw ByteReader.Failure.detail("invalid URL") }
            return .value(.url(url))
        case .decimal:
            let text = try reader.string()
            guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                throw ByteReader.Failure.detail("invalid decimal")
            }
            return .value(.decimal(value))
        case .reference:
            let code = try reader.varint()
            guard code <= UInt64(UInt16.max) else { throw ByteReader.Failure.detail("entity code \(code) out of range") }
            return .reference(code: UInt16(code), key: unzigzag(try reader.varint()))
        }
    }

    /// An unsigned varint that must fit a non-negative `Int64`.
    private static func nonNegative(_ reader: inout ByteReader) throws -> Int64 {
        let value = try reader.varint()
        guard value <= UInt64(Int64.max) else { throw ByteReader.Failure.detail("integer \(value) out of range") }
        return Int64(value)
    }

    /// Tests the columns `slots` (ascending, repeats allowed) of an encoded row of entity
    /// `entity` one by one, decoding only those: earlier columns are skipped by their tags and
    /// lengths, and the first failing test ends the walk. `test` gets the index into `slots`
    /// and the column. nil when the row is of another entity, not in the current format or has
    /// fewer columns (the caller decodes it whole, which reports what is wrong).
    /// - Complexity: O(bytes before the last column tested); allocates nothing.
    static func testColumns(_ slots: [Int], of bytes: UnsafeRawBufferPointer, entity: UInt16,
                            _ test: (Int, ColumnValue) -> Bool) throws -> Bool? {
        var reader = ByteReader(bytes: bytes)
        do {
            let format = try reader.byte()
            guard format == formatByte || format == countedFormat else { return nil }
            _ = try reader.varint()
            guard try reader.varint() == UInt64(entity) else { return nil }
            if format == countedFormat {
                let count = try reader.varint()
                guard let last = slots.last, UInt64(last) < count else { return nil }
            }
            // In format 3 a row with fewer columns runs out of bytes: a failure, so nil.
            var position = 0
            var previous: (slot: Int, value: ColumnValue)?
            for (index, slot) in slots.enumerated() {
                let value: ColumnValue
                if let previous, previous.slot == slot {
                    value = previous.value
                } else {
                    while position < slot {
                        try skipColumn(&reader)
                        position += 1
                    }
                    value = try column(&reader, format: format)
                    position += 1
                    previous = (slot, value)
                }
                if !test(index, value) { return false }
            }
            return true
        } catch is ByteReader.Failure {
            return nil
        }
    }

    /// The number in column `slot` of a format-3 row of entity `entity`, read in place: a
    /// date's seconds since 2001-01-01 (`dates`) or a double, exactly as decoding the column
    /// and reading `timeIntervalSinceReferenceDate` (or the double) would give it. nil when
    /// the row is of another entity or format, is malformed up to that column, or the column
    /// is of another kind or NaN (the caller then takes the general path, which reports
    /// damage).
    /// - Complexity: O(bytes before the column); allocates nothing.
    static func number(at slot: Int, of bytes: UnsafeRawBufferPointer, entity: UInt16, dates: Bool) -> Double? {
        if dates, let seconds = wholeSecondsInPlace(at: slot, of: bytes, entity: entity) {
            // What `Date(timeIntervalSince1970:)` keeps: seconds since 2001.
            return Double(seconds) - Date.timeIntervalBetween1970AndReferenceDate
        }
        // The header read here rather than shared with `testColumns`: sharing it cost 1% of a
        // foreign-key SUBQUERY (this runs once per member row).
        var reader = ByteReader(bytes: bytes)
        guard let format = try? reader.byte(), format == formatByte, (try? reader.varint()) != nil,
              (try? reader.varint()) == UInt64(entity) else { return nil }
        for _ in 0..<slot where (try? skipColumn(&reader)) == nil { return nil }
        guard let raw = try? reader.byte() else { return nil }
        let number: Double
        switch (raw, dates) {
        case (Tag.wholeSecondsDate.rawValue, true):
            guard let varint = try? reader.inlinedVarint() else { return nil }
            let seconds = unzigzag(varint)
            guard seconds.magnitude < wholeSecondsLimit.magnitude else { return nil }
            // What `Date(timeIntervalSince1970:)` keeps: seconds since 2001.
            number = Double(seconds) - Date.timeIntervalBetween1970AndReferenceDate
        case (Tag.date.rawValue, true), (Tag.double.rawValue, false):
            guard let bits = try? reader.fixed(UInt64.self) else { return nil }
            number = Double(bitPattern: bits)
        default:
            return nil
        }
        return number.isNaN ? nil : number
    }

    /// `number(at:of:entity:dates:)` for a whole-second date in the common row shape, with
    /// direct loads instead of a reader: one-byte header fields, columns before the date that
    /// are small integers, nulls, booleans or whole-second dates, and at least nine bytes left
    /// at each column. nil for any other row: the general path then answers, and for the rows
    /// handled here it gives the same seconds. (This runs for every member row a foreign-key
    /// SUBQUERY tests; the reader's checks and calls cost three times this.)
    @inline(__always)
    static func wholeSecondsInPlace(at slot: Int, of bytes: UnsafeRawBufferPointer, entity: UInt16) -> Int64? {
        guard slot >= 0, entity < 0x80, bytes.count >= 3, let base = bytes.baseAddress,
              base.load(as: UInt8.self) == formatByte, base.load(fromByteOffset: 1, as: UInt8.self) < 0x80,
              base.load(fromByteOffset: 2, as: UInt8.self) == UInt8(entity) else { return nil }
        let count = bytes.count
        var offset = 3, remaining = slot
        // A whole-second date's varint, after its tag at `at` (nine bytes are readable there).
        func varint(after at: Int) -> (value: UInt64, length: Int)? { ByteReader.eightByteVarint(at: base + (at &+ 1)) }
        // Each step moves past at least one byte: bounded by the row's length.
        while count &- offset >= 9 {
            let raw = base.load(fromByteOffset: offset, as: UInt8.self)
            if remaining == 0 {
                guard raw == Tag.wholeSecondsDate.rawValue, let (value, _) = varint(after: offset) else { return nil }
                let seconds = unzigzag(value)
                return seconds.magnitude < wholeSecondsLimit.magnitude ? seconds : nil
            }
            if raw >= smallIntBase && raw < codedReferenceBase || raw == Tag.null.rawValue
                || raw == Tag.boolFalse.rawValue || raw == Tag.boolTrue.rawValue {
                offset &+= 1
            } else if raw == Tag.wholeSecondsDate.rawValue, let (_, length) = varint(after: offset) {
                offset &+= 1 &+ length
            } else {
                return nil
            }
            remaining &-= 1
        }
        return nil
    }

    /// Moves past one column without building its value.
    static func skipColumn(_ reader: inout ByteReader) throws {
        let raw = try reader.byte()
        if raw >= smallIntBase {
            if raw < codedReferenceBase { return }
            if raw < codedReferenceBase + inlineLimit { _ = try reader.varint(); return }
        }
        guard let tag = Tag(rawValue: raw) else { throw ByteReader.Failure.detail("unknown column tag \(raw)") }
        switch tag {
        case .null, .boolFalse, .boolTrue: return
        case .int, .wholeSecondsDate, .nonNegativeInt: _ = try reader.inlinedVarint()
        case .double, .date: _ = try reader.bytes(8)
        case .float: _ = try reader.bytes(4)
        case .uuid: _ = try reader.bytes(16)
        case .string, .data, .url, .decimal: _ = try reader.lengthPrefixed()
        case .reference:
            _ = try reader.varint()
            _ = try reader.varint()
        }
    }

    /// The entity code in an encoded row's header, read in place; nil when the header is malformed.
    static func entityCode(ofRow bytes: UnsafeRawBufferPointer) -> UInt16? {
        guard let format = bytes.first else { return nil }
        switch format {
        case formatByte, countedFormat:
            var offset = 1
            // Skip the version varint, then read the code varint (at most 3 bytes for a UInt16).
            while offset < bytes.count, bytes[offset] & 0x80 != 0, offset < 11 { offset += 1 }
            offset += 1
            var code: UInt64 = 0
            for shift in stride(from: 0, to: 21, by: 7) {
                guard offset < bytes.count else { return nil }
                let byte = bytes[offset]
                offset += 1
                code |= UInt64(byte & 0x7F) << UInt64(shift)
                if byte & 0x80 == 0 { return code <= UInt64(UInt16.max) ? UInt16(code) : nil }
            }
            return nil
        case fixedHeaderFormat:
            guard bytes.count >= 11 else { return nil }
            return UInt16(bytes[9]) | UInt16(bytes[10]) << 8
        default:
            return nil
        }
    }

    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }
    static func unzigzag(_ value: UInt64) -> Int64 { Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1))) }

    static func appendVarint(_ value: UInt64, _ out: inout [UInt8]) {
        var remaining = value
        while remaining >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        out.append(UInt8(remaining))
    }

    static func appendFixed<T: FixedWidthInteger>(_ value: T, _ out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func appendBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        appendVarint(UInt64(bytes.count), &out)
        out.append(contentsOf: bytes)
    }
}
