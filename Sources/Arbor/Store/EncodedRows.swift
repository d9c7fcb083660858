/// The encoded columns (format 3) of one or more rows in one allocation, each row behind its
/// offsets. A row read alone has an allocation of its own; the rows a fetch reads share
/// allocations (`RowArena`), a few rows to each, instead of one allocation per row.
///
/// A row at `start` is a record: an 8-byte header — the column count (`UInt16`,
/// little-endian), a flags byte (bit 0: some column is a reference), a zero byte, the length
/// of the columns (`UInt32`, little-endian) — then one little-endian `UInt16` offset per
/// column, counted from the first column's tag, then the columns.
///
/// A record is written once, before its columns are handed out, and never changed: so rows
/// can be shared across threads (the row cache holds rows). Only the arena that made the
/// allocation writes to it, and only after the last record, which no row reads.
final class EncodedRows: ManagedBuffer<EncodedRows.Header, UInt8> {
    struct Header {
        /// Bytes the allocation was made for (its records never pass this).
        var capacity: Int
    }

    /// Bytes of a record's header.
    static let recordHeaderBytes = 8

    /// The bytes of a record for `columns` columns taking `areaBytes` bytes.
    @inline(__always)
    static func recordBytes(columns: Int, areaBytes: Int) -> Int { recordHeaderBytes + 2 * columns + areaBytes }

    /// An allocation of `capacity` bytes, with no record yet.
    static func allocate(capacity: Int) -> EncodedRows {
        let made = create(minimumCapacity: capacity) { _ in Header(capacity: capacity) }
        // `create` makes an instance of the class it is called on.
        return unsafeDowncast(made, to: EncodedRows.self)
    }

    /// Writes the record of the columns in `area` that `RowCodec.columnEnd` accepted, at the
    /// offsets given (one per column, ascending, each below `area.count`), at byte `start`:
    /// the caller has room for `recordBytes` there, and no row reads those bytes yet.
    /// `hasReferences`: whether some column's tag is a reference's (the check saw every tag).
    func write(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>, hasReferences: Bool, at start: Int) {
        withUnsafeMutablePointers { header, elements in
            precondition(start >= 0 && start + Self.recordBytes(columns: offsets.count, areaBytes: area.count) <= header.pointee.capacity,
                         "record out of its allocation")
            let record = elements + start
            record[0] = UInt8(truncatingIfNeeded: offsets.count)
            record[1] = UInt8(truncatingIfNeeded: offsets.count >> 8)
            record[2] = hasReferences ? 1 : 0
            record[3] = 0
            for byte in 0..<4 { record[4 + byte] = UInt8(truncatingIfNeeded: area.count >> (8 * byte)) }
            let offsetBytes = record + Self.recordHeaderBytes
            #if _endian(little)
            // Already little-endian: copied as they are.
            if let source = offsets.baseAddress {
                UnsafeMutableRawPointer(offsetBytes).copyMemory(from: source, byteCount: 2 * offsets.count)
            }
            #else
            for (position, offset) in offsets.enumerated() {
                offsetBytes[2 * position] = UInt8(truncatingIfNeeded: offset)
                offsetBytes[2 * position + 1] = UInt8(truncatingIfNeeded: offset >> 8)
            }
            #endif
            if let source = area.baseAddress {
                (offsetBytes + 2 * offsets.count).initialize(from: source.assumingMemoryBound(to: UInt8.self), count: area.count)
            }
        }
    }

    /// The record at `start`: its column count, the start of its offsets and of its columns,
    /// and the columns' length.
    @inline(__always)
    private func withRecord<R>(_ start: Int, _ body: (_ count: Int, _ record: UnsafeMutablePointer<UInt8>, _ columns: UnsafeMutablePointer<UInt8>, _ length: Int) -> R) -> R {
        withUnsafeMutablePointerToElements { elements in
            let record = elements + start
            let count = Int(record[0]) | Int(record[1]) << 8
            let length = Int(record[4]) | Int(record[5]) << 8 | Int(record[6]) << 16 | Int(record[7]) << 24
            return body(count, record, record + Self.recordHeaderBytes + 2 * count, length)
        }
    }

    /// Column `position`'s offset from the first column, in the record at `record`.
    @inline(__always)
    private static func offset(_ position: Int, _ record: UnsafeMutablePointer<UInt8>) -> Int {
        let bytes = record + recordHeaderBytes + 2 * position
        return Int(bytes[0]) | Int(bytes[1]) << 8
    }

    /// The columns of the row at `start`.
    func count(row start: Int) -> Int { withRecord(start) { count, _, _, _ in count } }

    /// Whether some column of the row at `start` is a reference.
    func hasReferences(row start: Int) -> Bool { withRecord(start) { _, record, _, _ in record[2] & 1 != 0 } }

    /// Whether column `position` (`0 ..< count`) of the row at `start` is a reference.
    func isReference(_ position: Int, row start: Int) -> Bool {
        withRecord(start) { count, record, columns, _ in
            precondition(position >= 0 && position < count, "column index out of range")
            return RowCodec.isReferenceTag(columns[Self.offset(position, record)])
        }
    }

    /// Appends column `position`'s encoded bytes (tag and payload) of the row at `start` to
    /// `out`, as they are.
    func appendRaw(_ position: Int, row start: Int, to out: inout [UInt8]) {
        withRecord(start) { count, record, columns, length in
            precondition(position >= 0 && position < count, "column index out of range")
            let begin = Self.offset(position, record)
            let end = position + 1 < count ? Self.offset(position + 1, record) : length
            out.append(contentsOf: UnsafeRawBufferPointer(start: columns + begin, count: max(0, end - begin)))
        }
    }

    /// The attribute value of column `position` of the row at `start`: nil when `position` is
    /// out of range or the column is a reference.
    /// - Complexity: as `column(_:row:)`.
    @inline(__always)
    func attributeValue(at position: Int, row start: Int) -> AttributeValue? {
        guard position >= 0, position < count(row: start), case .value(let value) = column(position, row: start) else { return nil }
        return value
    }

    /// Column `position` (`0 ..< count`) of the row at `start`, decoded.
    /// - Complexity: O(1) for numbers and references; O(length) for strings and data.
    func column(_ position: Int, row start: Int) -> ColumnValue {
        withRecord(start) { count, record, columns, length in
            precondition(position >= 0 && position < count, "column index out of range")
            // The columns passed `columnEnd` when the row was read: decoded without a reader.
            return RowCodec.checkedColumn(columns, at: Self.offset(position, record), count: length)
        }
    }
}

/// Where one fetch keeps the encoded columns of the rows it reads: records laid one after the
/// other in shared allocations (`EncodedRows`), so a fetch of n rows makes about n / 16
/// allocations instead of n. Allocations grow from one row's room to 16 rows' (up to 4 KiB),
/// so a fetch of a few rows allocates little more than it keeps.
///
/// The price: an object keeps its whole allocation alive, so one object kept from a large
/// fetch keeps at most 15 other rows' columns, and at most 4 KiB beside its own.
/// Not `Sendable`: one fetch uses it, on one thread.
final class RowArena {
    /// Most records in one allocation.
    static let maxRows = 16
    /// Most bytes of an allocation made for several records (a larger row has one of its own).
    static let maxBytes = 4096

    private var block: EncodedRows?
    private var used = 0, capacity = 0, rows = 0
    /// Records the next allocation is made for: doubles with each allocation, up to `maxRows`.
    private var rowsPerBlock = 1

    /// The columns of `area` at `offsets` (as `EncodedRows.write` takes them), copied into
    /// the current allocation, or into a new one when it is full.
    /// - Complexity: O(bytes); an allocation for about one row in 16.
    func place(_ area: UnsafeRawBufferPointer, offsets: UnsafeBufferPointer<UInt16>, hasReferences: Bool) -> RowColumns {
        let size = EncodedRows.recordBytes(columns: offsets.count, areaBytes: area.count)
        if block == nil || rows == Self.maxRows || used + size > capacity {
            capacity = max(size, min(Self.maxBytes, size * rowsPerBlock))
            block = EncodedRows.allocate(capacity: capacity)
            rowsPerBlock = min(2 * rowsPerBlock, Self.maxRows)
            (used, rows) = (0, 0)
        }
        // Set just above.
        guard let block else { return RowColumns.single(area, offsets: offsets, hasReferences: hasReferences) }
        block.write(area, offsets: offsets, hasReferences: hasReferences, at: used)
        let start = used
        used += size
        rows += 1
        return RowColumns(encoded: block, row: start)
    }
}
