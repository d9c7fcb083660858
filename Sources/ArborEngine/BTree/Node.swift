/// A tree page being modified by a write transaction. A leaf copied from a page is first edited
/// in place (`LeafImage`); otherwise, and from the first operation that needs it, a node is
/// decoded: its keys back to back in one buffer (`PackedBytes`), a leaf's values likewise
/// (`LeafValues`), a branch's children in an array.
///
/// Clean pages are read in place (`Page`); the first modification in a transaction copies a page
/// into a `Node` under a newly allocated page number (copy-on-write), and commit serializes it.
final class Node {
    // A node belongs to one write transaction, used by one thread, and no method hands out a
    // mutable access to its storage that outlives a call: the runtime's exclusivity check on
    // every access (about a hundred instructions; several per insert) guards nothing here.
    /// 0 for a leaf; the height above the leaves for a branch.
    @exclusivity(unchecked) var level: Int
    /// The leaf's page image while it is edited in place (then `decodedKeys` and
    /// `decodedValues` are empty); nil once decoded, and for branches and new nodes.
    @exclusivity(unchecked) private var image: LeafImage?
    @exclusivity(unchecked) private var decodedKeys: PackedBytes
    @exclusivity(unchecked) private var decodedValues: LeafValues
    /// A branch's page image while only its child pointers change (then `decodedKeys` and
    /// `decodedChildren` are empty); nil once decoded.
    @exclusivity(unchecked) private var branchImage: BranchImage?
    @exclusivity(unchecked) private var decodedChildren: [PageID]
    /// Serialized size in bytes, header and slots included; kept current by the mutators.
    @exclusivity(unchecked) private(set) var byteSize: Int

    /// Leaf keys, or branch separators (`keys[i]` separates `children[i]` and `children[i + 1]`).
    /// Decodes a leaf edited in place.
    var keys: PackedBytes {
        get {
            decodeImage()
            return decodedKeys
        }
        _modify {
            decodeImage()
            yield &decodedKeys
        }
    }

    /// Leaf values, parallel to `keys`. Decodes a leaf edited in place.
    var values: LeafValues {
        get {
            decodeImage()
            return decodedValues
        }
        _modify {
            decodeImage()
            yield &decodedValues
        }
    }

    /// Branch children; `children.count == keys.count + 1`. Decodes a branch edited in place.
    var children: [PageID] {
        get {
            decodeImage()
            return decodedChildren
        }
        _modify {
            decodeImage()
            yield &decodedChildren
        }
    }

    /// The page whose separators this branch still has (edited in place), for `Page.copy`.
    var unchangedSeparatorsSource: Page? { branchImage?.source }

    var isLeaf: Bool { level == 0 }
    var count: Int { image?.count ?? branchImage?.count ?? decodedKeys.count }
    /// Whether the node is still edited in place (tests).
    var isInPlace: Bool { image != nil || branchImage != nil }

    init(level: Int) {
        self.level = level
        decodedKeys = PackedBytes()
        decodedValues = LeafValues()
        decodedChildren = []
        byteSize = PageHeader.size
    }

    deinit {
        image?.deallocate()
        branchImage?.deallocate()
    }

    /// A node for `page`'s contents: a leaf of the compact layout and the file's page size is
    /// edited in place; other pages are decoded.
    convenience init(page: Page, pageSize: Int) {
        self.init(level: page.level)
        if let image = LeafImage(page: page, pageSize: pageSize) {
            self.image = image
            byteSize = image.usedBytes
            return
        }
        if let image = BranchImage(page: page, pageSize: pageSize) {
            branchImage = image
            byteSize = image.usedBytes
            return
        }
        decode(page)
    }

    /// Fills the decoded form from `page`.
    private func decode(_ page: Page) {
        // Built locally and stored once: appending through the properties would check access
        // for every cell. Each cell is copied once into buffers sized for the page.
        let keys: PackedBytes
        if page.level == 0 {
            var total = 0
            for index in 0..<page.count { total += page.leafEntry(index).key.count }
            keys = PackedBytes.packing(count: page.count, byteCapacity: total) { index, put in put(page.leafEntry(index).key, false) }
                ?? PackedBytes((0..<page.count).map { page.leafEntry($0).key }.map(Array.init))
            decodedValues = LeafValues(page: page)
        } else {
            var total = 0
            for index in 0..<page.count { total += page.withKey(index) { $0.count } }
            keys = PackedBytes.packing(count: page.count, byteCapacity: total) { index, put in page.withKey(index) { put($0, false) } }
                ?? PackedBytes((0..<page.count).map { index in page.withKey(index) { Array($0) } })
            var children: [PageID] = []
            children.reserveCapacity(page.count + 2)
            for index in 0...page.count { children.append(page.child(index)) }
            decodedChildren = children
        }
        decodedKeys = keys
        recomputeSize()
    }

    /// Turns a leaf edited in place into the decoded form (for the operations that need it).
    @inline(__always) private func decodeImage() {
        if let image {
            self.image = nil
            (decodedKeys, decodedValues) = image.decoded()
            image.deallocate()
            recomputeSize()
        } else if let branchImage {
            self.branchImage = nil
            decode(branchImage.page())
            branchImage.deallocate()
        }
    }

    // MARK: Branch access without decoding

    /// Child `index` of a branch.
    func child(at index: Int) -> PageID {
        if let branchImage { return branchImage.child(index) }
        return decodedChildren[index]
    }

    /// Points child `index` of a branch at `id` (a copy-on-write descent).
    func setChild(_ id: PageID, at index: Int) {
        if let branchImage { return branchImage.setChild(id, at: index) }
        decodedChildren[index] = id
    }

    /// Separator (or leaf key) `index`, copied.
    func key(at index: Int) -> [UInt8] {
        if let branchImage { return branchImage.withKey(index) { Array($0) } }
        if let image { return image.withKey(index) { Array($0) } }
        return decodedKeys[index]
    }

    func recomputeSize() {
        if let image {
            byteSize = image.usedBytes
            return
        }
        if let branchImage {
            byteSize = branchImage.usedBytes
            return
        }
        var size = PageHeader.size
        let keys = decodedKeys, values = decodedValues  // one retain each, not one per cell
        if isLeaf {
            for index in values.indices { size += leafCellSize(keyLength: keys.length(index), valueCellBytes: values.cellBytes(index)) }
        } else {
            for index in 0..<keys.count { size += branchCellSize(keyLength: keys.length(index)) }
        }
        byteSize = size
    }

    // MARK: Leaf mutation

    func insertLeaf(key: [UInt8], value: LeafValue, at index: Int) {
        if var image {
            // In place while the cell fits the page; else decoded (and split by the caller).
            let inserted = key.withUnsafeBytes { image.insert(key: $0, value: value, at: index) }
            self.image = image
            if inserted {
                byteSize = image.usedBytes
                return
            }
            decodeImage()
        }
        byteSize += leafCellSize(keyLength: key.count, value: value)
        // Appends (the common case of an import) take the cheaper path than a general insert.
        if index == keys.count {
            keys.append(key)
            values.append(value)
        } else {
            keys.insert(key, at: index)
            values.insert(value, at: index)
        }
    }

    func replaceLeafValue(at index: Int, with value: LeafValue) {
        if var image {
            let replaced = image.replaceValue(at: index, with: value)
            self.image = image
            if replaced {
                byteSize = image.usedBytes
                return
            }
            decodeImage()
        }
        byteSize += value.cellBytes - decodedValues.cellBytes(index)
        decodedValues.replace(at: index, with: value)
    }

    func removeLeaf(at index: Int) {
        if var image {
            image.remove(at: index)
            self.image = image
            byteSize = image.usedBytes
            return
        }
        byteSize -= leafCellSize(keyLength: decodedKeys.length(index), valueCellBytes: decodedValues.cellBytes(index))
        decodedKeys.remove(at: index)
        decodedValues.remove(at: index)
    }

    /// Leaf value `index` (an inline value copied out).
    func value(at index: Int) -> LeafValue {
        if let image { return image.value(index) }
        return decodedValues[index]
    }

    /// Bytes leaf value `index` takes in its cell (`LeafValue.cellBytes`).
    func valueCellBytes(_ index: Int) -> Int {
        if let image { return image.valueCellBytes(index) }
        return decodedValues.cellBytes(index)
    }

    // MARK: Branch mutation

    /// Inserts separator `key` with `child` to its right, at separator position `index`.
    func insertBranch(key: [UInt8], rightChild child: PageID, at index: Int) {
        keys.insert(key, at: index)
        children.insert(child, at: index + 1)
        byteSize += branchCellSize(keyLength: key.count)
    }

    func replaceSeparator(at index: Int, with key: [UInt8]) {
        let old = keys.length(index)
        byteSize += key.count - old + varintLength(UInt64(key.count)) - varintLength(UInt64(old))
        keys.replace(at: index, with: key)
    }

    /// Removes separator `index` and the child to its right.
    func removeBranch(separatorAt index: Int) {
        byteSize -= branchCellSize(keyLength: keys.length(index))
        keys.remove(at: index)
        children.remove(at: index + 1)
    }

    /// The child index covering `key` in a branch.
    func childIndex(for key: [UInt8]) -> Int {
        if let branchImage { return key.withUnsafeBytes { branchImage.childIndex(for: $0) } }
        let keys = self.decodedKeys
        return key.withUnsafeBytes { keys.upperBound($0) }
    }

    /// The index of the first key >= `key` in a leaf, and whether it is equal.
    func search(_ key: [UInt8]) -> (index: Int, found: Bool) {
        if let image {
            return key.withUnsafeBytes { key in
                let index = image.lowerBound(key)
                return (index, index < image.count && image.withKey(index) { compareBytes($0, key) == 0 })
            }
        }
        let keys = self.decodedKeys
        return key.withUnsafeBytes { key in
            let index = keys.lowerBound(key)
            return (index, index < keys.count && keys.bytesEqual(index, key))
        }
    }

    // MARK: Serialization

    /// Writes the node as page `id` into `buffer` (whose size is the page or logical-leaf size),
    /// zero-filling unused space, and stores the checksum.
    func serialize(into buffer: UnsafeMutableRawBufferPointer, id: PageID, txid: UInt64) {
        precondition(byteSize <= buffer.count, "node of \(byteSize) bytes does not fit \(buffer.count)")
        if let image, image.size == buffer.count { return image.write(into: buffer, id: id, txid: txid) }
        if let branchImage, branchImage.bytes.count == buffer.count { return branchImage.write(into: buffer, id: id, txid: txid) }
        decodeImage()
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        buffer[PageHeader.type] = isLeaf ? PageType.compactLeaf.rawValue : PageType.branch.rawValue
        buffer[PageHeader.level] = UInt8(level)
        buffer.putU16(UInt16(keys.count), at: PageHeader.count)
        buffer.putU32(id, at: PageHeader.pageNumber)
        buffer.putU64(txid, at: PageHeader.txid)
        buffer.putU32(isLeaf ? 0 : children[0], at: PageHeader.extra)
        // Cells are packed from the end of the page downwards, in key order.
        var cellEnd = buffer.count
        let keys = self.keys, values = self.values, children = self.children  // one retain each, not one per cell
        for index in 0..<keys.count {
            keys.withBytes(index) { key in
                let cellSize: Int
                if isLeaf {
                    cellSize = leafCellSize(keyLength: key.count, valueCellBytes: values.cellBytes(index)) - 2
                } else {
                    cellSize = branchCellSize(keyLength: key.count) - 2
                }
                let start = cellEnd - cellSize
                buffer.putU16(UInt16(start), at: PageHeader.size + 2 * index)
                var position = start
                if isLeaf {
                    if values.withInline(index, { buffer.putInlineLeafCell(key: key, value: $0, at: position) }) == nil,
                       case .overflow(let ref) = values[index] {
                        _ = buffer.putOverflowLeafCell(key: key, ref: ref, at: position)
                    }
                } else {
                    buffer.putU32(children[index + 1], at: position)
                    position += 4
                    position += buffer.putVarint(UInt64(key.count), at: position)
                    _ = buffer.putBytes(key, at: position)
                }
                cellEnd = start
            }
        }
        sealPage(buffer)
    }
}

/// Stores the checksum of a fully built page image.
func sealPage(_ buffer: UnsafeMutableRawBufferPointer) {
    buffer.putU32(PageChecksum.compute(UnsafeRawBufferPointer(rebasing: buffer[4...])), at: PageHeader.checksum)
}
