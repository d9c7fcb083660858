/// One component of a tuple key.
public enum TupleValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int8(Int8), int16(Int16), int32(Int32), int64(Int64)
    /// A signed integer in as few bytes as its magnitude needs (0 to 8 after the tag); it orders
    /// like `int64` but takes 2–4 bytes for the keys and counts a store holds instead of 9.
    case integer(Int64)
    case uint8(UInt8), uint16(UInt16), uint32(UInt32), uint64(UInt64)
    case float(Float), double(Double)
    /// A date as seconds since an epoch the application chooses (ordered like a Double; Arbor
    /// uses Foundation's reference date, 2001-01-01T00:00:00Z).
    case date(Double)
    case string(String)
    case bytes([UInt8])
    /// A UUID's 16 bytes in their canonical order.
    case uuid([UInt8])

    /// The type tag that starts the component's encoding (ascending order).
    public var tag: UInt8 {
        switch self {
        case .null: return 0x05
        case .bool(let value): return value ? 0x11 : 0x10
        case .int8: return 0x20
        case .int16: return 0x21
        case .int32: return 0x22
        case .int64: return 0x23
        case .integer(let value): return TupleKey.integerTag(value)
        case .uint8: return 0x24
        case .uint16: return 0x25
        case .uint32: return 0x26
        case .uint64: return 0x27
        case .float: return 0x30
        case .double: return 0x31
        case .date: return 0x38
        case .string: return 0x40
        case .bytes: return 0x50
        case .uuid: return 0x60
        }
    }
}

/// A tuple component with its sort direction.
public struct TupleComponent: Hashable, Sendable {
    public var value: TupleValue
    public var descending: Bool
    public init(_ value: TupleValue, descending: Bool = false) {
        self.value = value
        self.descending = descending
    }
}

/// The order-preserving encoding of composite keys (see Spec/file-format.md, "Tuple keys").
///
/// For tuples `a` and `b`, `memcmp` order of `encode(a)` and `encode(b)` equals
/// `TupleKey.compare(a, b)`: components compare in turn; different types order by type tag;
/// integers and floats numerically (Double: -inf < negatives < -0 < +0 < positives < +inf < NaN,
/// all NaNs canonicalized); strings and bytes by their bytes, a prefix first; null first;
/// a descending component reverses its order (every byte inverted). A tuple that is a prefix of
/// another sorts first.
public enum TupleKey {
    static let escape: UInt8 = 0xFF
    static let terminator: UInt8 = 0x01

    /// Encodes ascending components.
    public static func encode(_ values: [TupleValue]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(values.count * 9)
        for value in values { append(value, descending: false, to: &output) }
        return output
    }

    /// Encodes one ascending component: `encode([value])` without the array around it (key
    /// filters and range bounds encode their values one by one at every fetch).
    public static func encode(component value: TupleValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(9)
        append(value, descending: false, to: &output)
        return output
    }

    /// The tag and body of `value` encoded as one ascending component, when its tag fixes its
    /// size at nine bytes or fewer (numbers, dates, booleans, null); nil for strings, bytes and
    /// UUIDs. The body is `FixedComponentRange.body(of:)` of the encoding: its bytes after the
    /// tag, big-endian, shifted to the top. Worked out without encoding: a key filter's bounds
    /// need no array (the tests hold it equal to `encode(component:)`).
    /// - Complexity: O(1).
    public static func fixedComponent(_ value: TupleValue) -> (tag: UInt8, body: UInt64)? {
        let body: UInt64
        switch value {
        case .null, .bool: body = 0
        case .int8(let v): body = UInt64(UInt8(bitPattern: v) ^ 0x80) << 56
        case .int16(let v): body = UInt64(UInt16(bitPattern: v) ^ 0x8000) << 48
        case .int32(let v): body = UInt64(UInt32(bitPattern: v) ^ 0x8000_0000) << 32
        case .int64(let v): body = UInt64(bitPattern: v) ^ 0x8000_0000_0000_0000
        case .integer(let v):
            // Negative: eight bytes; zero: none; positive: its significant bytes (see `appendIntegerBody`).
            let bytes = v < 0 ? 8 : positiveIntegerBytes(v)
            body = bytes == 0 ? 0 : UInt64(bitPattern: v) << UInt64(64 - 8 * bytes)
        case .uint8(let v): body = UInt64(v) << 56
        case .uint16(let v): body = UInt64(v) << 48
        case .uint32(let v): body = UInt64(v) << 32
        case .uint64(let v): body = v
        case .float(let v): body = UInt64(orderedBits(v)) << 32
        case .double(let v), .date(let v): body = orderedBits(v)
        case .string, .bytes, .uuid: return nil
        }
        return (value.tag, body)
    }

    /// Encodes components with their directions.
    public static func encode(_ components: [TupleComponent]) -> [UInt8] {
        var output: [UInt8] = []
        for component in components { append(component.value, descending: component.descending, to: &output) }
        return output
    }

    /// Appends one component to `output`.
    public static func append(_ value: TupleValue, descending: Bool, to output: inout [UInt8]) {
        let start = output.count
        output.append(value.tag)
        switch value {
        case .null, .bool: break
        case .int8(let v): appendBigEndian(UInt8(bitPattern: v) ^ 0x80, &output)
        case .int16(let v): appendBigEndian(UInt16(bitPattern: v) ^ 0x8000, &output)
        case .int32(let v): appendBigEndian(UInt32(bitPattern: v) ^ 0x8000_0000, &output)
        case .int64(let v): appendBigEndian(UInt64(bitPattern: v) ^ 0x8000_0000_0000_0000, &output)
        case .integer(let v): appendIntegerBody(v, &output)
        case .uint8(let v): appendBigEndian(v, &output)
        case .uint16(let v): appendBigEndian(v, &output)
        case .uint32(let v): appendBigEndian(v, &output)
        case .uint64(let v): appendBigEndian(v, &output)
        case .float(let v): appendBigEndian(orderedBits(v), &output)
        case .double(let v), .date(let v):
            appendBigEndian(orderedBits(v), &output)
        case .string(let v): appendEscaped(v.utf8, &output)
        case .bytes(let v): appendEscaped(v, &output)
        case .uuid(let v):
            var bytes = Array(v.prefix(16))
            if bytes.count < 16 { bytes += [UInt8](repeating: 0, count: 16 - bytes.count) }
            output += bytes
        }
        if descending {
            for index in start..<output.count { output[index] = ~output[index] }
        }
    }

    /// Tags of compact integers: negatives, zero, then positives by byte count, so the tag
    /// alone orders integers of different lengths.
    static let negativeIntegerTag: UInt8 = 0x12
    static let zeroIntegerTag: UInt8 = 0x13

    /// The bytes of a compact integer's body when `value` is not negative: its significant bytes (none for zero).
    @inline(__always)
    static func positiveIntegerBytes(_ value: Int64) -> Int { (64 - value.leadingZeroBitCount + 7) / 8 }

    /// The tag of compact integer `value`: 0x12 negative, 0x13 zero, 0x13 + n positive of n bytes.
    static func integerTag(_ value: Int64) -> UInt8 {
        if value < 0 { return negativeIntegerTag }
        return zeroIntegerTag + UInt8(positiveIntegerBytes(value))
    }

    /// A compact integer's body: 8 bytes of two's complement for a negative, the minimal
    /// big-endian bytes for a positive, nothing for zero.
    static func appendIntegerBody(_ value: Int64, _ output: inout [UInt8]) {
        if value < 0 { return appendBigEndian(UInt64(bitPattern: value), &output) }
        let bytes = positiveIntegerBytes(value)
        var shift = bytes * 8
        while shift > 0 {
            shift -= 8
            output.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }

    /// A float's bits ordered as its values (NaN canonical, above +infinity).
    static func orderedBits(_ value: Float) -> UInt32 {
        let bits = value.isNaN ? Float.nan.bitPattern : value.bitPattern
        return bits & 0x8000_0000 != 0 ? ~bits : bits | 0x8000_0000
    }

    static func orderedBits(_ value: Double) -> UInt64 {
        let bits = value.isNaN ? Double.nan.bitPattern : value.bitPattern
        return bits & 0x8000_0000_0000_0000 != 0 ? ~bits : bits | 0x8000_0000_0000_0000
    }

    private static func appendBigEndian<T: FixedWidthInteger>(_ value: T, _ output: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { output.append(contentsOf: $0) }
    }

    /// Appends an ascending string component given by its UTF-8 bytes (as `.string` encodes
    /// it), for text already held as bytes.
    public static func appendString<S: Sequence>(utf8 bytes: S, to output: inout [UInt8]) where S.Element == UInt8 {
        output.append(TupleValue.string("").tag)
        appendEscaped(bytes, &output)
    }

    private static func appendEscaped<S: Sequence>(_ bytes: S, _ output: inout [UInt8]) where S.Element == UInt8 {
        // Most strings hold no zero byte: copied whole, not byte by byte.
        let copied = bytes.withContiguousStorageIfAvailable { buffer -> Bool in
            guard !buffer.contains(0) else { return false }
            output.append(contentsOf: buffer)
            return true
        }
        if copied != true {
            for byte in bytes {
                output.append(byte)
                if byte == 0 { output.append(escape) }
            }
        }
        output.append(0)
        output.append(terminator)
    }

    // MARK: Decoding

    /// Decodes a key produced by `encode`, with each component's direction.
    /// - Throws: `malformedTupleKey` with the byte offset and what is wrong.
    public static func decodeComponents(_ bytes: [UInt8]) throws -> [TupleComponent] {
        var components: [TupleComponent] = []
        var position = 0
        while position < bytes.count {
            let descending = bytes[position] >= 0x80
            let flip: UInt8 = descending ? 0xFF : 0
            func byte(_ index: Int) throws -> UInt8 {
                guard index < bytes.count else {
                    throw ArborError.malformedTupleKey(offset: index, detail: "key ends inside a component")
                }
                return bytes[index] ^ flip
            }
            func fixed<T: FixedWidthInteger>(_: T.Type) throws -> T {
                let size = MemoryLayout<T>.size
                var value: T = 0
                for index in 0..<size { value = value << 8 | T(try byte(position + 1 + index)) }
                position += 1 + size
                return value
            }
            func escaped() throws -> [UInt8] {
                var result: [UInt8] = []
                var index = position + 1
                while true {
                    let current = try byte(index)
                    if current == 0 {
                        let next = try byte(index + 1)
                        if next == terminator { break }
                        guard next == escape else {
                            throw ArborError.malformedTupleKey(offset: index + 1, detail: "invalid escape byte \(next)")
                        }
                        result.append(0)
                        index += 2
                    } else {
                        result.append(current)
                        index += 1
                    }
                }
                position = index + 2
                return result
            }
            let tag = try byte(position)
            let value: TupleValue
            switch tag {
            case 0x05: value = .null; position += 1
            case 0x10: value = .bool(false); position += 1
            case 0x11: value = .bool(true); position += 1
            case 0x20: value = .int8(Int8(bitPattern: try fixed(UInt8.self) ^ 0x80))
            case 0x21: value = .int16(Int16(bitPattern: try fixed(UInt16.self) ^ 0x8000))
            case 0x22: value = .int32(Int32(bitPattern: try fixed(UInt32.self) ^ 0x8000_0000))
            case 0x23: value = .int64(Int64(bitPattern: try fixed(UInt64.self) ^ 0x8000_0000_0000_0000))
            case negativeIntegerTag:
                let start = position
                let bits = try fixed(UInt64.self)
                guard bits >> 63 == 1 else {
                    throw ArborError.malformedTupleKey(offset: start, detail: "a negative integer's body is not negative")
                }
                value = .integer(Int64(bitPattern: bits))
            case zeroIntegerTag: value = .integer(0); position += 1
            case 0x14...0x1B:
                let count = Int(tag - zeroIntegerTag)
                var bits: UInt64 = 0
                for index in 0..<count { bits = bits << 8 | UInt64(try byte(position + 1 + index)) }
                // Canonical: no leading zero byte, and within Int64 — otherwise one value would
                // have two keys.
                guard try byte(position + 1) != 0, bits >> 63 == 0 else {
                    throw ArborError.malformedTupleKey(offset: position, detail: "a \(count)-byte integer is not in its shortest form")
                }
                position += 1 + count
                value = .integer(Int64(bits))
            case 0x24: value = .uint8(try fixed(UInt8.self))
            case 0x25: value = .uint16(try fixed(UInt16.self))
            case 0x26: value = .uint32(try fixed(UInt32.self))
            case 0x27: value = .uint64(try fixed(UInt64.self))
            case 0x30:
                let bits = try fixed(UInt32.self)
                value = .float(Float(bitPattern: bits & 0x8000_0000 != 0 ? bits & 0x7FFF_FFFF : ~bits))
            case 0x31, 0x38:
                let bits = try fixed(UInt64.self)
                let double = Double(bitPattern: bits & 0x8000_0000_0000_0000 != 0 ? bits & 0x7FFF_FFFF_FFFF_FFFF : ~bits)
                value = tag == 0x31 ? .double(double) : .date(double)
            case 0x40:
                let start = position
                guard let string = String(validating: try escaped(), as: UTF8.self) else {
                    throw ArborError.malformedTupleKey(offset: start, detail: "string is not valid UTF-8")
                }
                value = .string(string)
            case 0x50: value = .bytes(try escaped())
            case 0x60:
                var uuid: [UInt8] = []
                for index in 0..<16 { uuid.append(try byte(position + 1 + index)) }
                position += 17
                value = .uuid(uuid)
            default:
                throw ArborError.malformedTupleKey(offset: position, detail: "unknown type tag \(tag)")
            }
            components.append(TupleComponent(value, descending: descending))
        }
        return components
    }

    /// Decodes a key's values (directions dropped).
    public static func decode(_ bytes: [UInt8]) throws -> [TupleValue] {
        try decodeComponents(bytes).map(\.value)
    }

    // MARK: Reference order

    /// The order the encoding preserves, defined on values (used by tests and documentation).
    public static func compare(_ a: [TupleComponent], _ b: [TupleComponent]) -> Int {
        for (left, right) in zip(a, b) {
            var order = compare(left.value, right.value)
            // Components of different direction compare by their first (inverted or not) byte.
            if left.descending != right.descending { order = left.descending ? 1 : -1 }
            else if left.descending { order = -order }
            if order != 0 { return order }
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// Compares two values: by type tag, then by value.
    public static func compare(_ a: TupleValue, _ b: TupleValue) -> Int {
        if a.tag != b.tag { return a.tag < b.tag ? -1 : 1 }
        func order<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x == y ? 0 : 1) }
        switch (a, b) {
        case (.int8(let x), .int8(let y)): return order(x, y)
        case (.int16(let x), .int16(let y)): return order(x, y)
        case (.int32(let x), .int32(let y)): return order(x, y)
        case (.int64(let x), .int64(let y)), (.integer(let x), .integer(let y)): return order(x, y)
        case (.uint8(let x), .uint8(let y)): return order(x, y)
        case (.uint16(let x), .uint16(let y)): return order(x, y)
        case (.uint32(let x), .uint32(let y)): return order(x, y)
        case (.uint64(let x), .uint64(let y)): return order(x, y)
        case (.float(let x), .float(let y)): return order(orderedBits(Double(x)), orderedBits(Double(y)))
        case (.double(let x), .double(let y)), (.date(let x), .date(let y)): return order(orderedBits(x), orderedBits(y))
        case (.string(let x), .string(let y)): return compareBytes(Array(x.utf8), Array(y.utf8)).signum()
        case (.bytes(let x), .bytes(let y)), (.uuid(let x), .uuid(let y)): return compareBytes(x, y).signum()
        default: return 0  // null, and bools (their tag already orders them)
        }
    }
}

// MARK: Reading components in place

extension TupleKey {
    /// The byte range of component `position` (0-based) of the encoded key `key`, without
    /// decoding or copying anything; nil when the key has fewer components or is malformed.
    /// Used to test an index entry's column against encoded bounds with `memcmp`.
    /// - Complexity: O(bytes before the end of the component).
    @inlinable
    public static func componentRange(in key: UnsafeRawBufferPointer, at position: Int) -> Range<Int>? {
        var start = 0
        var index = 0
        while start < key.count {
            guard let end = componentEnd(in: key, from: start) else { return nil }
            if index == position { return start..<end }
            index += 1
            start = end
        }
        return nil
    }

    /// The end of the component that starts at `start`; nil when it runs past the key or its
    /// tag is unknown. Runs once per component of every index entry a scan filters, so it
    /// reads bytes through the base address after one bounds check.
    @inlinable
    public static func componentEnd(in key: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start >= 0, start < key.count, let base = key.baseAddress else { return nil }
        let first = base.load(fromByteOffset: start, as: UInt8.self)
        let flip: UInt8 = first >= 0x80 ? 0xFF : 0
        let size: Int
        // Literal tags, not the named constants: a switch over literals compiles to a table.
        switch first ^ flip {
        case 0x05, 0x10, 0x11, 0x13: size = 1
        case 0x14...0x1B: size = Int((first ^ flip) &- 0x12)
        case 0x12, 0x23, 0x27, 0x31, 0x38: size = 9
        case 0x20, 0x24: size = 2
        case 0x21, 0x25: size = 3
        case 0x22, 0x26, 0x30: size = 5
        case 0x60: size = 17
        case 0x40, 0x50:
            // Escaped bytes end at 0x00 0x01 (0x00 0xFF is an escaped zero).
            var index = start + 1
            let mask: UInt64 = flip == 0 ? 0 : ~0
            while index + 1 < key.count {
                if index + 8 <= key.count {
                    // Eight bytes at a time to the next (flipped) zero byte: the lowest byte
                    // flagged by the zero-byte test is exactly the first zero.
                    let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self).littleEndian ^ mask
                    let zeros = (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
                    if zeros == 0 {
                        index += 8
                        continue
                    }
                    index += zeros.trailingZeroBitCount >> 3
                    guard index + 1 < key.count else { return nil }
                }
                if base.load(fromByteOffset: index, as: UInt8.self) ^ flip == 0 {
                    if base.load(fromByteOffset: index + 1, as: UInt8.self) ^ flip == 0x01 { return index + 2 }  // the terminator
                    index += 2
                } else {
                    index += 1
                }
            }
            return nil
        default: return nil
        }
        return size <= key.count - start ? start + size : nil
    }
}

// MARK: Reading integers in place

extension TupleKey {
    /// The ascending integer component at `offset` of `key` — fixed `int64` (tag 0x23) or a
    /// compact `integer` — with the offset just past it; nil when the bytes there are not one
    /// (or not in canonical form). Decodes nothing else and allocates nothing.
    /// - Complexity: O(1).
    @inlinable
    public static func integer<Bytes: RandomAccessCollection>(in key: Bytes, at offset: Int) -> (value: Int64, end: Int)?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        guard offset >= 0, offset < key.count else { return nil }
        let start = key.startIndex + offset
        let tag = key[start]
        let count: Int
        switch tag {
        case 0x13: return (0, offset + 1)
        case 0x14...0x1B: count = Int(tag - 0x13)
        case 0x12, 0x23: count = 8
        default: return nil
        }
        guard count <= key.count - offset - 1 else { return nil }
        var bits: UInt64 = 0
        for index in (start + 1)...(start + count) { bits = bits << 8 | UInt64(key[index]) }
        switch tag {
        case 0x23: return (Int64(bitPattern: bits ^ (1 << 63)), offset + 9)
        case 0x12: return bits >> 63 == 1 ? (Int64(bitPattern: bits), offset + 9) : nil
        default: return key[start + 1] != 0 && bits >> 63 == 0 ? (Int64(bits), offset + 1 + count) : nil
        }
    }

    /// `integer(in:at:)` for bytes in memory, reading through the base address after one
    /// bounds check (the form scans call per entry).
    @inlinable
    public static func integer(in key: UnsafeRawBufferPointer, at offset: Int) -> (value: Int64, end: Int)? {
        guard offset >= 0, offset < key.count, let base = key.baseAddress else { return nil }
        let tag = base.load(fromByteOffset: offset, as: UInt8.self)
        let count: Int
        switch tag {
        case 0x13: return (0, offset + 1)
        case 0x14...0x1B: count = Int(tag &- 0x13)
        case 0x12, 0x23: count = 8
        default: return nil
        }
        guard count <= key.count - offset - 1 else { return nil }
        var bits: UInt64 = 0
        let end = offset + 1 + count
        if end >= 8 {
            // One load of the eight bytes ending with the body (inside the key), its high
            // bytes (before the body) masked off.
            bits = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self))
            if count < 8 { bits &= (1 << UInt64(8 * count)) &- 1 }
        } else if key.count - offset > 8 {
            // A short component near the front of a longer key (an owner's key leading a
            // foreign-key entry): one load of the eight bytes starting with the body, its low
            // bytes (after the body) shifted out.
            bits = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)) >> UInt64(8 * (8 - count))
        } else {
            for index in 1...count { bits = bits << 8 | UInt64(base.load(fromByteOffset: offset + index, as: UInt8.self)) }
        }
        switch tag {
        case 0x23: return (Int64(bitPattern: bits ^ (1 << 63)), offset + 9)
        case 0x12: return bits >> 63 == 1 ? (Int64(bitPattern: bits), offset + 9) : nil
        default:
            let leading = base.load(fromByteOffset: offset + 1, as: UInt8.self)
            return leading != 0 && bits >> 63 == 0 ? (Int64(bits), offset + 1 + count) : nil
        }
    }

    /// The offset where the last component of `key` starts; nil when the key is empty or
    /// malformed. Walks the components from the front (their lengths are in their tags), from
    /// `first` when the caller knows a component starts there (past a prefix it searched by).
    /// - Complexity: O(bytes of the key from `first`).
    @inlinable
    public static func lastComponentStart(in key: UnsafeRawBufferPointer, from first: Int = 0) -> Int? {
        guard first >= 0, let base = key.baseAddress else { return nil }
        var start = first
        while start < key.count {
            let tag = base.load(fromByteOffset: start, as: UInt8.self)
            let end: Int
            if tag &- 0x13 <= 8 {
                // A compact integer (tags 0x13 to 0x1B, the usual row key and list position):
                // its size is in its tag, read here without a call.
                let size = Int(tag &- 0x12)
                guard size <= key.count - start else { return nil }
                end = start + size
            } else {
                guard let next = componentEnd(in: key, from: start) else { return nil }
                end = next
            }
            if end == key.count { return start }
            start = end
        }
        return nil
    }
}

extension TupleValue {
    /// The value of an integer component of either encoding (`int64` or compact `integer`).
    public var integerValue: Int64? {
        switch self {
        case .int64(let value), .integer(let value): return value
        default: return nil
        }
    }
}
