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
    static func single(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>, hasReferences: Bool) -> RowColumns {
        let rows = EncodedRows.allocate(capacity: EncodedRows.recordBytes(columns: offsets.count, areaBytes: area.count))
        rows.write(area, offsets: offsets, hasReferences: hasReferences, at: 0)
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
        guard let base = area.baseAddress else {
            return keep(area, offsets: UnsafeBufferPointer(start: nil, count: 0), hasReferences: false, arena: arena)
        }
        let end = area.count
        // Offsets of up to 64 columns on the stack; a wider row is walked twice.
        return withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 64) { offsets -> RowColumns? in
            var offset = 0, count = 0
            var hasReferences = false
            while offset < end {
                if count < offsets.count { offsets[count] = UInt16(truncatingIfNeeded: offset) }
                hasReferences = hasReferences || isReferenceTag(base.load(fromByteOffset: offset, as: UInt8.self))
                guard let next = columnEnd(base, at: offset, count: end) else { return nil }
                offset = next
                count += 1
            }
            if count <= offsets.count {
                return keep(area, offsets: UnsafeBufferPointer(rebasing: offsets[..<count]), hasReferences: hasReferences, arena: arena)
            }
            let starts = [UInt16](unsafeUninitializedCapacity: count) { buffer, initialized in
                var walker = ByteReader(bytes: area)
                // Checked above: skipping cannot fail, and need not check again.
                repeat {
                    buffer[initialized] = UInt16(truncatingIfNeeded: walker.offset)
                    initialized += 1
                } while initialized < count && (try? skipColumn(&walker)) != nil
            }
            return starts.withUnsafeBufferPointer { keep(area, offsets: $0, hasReferences: hasReferences, arena: arena) }
        }
    }

    /// The checked columns of `area` at `offsets`, copied into `arena` or an allocation of their own.
    @inline(__always)
    private static func keep(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>, hasReferences: Bool,
                             arena: RowArena?) -> RowColumns {
        if let arena { return arena.place(area, offsets: offsets, hasReferences: hasReferences) }
        return RowColumns.single(area, offsets: offsets, hasReferences: hasReferences)
    }

    /// Whether `tag` starts a reference column.
    static func isReferenceTag(_ tag: UInt8) -> Bool {
        tag == Tag.reference.rawValue || (tag >= codedReferenceBase && tag < codedReferenceBase + inlineLimit)
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
