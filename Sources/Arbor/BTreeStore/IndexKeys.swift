import ArborEngine
import Foundation

/// Keys of rows, indexes and join entries (Spec/object-store.md, "Trees"), in one store's key
/// format: integers (primary keys, references, orders, integer attributes) are compact tuple
/// integers in stores of key format 2 and fixed 9-byte int64 components in older stores.
/// Readers (`trailingKey`, `integer(in:at:)`) accept both.
struct IndexKeys: Sendable {
    /// The key format new stores are made with.
    static let currentFormat: UInt8 = 2
    /// Whether integers are compact (key format 2) rather than fixed int64 (format 1).
    let compactIntegers: Bool

    init(format: UInt8) { compactIntegers = format >= 2 }

    /// The format number recorded in the store's metadata.
    var format: UInt8 { compactIntegers ? 2 : 1 }

    /// The tuple component of integer `value` in this format.
    func integer(_ value: Int64) -> TupleValue { compactIntegers ? .integer(value) : .int64(value) }

    /// `rowKey` appended to `bytes`.
    func appendRowKey(_ key: Int64, to bytes: inout [UInt8]) {
        TupleKey.append(integer(key), descending: false, to: &bytes)
    }

    func rowKey(_ key: Int64) -> [UInt8] {
        // One component: appended straight into the key (no array of values to encode).
        var bytes: [UInt8] = []
        bytes.reserveCapacity(9)
        TupleKey.append(integer(key), descending: false, to: &bytes)
        return bytes
    }

    func tupleValue(_ column: ColumnValue) -> TupleValue {
        switch column {
        case .reference(_, let key): return integer(key)
        case .value(let value):
            switch value {
            case .null: return .null
            case .int(let v): return integer(v)
            // + 0 turns -0.0 into +0.0: predicates treat them as equal, so one key serves both.
            case .double(let v): return .double(v + 0)
            case .float(let v): return .double(Double(v) + 0)
            case .bool(let v): return .bool(v)
            case .string(let v): return .string(v)
            case .date(let v): return .date(v.timeIntervalSinceReferenceDate + 0)
            case .data(let v): return .bytes(Array(v))
            case .uuid(let v): return .uuid(withUnsafeBytes(of: v.uuid) { Array($0) })
            case .url(let v): return .string(v.absoluteString)
            case .decimal(let v): return .double(Double(v.description) ?? 0)
            }
        }
    }

    /// The [cd] fold used by normalized indexes.
    static let normalization: StringOptions = [.caseInsensitive, .diacriticInsensitive]

    /// A column's component in a normalized index: strings folded, other values as stored.
    func foldedTupleValue(_ column: ColumnValue) -> TupleValue {
        if case .value(.string(let text)) = column { return .string(ValueOrder.fold(text, Self.normalization)) }
        return tupleValue(column)
    }

    /// The entry of `row` (primary key `key`) in values index `index`; nil when the row has no
    /// entry (a foreign key that is nil), or `index` is a text index (see `indexKeys`).
    func indexKey<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, columns: Columns, key: Int64) -> [UInt8]? where Columns.Index == Int {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(index.slots.count * 10 + 20)
        return appendIndexKey(index, columns: columns, key: key, to: &bytes) ? bytes : nil
    }

    /// `indexKey` appended to `bytes` (a buffer reused from row to row); false, appending
    /// nothing, when the row has no entry.
    func appendIndexKey<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, columns: Columns, key: Int64,
                                                                       to bytes: inout [UInt8]) -> Bool where Columns.Index == Int {
        // A text index has entries per term (`textKeys`), never one per row.
        if index.isText { return false }
        if index.isForeignKey, let first = index.slots.first, first < columns.count, columns[first].isNull { return false }
        guard index.slots.allSatisfy({ $0 < columns.count }), index.orderSlot.map({ $0 < columns.count }) ?? true else { return false }
        // Components appended straight into the key: no array of values to encode.
        for slot in index.slots {
            TupleKey.append(index.isNormalized ? foldedTupleValue(columns[slot]) : tupleValue(columns[slot]), descending: false, to: &bytes)
        }
        if let orderSlot = index.orderSlot { TupleKey.append(tupleValue(columns[orderSlot]), descending: false, to: &bytes) }
        TupleKey.append(integer(key), descending: false, to: &bytes)
        return true
    }

    /// Every entry of the row in `index`: at most one for a values index (see `indexKey`), one
    /// per distinct term for a words or substrings index (see `textKeys`).
    func indexKeys<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, columns: Columns, key: Int64) -> [[UInt8]] where Columns.Index == Int {
        if index.isText { return textKeys(index, columns: columns, key: key) }
        return indexKey(index, columns: columns, key: key).map { [$0] } ?? []
    }

    /// The string words or substrings index `index` reads from a row's `columns` (nil: the row
    /// gives no terms).
    static func text<Columns: RandomAccessCollection<ColumnValue>>(of index: EntityInfo.Index, in columns: Columns) -> String?
    where Columns.Index == Int {
        guard let slot = index.slots.first, slot < columns.count, case .value(.string(let text)) = columns[slot] else { return nil }
        return text
    }

    /// The entries of the row in a words or substrings index, in key order and distinct:
    /// `(term, primary key)` for each term of its string (none for nil or a non-string value).
    func textKeys<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, columns: Columns, key: Int64) -> [[UInt8]] where Columns.Index == Int {
        guard let text = Self.text(of: index, in: columns) else { return [] }
        var keys = TextTerms.terms(of: text, kind: index.kind).map { term in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(term.count + 12)
            TupleKey.appendString(utf8: term, to: &bytes)
            TupleKey.append(integer(key), descending: false, to: &bytes)
            return bytes
        }
        // Key order is term order (the string encoding keeps byte order); equal terms, equal keys.
        keys.sortUnique { compareBytes($0, $1) < 0 }
        return keys
    }

    /// The prefix shared by entries of `index` whose leading columns equal `columns` (for
    /// uniqueness checks); nil when one is null (nulls are never equal).
    func uniquePrefix<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, columns: Columns) -> [UInt8]? where Columns.Index == Int {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(index.slots.count * 10 + 8)
        for slot in index.slots {
            guard slot < columns.count, !columns[slot].isNull else { return nil }
            TupleKey.append(index.isNormalized ? foldedTupleValue(columns[slot]) : tupleValue(columns[slot]), descending: false, to: &bytes)
        }
        return bytes
    }

    func ownerPrefix(_ owner: Int64) -> [UInt8] { TupleKey.encode(component: integer(owner)) }

    func joinPrefix(side: UInt8, owner: Int64) -> [UInt8] { TupleKey.encode([.uint8(side), integer(owner)]) }

    func joinKey(side: UInt8, owner: Int64, order: Int64, member: Int64) -> [UInt8] {
        TupleKey.encode([.uint8(side), integer(owner), integer(order), integer(member)])
    }

    static func codeValue(_ code: UInt16) -> [UInt8] { [UInt8(code & 0xFF), UInt8(code >> 8)] }

    /// The value of an index or foreign-key entry for a row of entity `code` in the hierarchy
    /// whose root is `root`: in key format 2 empty for a row of the root itself (most
    /// hierarchies are one entity), else the 2-byte code.
    func entryValue(_ code: UInt16, root: UInt16) -> [UInt8] {
        compactIntegers && code == root ? [] : Self.codeValue(code)
    }

    /// The entity code of an index or foreign-key entry's value (see `entryValue`); nil when
    /// the value is malformed.
    @inline(__always)
    func entryCode<Bytes: RandomAccessCollection>(from value: Bytes, root: UInt16) -> UInt16? where Bytes.Element == UInt8, Bytes.Index == Int {
        if value.isEmpty { return compactIntegers ? root : nil }
        return Self.code(from: value)
    }

    /// The entity code stored as a join entry's value (always 2 bytes).
    static func code<Bytes: RandomAccessCollection>(from value: Bytes) -> UInt16? where Bytes.Element == UInt8, Bytes.Index == Int {
        guard value.count == 2 else { return nil }
        return UInt16(value[value.startIndex]) | UInt16(value[value.startIndex + 1]) << 8
    }

    /// The integer component (either format) starting at `offset`; nil when the bytes there
    /// are not one. Decodes nothing else.
    @inline(__always)
    static func integer<Bytes: RandomAccessCollection>(in key: Bytes, at offset: Int) -> Int64?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        TupleKey.integer(in: key, at: offset)?.value
    }

    @inline(__always)
    static func integer(in key: UnsafeRawBufferPointer, at offset: Int) -> Int64? {
        TupleKey.integer(in: key, at: offset)?.value
    }

    /// The last component of a row, index, foreign-key or join key (the row or member key):
    /// every such key ends with an integer.
    static func trailingKey(_ key: UnsafeRawBufferPointer) -> Int64? {
        guard let start = TupleKey.lastComponentStart(in: key) else { return nil }
        return integer(in: key, at: start)
    }

    static func trailingKey(_ key: [UInt8]) -> Int64? { key.withUnsafeBytes { trailingKey($0) } }

    /// The second-to-last component (the order) of an ordered foreign-key or join entry.
    static func orderComponent(_ key: [UInt8]) -> Int64? {
        key.withUnsafeBytes { key in
            var previous: Int?, start = 0
            while start < key.count {
                guard let end = TupleKey.componentEnd(in: key, from: start) else { return nil }
                if end == key.count { return previous.flatMap { integer(in: key, at: $0) } }
                previous = start
                start = end
            }
            return nil
        }
    }

    /// Spacing between order keys of appended members. A rearranged list renumbers the members
    /// after a moved one anyway (see `assignOrder`), so gaps would buy nothing; small keys keep
    /// foreign-key entries and rows short.
    static let orderStep: Int64 = 1
}
