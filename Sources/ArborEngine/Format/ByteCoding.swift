#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Little-endian integer and LEB128 varint helpers over raw buffers. Reads are bounds-checked
/// by the callers' validation; the `checked` variants return nil instead of reading past the end.
extension UnsafeRawBufferPointer {
    @inline(__always) func u16(_ offset: Int) -> UInt16 {
        loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian
    }
    @inline(__always) func u32(_ offset: Int) -> UInt32 {
        loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
    }
    @inline(__always) func u64(_ offset: Int) -> UInt64 {
        loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
    }
    /// Reads a varint at `offset`; nil when it runs past `limit` or exceeds 10 bytes / 64 bits.
    @inline(__always) func varint(_ offset: Int, limit: Int) -> (value: UInt64, length: Int)? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var position = offset
        while position < limit {
            let byte = self[position]
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            position += 1
            if byte & 0x80 == 0 { return (result, position - offset) }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always) func putU16(_ value: UInt16, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt16.self)
    }
    @inline(__always) func putU32(_ value: UInt32, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self)
    }
    @inline(__always) func putU64(_ value: UInt64, at offset: Int) {
        storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self)
    }
    /// Writes `value` as a LEB128 varint; returns the number of bytes written.
    @inline(__always) func putVarint(_ value: UInt64, at offset: Int) -> Int {
        var remaining = value
        var position = offset
        while remaining >= 0x80 {
            self[position] = UInt8(truncatingIfNeeded: remaining) | 0x80
            remaining >>= 7
            position += 1
        }
        self[position] = UInt8(remaining)
        return position - offset + 1
    }
}

/// The number of bytes `putVarint` (or any LEB128 varint writer) uses for `value`.
@inlinable @inline(__always) public func varintLength(_ value: UInt64) -> Int {
    var length = 1
    var remaining = value >> 7
    while remaining != 0 { length += 1; remaining >>= 7 }
    return length
}

/// Appends little-endian integers and varints to a byte array.
extension Array where Element == UInt8 {
    mutating func appendU32(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
    mutating func appendU64(_ value: UInt64) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
    mutating func appendVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining >>= 7
        }
        append(UInt8(remaining))
    }
}

/// Lexicographic comparison of two byte strings (memcmp, then length): the order of keys in
/// every tree. Negative, zero or positive as `a` sorts before, equal to or after `b`.
@inlinable @inline(__always)
public func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
    let common = Swift.min(a.count, b.count)
    if common > 0, let pa = a.baseAddress, let pb = b.baseAddress {
        if common <= 16 {
            // Short keys (row keys, most index keys), without a loop: two big-endian words of
            // the widest size that fits, the first at the start and the second ending at
            // `common` (they may overlap: when the first words are equal, so are the shared
            // bytes, and the second pair decides). Big-endian words order as their bytes do.
            var x: UInt64, y: UInt64
            if common >= 8 {
                x = UInt64(bigEndian: pa.loadUnaligned(as: UInt64.self))
                y = UInt64(bigEndian: pb.loadUnaligned(as: UInt64.self))
                if x == y {
                    x = UInt64(bigEndian: pa.loadUnaligned(fromByteOffset: common - 8, as: UInt64.self))
                    y = UInt64(bigEndian: pb.loadUnaligned(fromByteOffset: common - 8, as: UInt64.self))
                }
            } else if common >= 4 {
                // Both words in one: the first four bytes high, the last four low.
                x = UInt64(UInt32(bigEndian: pa.loadUnaligned(as: UInt32.self))) << 32
                    | UInt64(UInt32(bigEndian: pa.loadUnaligned(fromByteOffset: common - 4, as: UInt32.self)))
                y = UInt64(UInt32(bigEndian: pb.loadUnaligned(as: UInt32.self))) << 32
                    | UInt64(UInt32(bigEndian: pb.loadUnaligned(fromByteOffset: common - 4, as: UInt32.self)))
            } else if common >= 2 {
                x = UInt64(UInt16(bigEndian: pa.loadUnaligned(as: UInt16.self))) << 16
                    | UInt64(UInt16(bigEndian: pa.loadUnaligned(fromByteOffset: common - 2, as: UInt16.self)))
                y = UInt64(UInt16(bigEndian: pb.loadUnaligned(as: UInt16.self))) << 16
                    | UInt64(UInt16(bigEndian: pb.loadUnaligned(fromByteOffset: common - 2, as: UInt16.self)))
            } else {
                x = UInt64(pa.load(as: UInt8.self))
                y = UInt64(pb.load(as: UInt8.self))
            }
            if x != y { return x < y ? -1 : 1 }
        } else {
            let result = memcmp(pa, pb, common)
            if result != 0 { return Int(result) }
        }
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

/// `compareBytes` of two arrays.
@inlinable @inline(__always)
public func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in compareBytes(pa, pb) } }
}
