/// Checking a stored row's columns before they are kept encoded (`RowCodec.encodedColumns`):
/// every column must decode later without an error, so its tag, lengths, varints and strings
/// are checked as `RowCodec.column(_:format:)` would check them while decoding.
///
/// Every fetched row passes here, so the walk reads the bytes through a pointer with its
/// bounds kept in locals: a `ByteReader` call per tag, varint and length (each a throwing call
/// with its own bounds check and slice) cost about twice as much a row.
extension RowCodec {
    /// The offset just past the column that starts at `offset` (< `count`) in the `count`
    /// bytes at `base`, when it would decode; nil when it would not, or when it is a URL or a
    /// decimal (which only parsing checks). Without `checksText` (a column skipped, never
    /// decoded), the text of a string, a URL or a decimal is not checked.
    /// - Complexity: O(the column's bytes).
    @inline(__always)
    static func columnEnd(_ base: UnsafeRawPointer, at offset: Int, count: Int, checksText: Bool = true) -> Int? {
        let raw = base.load(fromByteOffset: offset, as: UInt8.self)
        let position = offset &+ 1
        if raw >= smallIntBase {
            if raw < codedReferenceBase { return position }  // a small integer, no payload
            guard raw < codedReferenceBase &+ inlineLimit,
                  let (key, end) = varint(base, at: position, count: count), key <= UInt64(Int64.max) else { return nil }
            return end
        }
        switch raw {
        case Tag.null.rawValue, Tag.boolFalse.rawValue, Tag.boolTrue.rawValue:
            return position
        case Tag.int.rawValue:
            return varint(base, at: position, count: count)?.end
        case Tag.nonNegativeInt.rawValue:
            guard let (value, end) = varint(base, at: position, count: count), value <= UInt64(Int64.max) else { return nil }
            return end
        case Tag.wholeSecondsDate.rawValue:
            guard let (value, end) = varint(base, at: position, count: count),
                  unzigzag(value).magnitude < wholeSecondsLimit.magnitude else { return nil }
            return end
        case Tag.double.rawValue, Tag.date.rawValue:
            return count &- position >= 8 ? position &+ 8 : nil
        case Tag.float.rawValue:
            return count &- position >= 4 ? position &+ 4 : nil
        case Tag.uuid.rawValue:
            return count &- position >= 16 ? position &+ 16 : nil
        case Tag.data.rawValue:
            return lengthPrefixedEnd(base, at: position, count: count)
        case Tag.string.rawValue:
            guard let (length, start) = varint(base, at: position, count: count),
                  length <= UInt64(count &- start) else { return nil }
            let end = start &+ Int(length)
            return !checksText || UTF8Check.isValid(UnsafeRawBufferPointer(start: base + start, count: end &- start)) ? end : nil
        case Tag.reference.rawValue:
            guard let (code, codeEnd) = varint(base, at: position, count: count), code <= UInt64(UInt16.max) else { return nil }
            return varint(base, at: codeEnd, count: count)?.end
        case Tag.url.rawValue, Tag.decimal.rawValue:
            // Only parsing checks them: skipped, they are text of a checked length.
            return checksText ? nil : lengthPrefixedEnd(base, at: position, count: count)
        default:
            return nil  // no tag at all
        }
    }

    /// The end of a length and the bytes it counts, starting at `position`; nil when they run
    /// past `count`.
    @inline(__always)
    private static func lengthPrefixedEnd(_ base: UnsafeRawPointer, at position: Int, count: Int) -> Int? {
        guard let (length, start) = varint(base, at: position, count: count), length <= UInt64(count &- start) else { return nil }
        return start &+ Int(length)
    }

    /// The varint at `position` and the offset past it, read as `ByteReader.varint()` reads it;
    /// nil where that throws (past `count`, or past 64 bits).
    @inline(__always)
    static func varint(_ base: UnsafeRawPointer, at position: Int, count: Int) -> (value: UInt64, end: Int)? {
        guard position < count else { return nil }
        let first = base.load(fromByteOffset: position, as: UInt8.self)
        if first < 0x80 { return (UInt64(first), position &+ 1) }
        if count &- position >= 8, let (value, length) = ByteReader.eightByteVarint(at: base + position) {
            return (value, position &+ length)
        }
        return longVarint(base, at: position, count: count)
    }

    /// `varint` within eight bytes of the end, or longer than eight bytes.
    @inline(never)
    private static func longVarint(_ base: UnsafeRawPointer, at position: Int, count: Int) -> (value: UInt64, end: Int)? {
        var reader = ByteReader(bytes: UnsafeRawBufferPointer(start: base + position, count: count &- position))
        guard let value = try? reader.varint() else { return nil }
        return (value, position &+ reader.offset)
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
