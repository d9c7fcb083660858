import CPageKernels

/// The layout check of a page read from the file (`Page.validated`): the header's fields, and
/// every cell inside the cell area and inside the page. Afterwards the accessors read cells
/// without further checks.
extension Page {
    /// Checks the header fields and every cell of a page read from the file: what lets the
    /// accessors read cells without bounds checks.
    /// - Throws: `ArborError.corruptPage` naming what is wrong.
    func validateLayout() throws {
        guard let type = PageType(rawValue: raw[PageHeader.type]) else {
            throw ArborError.corruptPage(page: id, detail: "unknown page type \(raw[PageHeader.type])")
        }
        switch type {
        case .meta, .compressedLeaf:
            throw ArborError.corruptPage(page: id, detail: "unexpected \(type) page inside a tree")
        case .overflow:
            guard level == 0, PageHeader.size + count <= size else {
                throw ArborError.corruptPage(page: id, detail: "overflow payload of \(count) bytes does not fit the page")
            }
        case .leaf, .compactLeaf, .branch:
            try validateCells(isLeaf: type.isLeaf)
        }
    }

    private func validateCells(isLeaf: Bool) throws {
        guard isLeaf == (level == 0), level <= Limits.maxTreeDepth else {
            throw ArborError.corruptPage(page: id, detail: "level \(level) is impossible for a \(isLeaf ? "leaf" : "branch")")
        }
        let slotsEnd = PageHeader.size + 2 * count
        guard slotsEnd <= size, isLeaf ? count > 0 : true else {
            throw ArborError.corruptPage(page: id, detail: "\(count) cells cannot fit in \(size) bytes")
        }
        let raw = self.raw
        let compactLeaf = isLeaf && compactCells
        // A compact leaf's cells are first checked in their common form (one-byte key length,
        // a value header of one or two bytes, an inline value) by a tight loop: every page read from the file
        // passes here, and this is most of the cost of a page-cache miss. The general loop
        // below takes over at the first cell of another form, or to report what is wrong.
        let checked = compactLeaf ? commonCompactCells(slotsEnd: slotsEnd) : 0
        for index in checked..<count {
            let offset = cellOffset(index)
            guard offset >= slotsEnd, offset < size else {
                throw ArborError.corruptPage(page: id, detail: "cell \(index) offset \(offset) outside the cell area")
            }
            var position = offset
            // Fast paths for what nearly every cell is (one-byte key length and value header,
            // an inline value; a one-byte separator length): the same checks as the general
            // parse below, without varint loops. A page is checked cell by cell each time it
            // is read from the file, so this loop is most of the cost of a page-cache miss.
            if compactLeaf {
                if offset + 1 < size {
                    let keyLength = Int(raw[offset]), header = Int(raw[offset + 1])
                    if (keyLength | header) < 0x80 && header & 1 == 0 {
                        guard keyLength > 0, offset + 2 + keyLength + header >> 1 <= size else {
                            throw ArborError.corruptPage(page: id, detail: "cell \(index) runs past the end of the page")
                        }
                        continue
                    }
                }
            } else if !isLeaf, offset + 4 < size, raw[offset + 4] < 0x80 {
                let keyLength = Int(raw[offset + 4])
                guard keyLength > 0, offset + 5 + keyLength <= size else {
                    throw ArborError.corruptPage(page: id, detail: "branch cell \(index) has a malformed key")
                }
                continue
            }
            if isLeaf && compactCells {
                guard let (keyLength, keySize) = raw.varint(position, limit: size), keyLength > 0, keyLength <= UInt64(size) else {
                    throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed key length")
                }
                position += keySize
                guard let (header, headerSize) = raw.varint(position, limit: size) else {
                    throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed value header")
                }
                position += headerSize + Int(keyLength)
                if header & 1 == 0 {
                    guard header >> 1 <= UInt64(size) else {
                        throw ArborError.corruptPage(page: id, detail: "cell \(index) value length \(header >> 1) exceeds the page")
                    }
                    position += Int(header >> 1)
                } else {
                    position += 4
                    guard position <= size, let (stored, storedSize) = raw.varint(position, limit: size),
                          header >> 1 <= UInt64(Limits.maxValueLength), stored > 0, stored <= header >> 1 else {
                        throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed overflow reference")
                    }
                    position += storedSize
                }
            } else if isLeaf {
                let flags = raw[position]
                guard flags & ~LeafCellFlag.all == 0 else {
                    throw ArborError.corruptPage(page: id, detail: "cell \(index) has unknown flags \(flags)")
                }
                position += 1
                guard let (keyLength, keySize) = raw.varint(position, limit: size), keyLength > 0 else {
                    throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed key length")
                }
                position += keySize
                if flags & LeafCellFlag.overflow == 0 {
                    guard let (valueLength, valueSize) = raw.varint(position, limit: size),
                          valueLength <= UInt64(size), keyLength <= UInt64(size) else {
                        throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed value length")
                    }
                    position += valueSize + Int(keyLength) + Int(valueLength)
                } else {
                    guard keyLength <= UInt64(size) else {
                        throw ArborError.corruptPage(page: id, detail: "cell \(index) key length \(keyLength) exceeds the page")
                    }
                    position += Int(keyLength) + 4
                    guard position <= size,
                          let (rawLength, rawSize) = raw.varint(position, limit: size),
                          let (stored, storedSize) = raw.varint(position + rawSize, limit: size),
                          rawLength <= UInt64(Limits.maxValueLength), stored <= UInt64(Limits.maxValueLength),
                          stored > 0 else {
                        throw ArborError.corruptPage(page: id, detail: "cell \(index) has a malformed overflow reference")
                    }
                    position += rawSize + storedSize
                }
            } else {
                position += 4
                guard position <= size, let (keyLength, keySize) = raw.varint(position, limit: size),
                      keyLength > 0, keyLength <= UInt64(size) else {
                    throw ArborError.corruptPage(page: id, detail: "branch cell \(index) has a malformed key")
                }
                position += keySize + Int(keyLength)
            }
            guard position <= size else {
                throw ArborError.corruptPage(page: id, detail: "cell \(index) runs past the end of the page")
            }
        }
    }

    /// The number of leading cells (in slot order) of this compact leaf that are in the common
    /// form and lie inside the cell area (see `commonCompactCells(_:size:slotsEnd:count:from:)`):
    /// eight at a time with AVX2 where the CPU has it, then one by one.
    private func commonCompactCells(slotsEnd: Int) -> Int {
        guard let base = UnsafeRawPointer(bytes.baseAddress) else { return 0 }
        // The vector loop takes about a quarter of the scalar loop's instructions, and this
        // check is most of what a page read from the file costs.
        let checked = CPUFeatures.hasAVX2 ? Self.commonCompactCellsWithAVX2(base, size: size, slotsEnd: slotsEnd, count: count) : 0
        return Self.commonCompactCells(base, size: size, slotsEnd: slotsEnd, count: count, from: checked)
    }

    /// The leading cells the AVX2 loop accepts, eight at a time (see `arbor_compact_cells_avx2`):
    /// a multiple of eight, never more than `commonCompactCells(_:size:slotsEnd:count:from:)`
    /// from 0 accepts. 0 where the CPU lacks AVX2.
    static func commonCompactCellsWithAVX2(_ base: UnsafeRawPointer, size: Int, slotsEnd: Int, count: Int) -> Int {
        arbor_compact_cells_avx2(base, size, PageHeader.size, slotsEnd, count)
    }

    /// The number of leading cells (in slot order) of the compact leaf at `base` (`size` bytes,
    /// `count` slots ending at `slotsEnd`), from cell `start` on, that are in the common form
    /// and lie inside the cell area: offset at or past `slotsEnd`, key length 1 ..< 128, an
    /// even (inline) value header of one or two bytes (values up to 8,191 bytes: rows and
    /// index entries alike), and key and value ending inside the page. The cells before `start`
    /// must have passed already. Wrapping arithmetic is exact here: every operand is below 2^17.
    static func commonCompactCells(_ base: UnsafeRawPointer, size: Int, slotsEnd: Int, count: Int, from start: Int) -> Int {
        // `offset >= slotsEnd && offset + 1 < size` as one unsigned comparison.
        let span = UInt(bitPattern: max(size &- 1 &- slotsEnd, 0))
        var index = start
        while index < count {
            let offset = Int(base.loadUnaligned(fromByteOffset: PageHeader.size &+ 2 &* index, as: UInt16.self).littleEndian)
            guard UInt(bitPattern: offset &- slotsEnd) < span else { break }
            // The key length (low byte) and the value header's first byte (high byte) in one
            // load. The form of index entries first: both below 0x80 and the header even is
            // one mask (0x8180); the key length is not 0; the value length is bits 9...14.
            let pair = Int(base.loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian)
            if pair & 0x8180 == 0, pair & 0x7F != 0 {
                guard offset &+ 2 &+ (pair & 0x7F) &+ (pair &>> 9) <= size else { break }
            } else {
                // A row's: a two-byte header, whose second byte ends the varint (below 0x80).
                guard pair & 0x0180 == 0, pair & 0x7F != 0, offset &+ 2 < size else { break }
                let next = Int(base.load(fromByteOffset: offset &+ 2, as: UInt8.self))
                guard next & 0x80 == 0,
                      offset &+ 3 &+ (pair & 0x7F) &+ ((pair &>> 9) & 0x3F | next &<< 6) <= size else { break }
            }
            index &+= 1
        }
        return index
    }
}
