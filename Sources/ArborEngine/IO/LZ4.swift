import CLZ4

/// LZ4 block compression (liblz4). Raw blocks do not record their size: callers store it.
enum LZ4 {
    /// The compressed bytes, or nil when compression would not make `bytes` smaller.
    static func compress(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard bytes.count > 0, bytes.count < Int(Int32.max) else { return nil }
        let bound = Int(LZ4_compressBound(Int32(bytes.count)))
        guard bound > 0 else { return nil }
        var output = [UInt8](repeating: 0, count: bound)
        let written = output.withUnsafeMutableBytes { out in
            LZ4_compress_default(
                bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                out.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count), Int32(bound))
        }
        guard written > 0, Int(written) < bytes.count else { return nil }
        output.removeSubrange(Int(written)...)
        return output
    }

    static func compress(_ bytes: [UInt8]) -> [UInt8]? { bytes.withUnsafeBytes { compress($0) } }

    /// Decompresses exactly `originalLength` bytes; a corrupt block throws (liblz4's safe decoder
    /// never reads or writes out of bounds).
    static func decompress(_ bytes: UnsafeRawBufferPointer, originalLength: Int, page: PageID) throws -> [UInt8] {
        guard originalLength >= 0, originalLength <= Limits.maxValueLength, bytes.count < Int(Int32.max) else {
            throw ArborError.decompressionFailed(page: page, detail: "implausible length \(originalLength)")
        }
        var output = [UInt8](repeating: 0, count: originalLength)
        let produced = output.withUnsafeMutableBytes { out in
            LZ4_decompress_safe(
                bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                out.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count), Int32(originalLength))
        }
        guard produced == Int32(originalLength) else {
            throw ArborError.decompressionFailed(page: page, detail: "produced \(produced) of \(originalLength) bytes")
        }
        return output
    }

    static func decompress(_ bytes: [UInt8], originalLength: Int, page: PageID) throws -> [UInt8] {
        try bytes.withUnsafeBytes { try decompress($0, originalLength: originalLength, page: page) }
    }
}
