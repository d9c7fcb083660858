import ArborEngine
import Foundation

/// Keys of rows, indexes and join entries (Spec/object-store.md, "Trees").
enum IndexKeys {
    static func rowKey(_ key: Int64) -> [UInt8] { TupleKey.encode([.int64(key)]) }

    static func tupleValue(_ column: ColumnValue) -> TupleValue {
        switch column {
        case .reference(_, let key): return .int64(key)
        case .value(let value):
            switch value {
            case .null: return .null
            case .int(let v): return .int64(v)
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
    static func foldedTupleValue(_ column: ColumnValue) -> TupleValue {
        if case .value(.string(let text)) = column { return .string(ValueOrder.fold(text, normalization)) }
        return tupleValue(column)
    }

    /// The entry of `row` (primary key `key`) in `index`; nil when the row has no entry (a
    /// foreign key that is nil).
    static func indexKey(_ index: EntityInfo.Index, columns: [ColumnValue], key: Int64) -> [UInt8]? {
        var values: [TupleValue] = []
        values.reserveCapacity(index.slots.count + 2)
        for slot in index.slots {
            guard slot < columns.count else { return nil }
            values.append(index.isNormalized ? foldedTupleValue(columns[slot]) : tupleValue(columns[slot]))
        }
        if index.isForeignKey {
            if columns[index.slots[0]].isNull { return nil }
        }
        if let orderSlot = index.orderSlot {
            guard orderSlot < columns.count else { return nil }
            values.append(tupleValue(columns[orderSlot]))
        }
        values.append(.int64(key))
        return TupleKey.encode(values)
    }

    /// The prefix shared by entries of `index` whose leading columns equal `columns` (for
    /// uniqueness checks); nil when one is null (nulls are never equal).
    static func uniquePrefix(_ index: EntityInfo.Index, columns: [ColumnValue]) -> [UInt8]? {
        var values: [TupleValue] = []
        for slot in index.slots {
            guard slot < columns.count, !columns[slot].isNull else { return nil }
            values.append(index.isNormalized ? foldedTupleValue(columns[slot]) : tupleValue(columns[slot]))
        }
        return TupleKey.encode(values)
    }

    static func ownerPrefix(_ owner: Int64) -> [UInt8] { TupleKey.encode([.int64(owner)]) }

    static func joinPrefix(side: UInt8, owner: Int64) -> [UInt8] { TupleKey.encode([.uint8(side), .int64(owner)]) }

    static func joinKey(side: UInt8, owner: Int64, order: Int64, member: Int64) -> [UInt8] {
        TupleKey.encode([.uint8(side), .int64(owner), .int64(order), .int64(member)])
    }

    static func codeValue(_ code: UInt16) -> [UInt8] { [UInt8(code & 0xFF), UInt8(code >> 8)] }

    /// The entity code stored as an index or join entry's value.
    static func code<Bytes: RandomAccessCollection>(from value: Bytes) -> UInt16? where Bytes.Element == UInt8, Bytes.Index == Int {
        guard value.count == 2 else { return nil }
        return UInt16(value[value.startIndex]) | UInt16(value[value.startIndex + 1]) << 8
    }

    /// The int64 tuple component (tag 0x23, 8 big-endian bytes, sign bit flipped) starting at
    /// `offset`; nil when the bytes there are not one. Reads 9 bytes, decodes nothing else.
    static func int64Component<Bytes: RandomAccessCollection>(_ key: Bytes, at offset: Int) -> Int64?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let start = key.startIndex + offset
        guard offset >= 0, start + 9 <= key.endIndex, key[start] == 0x23 else { return nil }
        var bits: UInt64 = 0
        for index in (start + 1)..<(start + 9) { bits = bits << 8 | UInt64(key[index]) }
        return Int64(bitPattern: bits ^ (1 << 63))
    }

    /// The last component of a row, index, foreign-key or join key (the row or member key):
    /// every such key ends with an int64.
    static func trailingKey(_ key: [UInt8]) -> Int64? { int64Component(key, at: key.count - 9) }

    /// The second-to-last component (the order) of an ordered foreign-key or join entry.
    static func orderComponent(_ key: [UInt8]) -> Int64? { int64Component(key, at: key.count - 18) }

    /// Spacing between order keys of appended members, leaving room for inserts between them.
    static let orderStep: Int64 = 1 << 16
}
