/// A row's columns in slot order: values built in memory (by a save or a migration), or the
/// encoded columns of a row read from the store, each decoded when it is read.
///
/// Reading a row keeps one copy of its encoded columns, checked whole when read (every tag,
/// length and string, as a full decode checks them), so a column read later cannot fail. A
/// fetch that fills objects then pays for a share of an allocation per row (`RowArena`), not
/// one per string column plus the array of values; a column the app never reads is never decoded.
///
/// Equality and hashing are by decoded values, whatever the storage.
struct RowColumns: RandomAccessCollection, Hashable, Sendable {
    // Unchecked for `EncodedRows`, whose records are immutable once written (a `ManagedBuffer`
    // cannot declare itself Sendable).
    private enum Storage: @unchecked Sendable {
        case values([ColumnValue])
        /// The record at byte `row` of the allocation.
        case encoded(EncodedRows, row: Int)
    }

    private let storage: Storage

    init(_ values: [ColumnValue]) { storage = .values(values) }

    /// The row whose record starts at byte `row` of `rows`.
    init(encoded rows: EncodedRows, row: Int) { storage = .encoded(rows, row: row) }

    /// The columns of `area` at `offsets` (as `EncodedRows.write` takes them) in an allocation
    /// of their own.
    static func single(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>) -> RowColumns {
        let rows = EncodedRows.allocate(capacity: EncodedRows.recordBytes(columns: offsets.count, areaBytes: area.count))
        rows.write(area, offsets: offsets, at: 0)
        return RowColumns(encoded: rows, row: 0)
    }

    /// The longest column area kept encoded: offsets are 16 bits. Longer rows are decoded at once.
    static let maxEncodedBytes = Int(UInt16.max)

    var startIndex: Int { 0 }
    var endIndex: Int {
        switch storage {
        case .values(let values): return values.count
        case .encoded(let rows, let row): return rows.count(row: row)
        }
    }

    /// The column at `position`, decoded from the row's bytes when kept encoded.
    /// - Complexity: O(1) for numbers and references; O(length) for strings and data.
    subscript(position: Int) -> ColumnValue {
        switch storage {
        case .values(let values): return values[position]
        case .encoded(let rows, let row): return rows.column(position, row: row)
        }
    }

    /// The attribute value of the column at `position`: nil when `position` is out of range
    /// or the column is a reference.
    /// - Complexity: as the subscript.
    @inline(__always)
    func attributeValue(at position: Int) -> AttributeValue? {
        guard position >= 0, position < count, case .value(let value) = self[position] else { return nil }
        return value
    }

    /// The encoded storage, not retained, and the start of the row's record in it, when the
    /// columns are kept encoded: valid while these columns are kept.
    @inline(__always)
    var unretainedEncodedStorage: (rows: Unmanaged<EncodedRows>, row: Int)? {
        if case .encoded(let rows, let row) = storage { return (Unmanaged.passUnretained(rows), row) }
        return nil
    }

    /// The columns as an array of values.
    var values: [ColumnValue] {
        switch storage {
        case .values(let values): return values
        case .encoded: return Array(self)
        }
    }

    /// Appends the encoding of the column at `position` to `out` (copied as it is when kept encoded).
    func appendEncoded(_ position: Int, to out: inout [UInt8]) {
        switch storage {
        case .values(let values): RowCodec.append(values[position], &out)
        case .encoded(let rows, let row): rows.appendRaw(position, row: row, to: &out)
        }
    }

    /// Whether the columns are kept encoded (tests).
    var isEncoded: Bool { if case .encoded = storage { return true } else { return false } }

    /// Whether some column may be a reference: false when the columns are kept encoded and
    /// none is (most rows; `firstReference(where:)` then has nothing to find).
    var mayHaveReferences: Bool {
        switch storage {
        case .values: return true
        case .encoded(let rows, let row): return rows.hasReferences(row: row)
        }
    }

    /// The entity code of the first reference column for which `isUnknown` holds, decoding no
    /// other column (each column's tag is looked at: ask `mayHaveReferences` first).
    func firstReference(where isUnknown: (UInt16) -> Bool) -> UInt16? {
        switch storage {
        case .values(let values):
            for case .reference(let code, _) in values where isUnknown(code) { return code }
            return nil
        case .encoded(let rows, let row):
            for position in 0..<rows.count(row: row) where rows.isReference(position, row: row) {
                if case .reference(let code, _) = rows.column(position, row: row), isUnknown(code) { return code }
            }
            return nil
        }
    }

    static func == (a: RowColumns, b: RowColumns) -> Bool { a.elementsEqual(b) }

    func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for column in self { hasher.combine(column) }
    }
}

extension RowCodec {
    /// The columns of a format-3 row, from `reader` (past the header) to the end: kept encoded
    /// when every column checks out as `column` would decode it and none needs parsing (URLs,
    /// decimals); nil otherwise (the caller decodes them, which reports what is wrong).
    /// Copied into `arena` when given (a fetch's rows share allocations), else into an
    /// allocation of their own.
    /// - Complexity: O(bytes); one allocation, or a share of one.
    static func encodedColumns(_ reader: ByteReader, arena: RowArena? = nil) -> RowColumns? {
        let area = UnsafeRawBufferPointer(rebasing: reader.bytes[reader.offset...])
        guard area.count <= RowColumns.maxEncodedBytes else { return nil }
        // Offsets of up to 64 columns on the stack; a wider row is walked twice.
        return withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 64) { offsets -> RowColumns? in
            var checker = ByteReader(bytes: area)
            var count = 0
            while !checker.isAtEnd {
                if count < offsets.count { offsets[count] = UInt16(truncatingIfNeeded: checker.offset) }
                guard (try? checkColumn(&checker)) == true else { return nil }
                count += 1
            }
            if count <= offsets.count {
                return keep(area, offsets: UnsafeBufferPointer(rebasing: offsets[..<count]), arena: arena)
            }
            let starts = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
                var walker = ByteReader(bytes: area)
                // Checked above: skipping cannot fail.
                repeat {
                    buffer[initialized] = UInt16(truncatingIfNeeded: walker.offset)
                    initialized += 1
                } while initialized < count && (try? skipColumn(&walker)) != nil
            }
            return starts.withUnsafeBufferPointer { keep(area, offsets: $0, arena: arena) }
        }
    }

    /// The checked columns of `area` at `offsets`, copied into `arena` or an allocation of their own.
    @inline(__always)
    private static func keep(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>, arena: RowArena?) -> RowColumns {
        if let arena { return arena.place(area, offsets: offsets) }
        return RowColumns.single(area, offsets: offsets)
    }

    /// Whether `tag` starts a reference column.
    static func isReferenceTag(_ tag: UInt8) -> Bool {
        tag == Tag.reference.rawValue || (tag >= codedReferenceBase && tag < codedReferenceBase + inlineLimit)
    }

    /// Moves past one column, checking it as `column(_:format:)` checks it while decoding,
    /// without building its value: true when it would decode; false for a URL or decimal
    /// column (which only parsing checks).
    /// - Throws: `ByteReader.Failure` where `column` would throw.
    @inline(__always)
    static func checkColumn(_ reader: inout ByteReader) throws -> Bool {
        let raw = try reader.byte()
        if raw >= smallIntBase {
            if raw < codedReferenceBase { return true }
            if raw < codedReferenceBase + inlineLimit { return try reader.varint() <= UInt64(Int64.max) }
        }
        guard let tag = Tag(rawValue: raw) else { return false }
        switch tag {
        case .null, .boolFalse, .boolTrue: return true
        case .int: _ = try reader.varint()
        case .nonNegativeInt: return try reader.varint() <= UInt64(Int64.max)
        case .wholeSecondsDate: return unzigzag(try reader.varint()).magnitude < wholeSecondsLimit.magnitude
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
}

/// UTF-8 well-formedness as the Unicode standard defines it (table 3-7): no overlong forms,
/// no surrogates, nothing above U+10FFFF — what `String(decoding:as:)` keeps unrepaired.
enum UTF8Check {
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        let highBitsMask: UInt64 = 0x8080_8080_8080_8080
        while index < count {
            // ASCII eight bytes at a time, also between the accented letters of a name: a word
            // with a high bit moves on to its first such byte.
            let remaining = count - index
            if remaining >= 8 {
                let highBits = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) & highBitsMask
                if highBits == 0 {
                    index += 8
                    continue
                }
                index += highBits.trailingZeroBitCount >> 3
            } else if count >= 8 {
                // The last few bytes: the end of the string's last word, shifted past the
                // bytes before them (checked already).
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                let highBits = (word >> UInt64((8 - remaining) * 8)) & highBitsMask
                if highBits == 0 { return true }
                index += highBits.trailingZeroBitCount >> 3
            } else if bytes[index] < 0x80 {  // a string shorter than a word
                index += 1
                continue
            }
            let lead = bytes[index]  // not ASCII
            let length: Int, low: UInt8, high: UInt8
            switch lead {
            case 0xC2...0xDF: (length, low, high) = (2, 0x80, 0xBF)
            case 0xE0: (length, low, high) = (3, 0xA0, 0xBF)
            case 0xED: (length, low, high) = (3, 0x80, 0x9F)
            case 0xE1...0xEF: (length, low, high) = (3, 0x80, 0xBF)
            case 0xF0: (length, low, high) = (4, 0x90, 0xBF)
            case 0xF1...0xF3: (length, low, high) = (4, 0x80, 0xBF)
            case 0xF4: (length, low, high) = (4, 0x80, 0x8F)
            default: return false
            }
            guard count - index >= length else { return false }
            let second = bytes[index + 1]
            guard second >= low, second <= high else { return false }
            for continuation in (index + 2)..<(index + length) where bytes[continuation] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }
}

/// A row's columns with some replaced (a batch update's new values over the stored row),
/// read without copying the others.
struct PatchedColumns: RandomAccessCollection {
    let base: RowColumns
    /// (slot, new value), few.
    let replacements: [(slot: Int, value: ColumnValue)]

    var startIndex: Int { 0 }
    var endIndex: Int { base.count }

    subscript(position: Int) -> ColumnValue {
        for replacement in replacements where replacement.slot == position { return replacement.value }
        return base[position]
    }
}
