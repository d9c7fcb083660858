/// The freelist is a B+tree keyed by (freeing transaction id, earliest birth, sequence), each
/// value a packed list of UInt32 page numbers. A commit adds only its own entries, so its cost
/// follows the size of the change — unlike bbolt, which rewrites its whole freelist on every
/// commit. The earliest birth (the oldest transaction that wrote one of the entry's pages) lets
/// a writer reuse pages that a long reader's snapshot never saw (see `PageReuse`).
///
/// Entries with transaction id 0 hold pages that are reusable at once (left over from a
/// transaction that loaded more free pages than it used). Keys of format version 3 and earlier
/// have no birth (16 bytes): their pages count as born at transaction 0.
enum FreelistKey {
    static func encode(freedBy: UInt64, earliestBirth: UInt64, sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(24)
        withUnsafeBytes(of: freedBy.bigEndian) { key.append(contentsOf: $0) }
        withUnsafeBytes(of: earliestBirth.bigEndian) { key.append(contentsOf: $0) }
        withUnsafeBytes(of: sequence.bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    static func decode(_ key: [UInt8]) -> (freedBy: UInt64, earliestBirth: UInt64)? {
        guard key.count == 16 || key.count == 24 else { return nil }
        return key.withUnsafeBytes { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             key.count == 24 ? UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) : 0)
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

/// Every freelist entry up to `lastPinned` in key order, except those of freeing id 0, holds pages
/// that a snapshot of one of the ranges `pinnedBy` reaches (or was taken since).
struct FreelistHint: Sendable {
    var lastPinned: [UInt8]
    var pinnedBy: [ClosedRange<UInt64>]
}

extension Database {
    /// The pinned run of freelist entries the last writer found, when every snapshot that pinned
    /// it is still protected under `reuse`. Called holding the writer lock.
    func freelistHint(under reuse: PageReuse) -> FreelistHint? {
        state.withLock { state in
            guard let hint = state.freelistHint, hint.pinnedBy.allSatisfy(reuse.protects) else {
                state.freelistHint = nil
                return nil
            }
            return hint
        }
    }

    /// Keeps the pinned run a transaction found, once it committed: an aborted one may have
    /// taken reusable entries inside the run, which its abort puts back.
    func noteFreelistHint(_ hint: FreelistHint) {
        state.withLock { $0.freelistHint = hint }
    }
}

extension WriteTransaction {
    /// Pages per freelist entry: values stay inline (no overflow pages inside the freelist).
    var freelistChunkPages: Int { Limits.inlineValueLimit(pageSize: pageSize) / 4 }

    /// Moves the oldest reusable freelist entry into `reusable`: the first in key order whose
    /// pages no protected snapshot reaches.
    ///
    /// Entries found pinned are not examined again: by this transaction (`pinnedFreelist`), nor
    /// by the next ones while the snapshots that pinned them stay protected (the database's
    /// `freelistHint`). New entries go after them (their freeing id is higher) or to the front
    /// (id 0, reusable at once), which is why the first entry is always looked at.
    /// - Complexity: O(log n) page visits, plus one entry for each pinned entry met for the first time.
    func loadFreelistEntry() throws {
        if !inlineFreeChecked {
            inlineFreeChecked = true
            if try takeReusableInlineFree() { return }
        }
        guard freelistBox.info.root != 0 else { return }
        loadingFreelist = true
        defer { loadingFreelist = false }
        if pinnedFreelist == nil, let hint = database.freelistHint(under: plan.reuse) { pinnedFreelist = hint }
        let cursor = Cursor(transaction: self, box: freelistBox)
        var positioned = try cursor.first()
        if positioned, let known = pinnedFreelist?.lastPinned, let key = cursor.key, compareBytes(key, known) <= 0 {
            if try takeIfReusable(cursor) { return }
            positioned = try cursor.seek(known)
            if positioned, cursor.key == known { positioned = try cursor.next() }
        }
        while positioned {
            if try takeIfReusable(cursor) { return }
            positioned = try cursor.next()
        }
    }

    /// Takes the cursor's entry when no protected snapshot reaches its pages; otherwise records
    /// it as pinned.
    private func takeIfReusable(_ cursor: Cursor) throws -> Bool {
        guard let key = cursor.key else { return false }
        guard let (freedBy, birth) = FreelistKey.decode(key) else {
            throw ArborError.corruptPage(page: freelistBox.info.root, detail: "freelist key of \(key.count) bytes")
        }
        guard let pinning = plan.reuse.pinningRange(freedBy: freedBy, bornNoEarlierThan: birth) else {
            try takeFreelistEntry(cursor, key: key)
            return true
        }
        if let known = pinnedFreelist?.lastPinned, compareBytes(key, known) <= 0 { return false }
        var pinned = pinnedFreelist ?? FreelistHint(lastPinned: key, pinnedBy: [])
        pinned.lastPinned = key
        if !pinned.pinnedBy.contains(pinning) { pinned.pinnedBy.append(pinning) }
        pinnedFreelist = pinned
        return false
    }

    /// Moves the reusable pages the meta page lists itself into `reusable`; true if there were any.
    private func takeReusableInlineFree() throws -> Bool {
        var kept: [InlineFreePage] = []
        var taken: [PageID] = []
        for free in inlineFree {
            if plan.reuse.allowsReuse(freedBy: free.freedBy, bornNoEarlierThan: free.birth) {
                taken.append(free.page)
            } else {
                kept.append(free)
            }
        }
        guard !taken.isEmpty else { return false }
        inlineFree = kept
        reusable.append(contentsOf: taken.sorted(by: >))
        freePages -= min(freePages, UInt64(taken.count))
        return true
    }

    private func takeFreelistEntry(_ cursor: Cursor, key: [UInt8]) throws {
        let pages = try FreelistKey.decodePages(try cursor.value(), page: freelistBox.info.root)
        for page in pages where page < 2 || page >= meta.pageCount {
            throw ArborError.pageOutOfRange(page: page, pageCount: meta.pageCount, referencedFrom: "the freelist")
        }
        // Reversed so that popLast hands out ascending page numbers (sequential writes).
        reusable.append(contentsOf: pages.sorted(by: >))
        freePages -= min(freePages, UInt64(pages.count))
        _ = try BTree(self, freelistBox).remove(key)
    }

    /// Records this transaction's freed pages and its unused reusable pages in the freelist tree.
    ///
    /// Writing the freelist itself copies and frees freelist pages and allocates new ones, so the
    /// entries are rewritten until the sets they describe stop changing. After three rounds new
    /// pages come only from the end of the file, which makes the sets grow monotonically and
    /// guarantees the fixed point.
    func writeFreelist() throws {
        // A small commit's frees, with the snapshot's listed pages not taken, fit in the meta page.
        let capacity = Meta.maxInlineFree(pageSize: pageSize)
        if inlineFree.count + pendingFree.count + reusable.count <= capacity {
            inlineFree += pendingFree.map { InlineFreePage(page: $0.page, freedBy: txid, birth: $0.birth) }
            inlineFree += reusable.map { InlineFreePage(page: $0, freedBy: 0, birth: 0) }
            freePages += UInt64(pendingFree.count + reusable.count)
            return
        }
        // Otherwise everything goes to the tree. Pages freed by earlier commits are recorded as
        // freed by this one: later than the truth, so protected no less (and the tree's rule that
        // new entries sort after the existing ones, see `FreelistHint`, holds).
        freePages -= min(freePages, UInt64(inlineFree.count))
        for free in inlineFree {
            if free.freedBy == 0 { reusable.append(free.page) } else { pendingFree.append(FreedPage(page: free.page, birth: free.birth)) }
        }
        inlineFree = []
        var written: Set<[UInt8]> = []
        for round in 0..<64 {
            if round >= 3 { monotoneAllocation = true }
            let own = pendingFree.sorted()
            let leftover = reusable.sorted()
            var keys: Set<[UInt8]> = []
            // One run of entries per segment of births: pages a protected snapshot reaches do
            // not share an entry with pages it does not.
            var start = 0
            while start < own.count {
                let segment = plan.reuse.segment(ofBirth: own[start].birth)
                var end = start + 1
                while end < own.count, plan.reuse.segment(ofBirth: own[end].birth) == segment { end += 1 }
                try writeChunks(own[start..<end].map(\.page), earliestBirth: own[start].birth, freedBy: txid,
                                sequenceBase: UInt64(keys.count), into: &keys)
                start = end
            }
            try writeChunks(leftover, earliestBirth: 0, freedBy: 0, sequenceBase: txid << 20, into: &keys)
            for stale in written.subtracting(keys) { _ = try BTree(self, freelistBox).remove(stale) }
            written = keys
            if pendingFree.sorted() == own && reusable.sorted() == leftover {
                freePages += UInt64(own.count + leftover.count)
                return
            }
        }
        throw ArborError.internalInconsistency("the freelist did not reach a fixed point")
    }

    /// Writes `pages` as entries of at most `freelistChunkPages` pages keyed with `earliestBirth`,
    /// numbered from `sequenceBase`; adds their keys to `keys`.
    private func writeChunks(_ pages: [PageID], earliestBirth: UInt64, freedBy: UInt64, sequenceBase: UInt64,
                             into keys: inout Set<[UInt8]>) throws {
        var sequence = sequenceBase
        for start in stride(from: 0, to: pages.count, by: freelistChunkPages) {
            let end = min(start + freelistChunkPages, pages.count)
            let key = FreelistKey.encode(freedBy: freedBy, earliestBirth: earliestBirth, sequence: sequence)
            _ = try BTree(self, freelistBox).insert(key, .inline(FreelistKey.encodePages(pages[start..<end].sorted())))
            keys.insert(key)
            sequence += 1
        }
    }
}
