import Foundation

/// A bounds-checked reader over bytes from disk.
struct ByteReader {
    enum Failure: Error {
        case detail(String)
        var text: String { if case .detail(let text) = self { return text } else { return "" } }
    }

    /// The bytes read: valid only while the caller's `withUnsafeBytes` (or page access) lasts,
    /// so a reader never outlives the call that made it.
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw Failure.detail("unexpected end") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bytes(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw Failure.detail("length \(count) runs past the end") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// A little-endian integer, read in place (no slice, no per-byte loop).
    mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard size <= remaining else { throw Failure.detail("length \(size) runs past the end") }
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += size
        return T(littleEndian: value)
    }

    /// A varint (LEB128: seven bits a byte, least significant first, at most ten bytes).
    /// - Throws: `Failure` when it runs past the end or past 64 bits.
    @inline(__always)
    mutating func varint() throws -> UInt64 {
        // Most varints (tags, lengths, small numbers) are one byte.
        if offset < bytes.count, bytes[offset] < 0x80 {
            offset += 1
            return UInt64(bytes[offset - 1])
        }
        return try longVarint()
    }

    /// `varint()` with its multi-byte case inlined as well, for the per-row paths that read
    /// dates' five-byte seconds (a call there cost more than the decoding).
    @inline(__always)
    mutating func inlinedVarint() throws -> UInt64 {
        if offset < bytes.count, bytes[offset] < 0x80 {
            offset += 1
            return UInt64(bytes[offset - 1])
        }
        if let value = eightByteVarint() { return value }
        return try longVarint()
    }

    /// A varint that ends within the next eight bytes, from one load: the first byte with its
    /// high bit clear ends it; the bytes up to it are kept and their 7-bit groups gathered
    /// (a per-byte loop cost about ten instructions a byte). nil when fewer than eight bytes
    /// remain or the varint is longer; the offset is then unchanged.
    @inline(__always)
    private mutating func eightByteVarint() -> UInt64? {
        guard bytes.count &- offset >= 8, let base = bytes.baseAddress,
              let (value, length) = Self.eightByteVarint(at: base + offset) else { return nil }
        offset &+= length
        return value
    }

    /// The varint at `start` (eight bytes readable there) and its length, when it ends within
    /// those eight bytes: one load, the end found from the high bits, the 7-bit groups gathered.
    @inline(__always)
    static func eightByteVarint(at start: UnsafeRawPointer) -> (value: UInt64, length: Int)? {
        let word = UInt64(littleEndian: start.loadUnaligned(as: UInt64.self))
        let ends = ~word & 0x8080_8080_8080_8080
        guard ends != 0 else { return nil }
        let bits = ends.trailingZeroBitCount &+ 1  // 8 × the varint's length
        return (gatherGroups(bits == 64 ? word : word & (1 &<< UInt64(bits) &- 1)), bits &>> 3)
    }

    /// `varint()` of more than one byte, out of line so that the one-byte case stays small
    /// where it is inlined (a row's decoding reads varints in several places).
    @inline(never)
    private mutating func longVarint() throws -> UInt64 {
        if let value = eightByteVarint() { return value }
        // Within eight bytes of the end, or longer than eight bytes: byte by byte.
        var result: UInt64 = 0
        for shift in stride(from: 0, through: 63, by: 7) {
            let byte = try self.byte()
            if shift == 63 && byte > 1 { throw Failure.detail("varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << UInt64(shift)
            if byte & 0x80 == 0 { return result }
        }
        throw Failure.detail("varint longer than 10 bytes")
    }

    /// The value of a varint of at most eight bytes given as a little-endian word (the bytes
    /// after it cleared): the low seven bits of each byte, in order, packed together.
    @inline(__always)
    static func gatherGroups(_ word: UInt64) -> UInt64 {
        var value = word & 0x7F7F_7F7F_7F7F_7F7F
        value = (value & 0x007F_007F_007F_007F) | (value & 0x7F00_7F00_7F00_7F00) &>> 1
        value = (value & 0x0000_3FFF_0000_3FFF) | (value & 0x3FFF_0000_3FFF_0000) &>> 2
        return (value & 0x0000_0000_0FFF_FFFF) | (value & 0x0FFF_FFFF_0000_0000) &>> 4
    }

    mutating func lengthPrefixed() throws -> UnsafeRawBufferPointer {
        let length = try varint()
        guard length <= UInt64(remaining) else { throw Failure.detail("length \(length) runs past the end") }
        return try bytes(Int(length))
    }

    mutating func string() throws -> String {
        let slice = try lengthPrefixed()
        // Decoding repairs invalid UTF-8; the repaired text differs from the bytes exactly when
        // they were invalid. (Much faster than String(validating:), which is not specialized.)
        let text = String(decoding: slice, as: UTF8.self)
        guard Self.sameBytes(text, slice) else { throw Failure.detail("invalid UTF-8") }
        return text
    }

    /// Whether `text`'s UTF-8 is exactly `bytes`: a length check and a `memcmp` when the
    /// string's bytes are contiguous (always, for a freshly decoded native string).
    static func sameBytes(_ text: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard text.utf8.count == bytes.count else { return false }
        let compared = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard let a = utf8.baseAddress, let b = bytes.baseAddress else { return true }  // both empty
            return memcmp(a, b, bytes.count) == 0
        }
        return compared ?? text.utf8.elementsEqual(bytes)
    }
}
