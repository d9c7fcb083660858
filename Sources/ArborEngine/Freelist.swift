/// The freelist is a B+tree keyed by (freeing transaction id, sequence), each value a packed
/// list of UInt32 page numbers. A commit adds only its own entries, so its cost follows the size
/// of the change — unlike bbolt, which rewrites its whole freelist on every commit.
///
/// Entries with transaction id 0 hold pages that are reusable at once (left over from a
/// transaction that loaded more free pages than it used).
enum FreelistKey {
    static func encode(freedBy: UInt64, sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16)
        withUnsafeBytes(of: freedBy.bigEndian) { key.append(contentsOf: $0) }
        withUnsafeBytes(of: sequence.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    static func decode(_ key: [UInt8]) -> (freedBy: UInt64, sequence: UInt64)? {
        guard key.count == 16 else { return nil }
        return key.withUnsafeBytes { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    static func decodePages(_ value: [UInt8], page: PageID) throws -> [PageID] {
        guard value.count % 4 == 0, !value.isEmpty else {
            throw ArborError.corruptPage(page: page, detail: "freelist entry of \(value.count) bytes is not a list of page numbers")
        }
        return value.withUnsafeBytes { raw in (0..<(value.count / 4)).map { raw.u32($0 * 4) } }
    }

    static func encodePages<C: Collection>(_ pages: C) -> [UInt8] where C.Element == PageID {
        var value: [UInt8] = []
        value.reserveCapacity(pages.count * 4)
        for page in pages { value.appendU32(page) }
        return value
    }
}

extension WriteTransaction {
    /// Pages per freelist entry: values stay inline (no overflow pages inside the freelist).
    var freelistChunkPages: Int { Limits.inlineValueLimit(pageSize: pageSize) / 4 }

    /// Moves the oldest reusable freelist entry into `reusable`. Does nothing when the oldest
    /// entry was freed after the oldest open reader's snapshot.
    func loadFreelistEntry() throws {
        guard freelistBox.info.root != 0 else { return }
        loadingFreelist = true
        defer { loadingFreelist = false }
        let cursor = Cursor(transaction: self, box: freelistBox)
        guard try cursor.first(), let key = cursor.key else { return }
        guard let (freedBy, _) = FreelistKey.decode(key) else {
            throw ArborError.corruptPage(page: freelistBox.info.root, detail: "freelist key of \(key.count) bytes")
        }
        guard freedBy <= reuseLimit else { return }
        let pages = try FreelistKey.decodePages(try cursor.value(), page: freelistBox.info.root)
        for page in pages where page < 2 || page >= meta.pageCount {
            throw ArborError.pageOutOfRange(page: page, pageCount: meta.pageCount, referencedFrom: "the freelist")
        }
        // Reversed so that popLast hands out ascending page numbers (sequential writes).
        reusable.append(contentsOf: pages.sorted(by: >))
        freePages -= min(freePages, UInt64(pages.count))
        _ = try remove(freelistBox, key)
    }

    /// Records this transaction's freed pages and its unused reusable pages in the freelist tree.
    ///
    /// Writing the freelist itself copies and frees freelist pages and allocates new ones, so the
    /// entries are rewritten until the sets they describe stop changing. After three rounds new
    /// pages come only from the end of the file, which makes the sets grow monotonically and
    /// guarantees the fixed point.
    func writeFreelist() throws {
        var ownChunks = 0
        var leftoverChunks = 0
        for round in 0..<64 {
            if round >= 3 { monotoneAllocation = true }
            let own = pendingFree.sorted()
            let leftover = reusable.sorted()
            ownChunks = try writeChunks(own, freedBy: txid, sequenceBase: 0, previousChunks: ownChunks)
            leftoverChunks = try writeChunks(leftover, freedBy: 0, sequenceBase: txid << 20, previousChunks: leftoverChunks)
            if pendingFree.sorted() == own && reusable.sorted() == leftover {
                freePages += UInt64(own.count + leftover.count)
                return
            }
        }
        throw ArborError.internalInconsistency("the freelist did not reach a fixed point")
    }

    private func writeChunks(_ pages: [PageID], freedBy: UInt64, sequenceBase: UInt64, previousChunks: Int) throws -> Int {
        let chunkSize = freelistChunkPages
        var chunks = 0
        var start = 0
        while start < pages.count {
            let end = min(start + chunkSize, pages.count)
            let key = FreelistKey.encode(freedBy: freedBy, sequence: sequenceBase + UInt64(chunks))
            _ = try insert(freelistBox, key, .inline(FreelistKey.encodePages(pages[start..<end])))
            chunks += 1
            start = end
        }
        for stale in chunks..<max(chunks, previousChunks) {
            _ = try remove(freelistBox, FreelistKey.encode(freedBy: freedBy, sequence: sequenceBase + UInt64(stale)))
        }
        return chunks
    }
}
