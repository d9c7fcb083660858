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

/// The columns a value fetch reads from each row it visits (`StoreStorage.visitMatches`), decoded
/// from the row's stored bytes where they lie: the columns before and between them are skipped
/// by their tags and lengths, and nothing is kept of the row but these values, which the next
/// row overwrites.
///
/// One fetch, one thread: the values are reloaded per row and read before the next.
final class RowSlots {
    /// The slots read, ascending, each once.
    let slots: [Int]
    /// For each slot up to the largest read: its position in `values`, or -1.
    private let positions: [Int]
    /// The current row's value of each slot of `slots`.
    @exclusivity(unchecked) private var values: [ColumnValue]

    /// Reads the slots `layout` lays out.
    init(_ layout: RowSlotLayout) {
        slots = layout.slots
        positions = layout.positions
        values = Array(repeating: .null, count: layout.slots.count)
    }

    /// The current row's column `slot` (`.null` for a slot not read).
    @inline(__always)
    func column(_ slot: Int) -> ColumnValue {
        guard slot >= 0, slot < positions.count else { return .null }
        let position = positions[slot]
        return position < 0 ? .null : values[position]
    }

    /// The current row's attribute in `slot` (`.null` for a reference or a slot not read).
    @inline(__always)
    func attribute(_ slot: Int) -> AttributeValue {
        if case .value(let value) = column(slot) { return value }
        return .null
    }

    /// Makes the slots of `columns` (a decoded row) the current row's.
    func load(_ columns: RowColumns) {
        for (position, slot) in slots.enumerated() {
            values[position] = slot < columns.endIndex ? columns[slot] : .null
        }
    }

    /// Makes the slots of the encoded row `bytes` the current row's, decoding only them.
    /// - Throws: `RowCodec.Malformed` when the row is malformed up to the last slot read, or
    ///   has fewer columns (Spec/object-store.md §3: a row has one column per slot of its
    ///   entity); the caller, which knows the row, names it (no description is made per row).
    /// - Complexity: O(bytes up to the last slot read); allocates only what the values hold
    ///   (strings, data).
    func load(encoded bytes: UnsafeRawBufferPointer) throws(RowCodec.Malformed) {
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
