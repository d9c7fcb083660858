import Foundation

/// Which stored columns a value fetch reads, and where each one's value goes: made once per
/// value type and entity (`ManagedObjectContext.valueFields`), shared by its fetches' `RowSlots`.
struct RowSlotLayout {
    /// The slots read, ascending, each once.
    let slots: [Int]
    /// For each slot up to the largest read: its position in `slots`, or -1.
    let positions: [Int]

    /// Reads `slots` (any order, repeats allowed) of rows of an entity with `columnCount`
    /// columns; slots past them (transient attributes) are not stored and read as nil.
    /// - Complexity: O(n log n) for n slots.
    init(_ slots: [Int], columnCount: Int) {
        var read = slots.filter { $0 >= 0 && $0 < columnCount }
        read.sort()
        var unique: [Int] = []
        unique.reserveCapacity(read.count)
        for slot in read where unique.last != slot { unique.append(slot) }
        self.slots = unique
        var positions = [Int](repeating: -1, count: (unique.last ?? -1) + 1)
        for (position, slot) in unique.enumerated() { positions[slot] = position }
        self.positions = positions
    }
}

/// The columns a value fetch reads from each row it visits (`StoreStorage.visitMatches`),
/// found in the row's stored bytes where they lie: the columns before and between them are
/// skipped by their tags and lengths, those read are checked as they are found, and each is
/// decoded only when it is read (`column`, `attribute`). Nothing of the row is kept once its
/// visit ends (`endRow`).
///
/// Rows of earlier formats, rows holding a URL or a decimal the fetch reads, and rows of
/// storages that hold decoded rows are decoded into the slots instead.
///
/// One fetch, one thread: the slots are reloaded per row and read before the next.
final class RowSlots {
    /// The slots read, ascending, each once.
    let slots: [Int]
    /// For each slot up to the largest read: its position in `slots`, or -1.
    private let positions: [Int]
    /// The current row, when it is read in place: its bytes, valid only until `endRow`.
    @exclusivity(unchecked) private var row: UnsafeRawPointer?
    @exclusivity(unchecked) private var rowCount = 0
    /// Where each slot of `slots` starts in `row`.
    private let offsets: UnsafeMutablePointer<Int>
    /// The current row's value of each slot of `slots`, when it was decoded.
    @exclusivity(unchecked) private var values: [ColumnValue]
    /// Whether a row is loaded (its visit has not ended).
    @exclusivity(unchecked) private var loaded = false
    /// Counts the rows loaded and ended: a read that names the row it expects (`isCurrent`)
    /// finds nothing once that row's visit is over.
    @exclusivity(unchecked) private(set) var generation: UInt = 0

    /// Reads the slots `layout` lays out.
    init(_ layout: RowSlotLayout) {
        slots = layout.slots
        positions = layout.positions
        values = Array(repeating: .null, count: layout.slots.count)
        offsets = UnsafeMutablePointer<Int>.allocate(capacity: max(layout.slots.count, 1))
        offsets.initialize(repeating: 0, count: max(layout.slots.count, 1))
    }

    deinit { offsets.deallocate() }

    /// Whether `generation` is the current row's (loaded, and its visit not ended).
    @inline(__always)
    func isCurrent(_ generation: UInt) -> Bool { loaded && generation == self.generation }

    /// The current row's column `slot` (`.null` for a slot not read, or with no row loaded).
    @inline(__always)
    func column(_ slot: Int) -> ColumnValue {
        guard loaded, slot >= 0, slot < positions.count else { return .null }
        let position = positions[slot]
        guard position >= 0 else { return .null }
        if let row { return RowCodec.checkedColumn(row, at: offsets[position], count: rowCount) }
        return values[position]
    }

    /// The current row's attribute in `slot` (`.null` for a reference or a slot not read).
    @inline(__always)
    func attribute(_ slot: Int) -> AttributeValue {
        if case .value(let value) = column(slot) { return value }
        return .null
    }

    /// Makes the slots of `columns` (a decoded row) the current row's.
    func load(_ columns: RowColumns) {
        begin()
        for (position, slot) in slots.enumerated() {
            values[position] = slot < columns.endIndex ? columns[slot] : .null
        }
    }

    /// Makes the encoded row `bytes` the current row, finding and checking the columns of its
    /// slots; `bytes` must stay valid until `endRow`.
    /// - Throws: `RowCodec.Malformed` when the row is malformed up to the last slot read, or
    ///   has fewer columns (Spec/object-store.md §3: a row has one column per slot of its
    ///   entity); the caller, which knows the row, names it (no description is made per row).
    /// - Complexity: O(bytes up to the last slot read); allocates nothing, unless the row is
    ///   decoded instead (see the type).
    func load(encoded bytes: UnsafeRawBufferPointer) throws(RowCodec.Malformed) {
        begin()
        guard let base = bytes.baseAddress, let start = RowCodec.columnsStart(base, count: bytes.count) else {
            return try decode(bytes)
        }
        let count = bytes.count
        var offset = start, position = 0
        for index in slots.indices {
            let slot = slots[index]
            while position < slot {
                guard offset < count, let end = RowCodec.columnEnd(base, at: offset, count: count, checksText: false) else {
                    return try decode(bytes)
                }
                offset = end
                position += 1
            }
            guard offset < count, let end = RowCodec.columnEnd(base, at: offset, count: count) else { return try decode(bytes) }
            offsets[index] = offset
            offset = end
            position += 1
        }
        row = base
        rowCount = count
    }

    /// Ends the current row's visit: nothing is read of it after this.
    @inline(__always)
    func endRow() {
        loaded = false
        row = nil
        generation &+= 1
    }

    /// Starts a row: a new generation, with nothing of the previous row's.
    @inline(__always)
    private func begin() {
        generation &+= 1
        loaded = true
        row = nil
    }

    /// `load(encoded:)` for a row that is not read in place: its slots decoded with a
    /// `ByteReader`, which also names what is malformed (and then leaves no row loaded).
    private func decode(_ bytes: UnsafeRawBufferPointer) throws(RowCodec.Malformed) {
        do {
            try decodeSlots(bytes)
        } catch {
            endRow()
            throw error
        }
    }

    private func decodeSlots(_ bytes: UnsafeRawBufferPointer) throws(RowCodec.Malformed) {
        row = nil
        var reader = ByteReader(bytes: bytes)
        do {
            let format = try reader.byte()
            guard format == RowCodec.formatByte else {
                // Earlier formats: decoded whole, as any read of them is.
                load(try RowCodec.decoded(bytes, keepsColumnsEncoded: false).columns)
                return
            }
            _ = try reader.varint()  // version
            _ = try reader.varint()  // entity code (the caller checked it)
            var position = 0
            for (index, slot) in slots.enumerated() {
                while position < slot {
                    try RowCodec.skipColumn(&reader)
                    position += 1
                }
                values[index] = try RowCodec.column(&reader, format: format)
                position += 1
            }
        } catch let malformed as RowCodec.Malformed {
            throw malformed
        } catch let failure as ByteReader.Failure {
            throw RowCodec.Malformed(detail: "\(failure.text) at byte \(reader.offset)")
        } catch {
            throw RowCodec.Malformed(detail: "\(error)")
        }
    }
}
