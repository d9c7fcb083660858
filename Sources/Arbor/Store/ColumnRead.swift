import Foundation

/// Reading a column that `RowCodec.columnEnd` accepted, where it lies: a value fetch checks the
/// columns it reads as it finds them in a row (`RowSlots`), and decodes each when it is read,
/// with no `ByteReader` and nothing thrown.
extension RowCodec {
    /// The column at `offset` in the `count` bytes at `base` (a row of the current format),
    /// which `columnEnd(_:at:count:)` accepted; `.null` should that not hold.
    /// - Complexity: O(the column's bytes); allocates only what the value holds (a string, data).
    @inline(__always)
    static func checkedColumn(_ base: UnsafeRawPointer, at offset: Int, count: Int) -> ColumnValue {
        guard offset >= 0, offset < count else { return .null }
        let raw = base.load(fromByteOffset: offset, as: UInt8.self)
        let position = offset &+ 1
        if raw >= smallIntBase {
            if raw < codedReferenceBase { return .value(.int(Int64(raw &- smallIntBase))) }
            guard let (key, _) = varint(base, at: position, count: count), let signed = Int64(exactly: key) else { return .null }
            return .reference(code: UInt16(raw &- codedReferenceBase), key: signed)
        }
        switch raw {
        case Tag.boolFalse.rawValue: return .value(.bool(false))
        case Tag.boolTrue.rawValue: return .value(.bool(true))
        case Tag.int.rawValue:
            guard let (value, _) = varint(base, at: position, count: count) else { return .null }
            return .value(.int(unzigzag(value)))
        case Tag.nonNegativeInt.rawValue:
            guard let (value, _) = varint(base, at: position, count: count), let signed = Int64(exactly: value) else { return .null }
            return .value(.int(signed))
        case Tag.double.rawValue:
            guard let bits = fixed(UInt64.self, base, at: position, count: count) else { return .null }
            return .value(.double(Double(bitPattern: bits)))
        case Tag.date.rawValue:
            // The current format counts from 2001, Date's own reference.
            guard let bits = fixed(UInt64.self, base, at: position, count: count) else { return .null }
            return .value(.date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits))))
        case Tag.float.rawValue:
            guard let bits = fixed(UInt32.self, base, at: position, count: count) else { return .null }
            return .value(.float(Float(bitPattern: bits)))
        case Tag.wholeSecondsDate.rawValue:
            guard let (value, _) = varint(base, at: position, count: count) else { return .null }
            return .value(.date(Date(timeIntervalSince1970: Double(unzigzag(value)))))
        case Tag.string.rawValue:
            guard let bytes = lengthPrefixed(base, at: position, count: count) else { return .null }
            return .value(.string(String(decoding: bytes, as: UTF8.self)))
        case Tag.data.rawValue:
            guard let bytes = lengthPrefixed(base, at: position, count: count) else { return .null }
            return .value(.data(Data(bytes)))
        case Tag.uuid.rawValue:
            guard count &- position >= 16 else { return .null }
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(start: base + position, count: 16)) }
            return .value(.uuid(UUID(uuid: uuid)))
        case Tag.reference.rawValue:
            guard let (code, codeEnd) = varint(base, at: position, count: count), let narrow = UInt16(exactly: code),
                  let (key, _) = varint(base, at: codeEnd, count: count) else { return .null }
            return .reference(code: narrow, key: unzigzag(key))
        default:
            return .null  // null; URLs and decimals never pass the check
        }
    }

    /// The little-endian `T` at `position`, when it fits before `count`.
    @inline(__always)
    private static func fixed<T: FixedWidthInteger>(_: T.Type, _ base: UnsafeRawPointer, at position: Int, count: Int) -> T? {
        guard count &- position >= MemoryLayout<T>.size else { return nil }
        return T(littleEndian: base.loadUnaligned(fromByteOffset: position, as: T.self))
    }

    /// The bytes a length at `position` counts, when they end by `count`.
    @inline(__always)
    private static func lengthPrefixed(_ base: UnsafeRawPointer, at position: Int, count: Int) -> UnsafeRawBufferPointer? {
        guard let (length, start) = varint(base, at: position, count: count), length <= UInt64(count &- start) else { return nil }
        return UnsafeRawBufferPointer(start: base + start, count: Int(length))
    }
}

extension RowCodec {
    /// Where the columns of a row of the current format begin in the `count` bytes at `base`:
    /// past its format byte, version and entity code. nil for a row of another format, or a
    /// header that runs past the end.
    @inline(__always)
    static func columnsStart(_ base: UnsafeRawPointer, count: Int) -> Int? {
        guard count > 0, base.load(as: UInt8.self) == formatByte,
              let (_, versionEnd) = varint(base, at: 1, count: count),
              let (_, codeEnd) = varint(base, at: versionEnd, count: count) else { return nil }
        return codeEnd
    }
}
