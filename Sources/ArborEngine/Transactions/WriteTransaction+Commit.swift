extension WriteTransaction {
    /// Whether this transaction changed anything.
    public var hasChanges: Bool {
        !dirty.isEmpty || !writtenEarly.isEmpty || !pendingFree.isEmpty || openTrees.values.contains { $0.isDirty }
    }

    /// Makes every change durable and visible to new readers, atomically.
    ///
    /// Protocol: write all new pages; write the meta page the plan names (never the one holding
    /// the newest durable state) with id one higher, listing the pages written since that state
    /// with their checksums; `fdatasync` once. On open, a meta page whose listed pages do not all
    /// hold what it lists is passed over, so a crash before the sync completes leaves the
    /// previous state or the new one. A commit of more pages than a meta page lists, and every
    /// commit with `.deferredMetaSync`, syncs its pages before the meta page and lists none;
    /// `.deferredMetaSync` then leaves the meta page to the next sync. `.normal` skips the last
    /// sync until its schedule asks for one: the state written stays verifiable by its list.
    /// - Throws: any I/O error (the previous state stays current); `needsReopen` if the failure
    ///   happened after the meta page write began. The writer lock is released in all cases.
    public func commit() throws {
        // A group commit leaves its sync to the writers queued behind it and waits for it
        // after releasing the writer lock (see `Database+GroupCommit.swift`).
        if let awaited = try commitReleasingWriter() { try database.awaitDurable(awaited) }
    }

    /// Commits and releases the writer lock; returns the transaction id to wait for when the
    /// sync was left to a queued writer.
    private func commitReleasingWriter() throws -> UInt64? {
        try ensureOpen()
        defer { if !isClosed { release() } }
        guard !failed else { throw ArborError.internalInconsistency("an earlier operation of this transaction failed; abort it") }
        guard hasChanges || !reusable.isEmpty else { return nil }
        committing = true

        for box in openTrees.values where box.isDirty && !box.isDropped {
            _ = try BTree(self, catalogBox).insert(Array(box.name.utf8), .inline(box.info.encoded()))
        }
        try writeFreelist()

        // Pages allocated at the end and freed again are never written: the file may end before
        // `pageCount`, and opening accepts that when the missing pages are free (`Meta`).
        let (written, uncached) = try writeDirtyNodes()

        let durability = database.options.durability
        var listed = try commitPageList()
        var durable: Meta?
        if listed == nil || durability == .deferredMetaSync {
            // The snapshot's meta page as written (a group sync's runner may still owe it).
            let base = try database.writtenMeta(meta)
            try database.file.sync()
            // Every earlier commit is on disk now too: keep the snapshot's meta page.
            durable = base
            plan.slot = base.slot ^ 1
            plan.durableTxid = base.txid
            listed = []
        }
        // The shared cache gets the new pages before the meta page is written or left to a group
        // sync, either of which lets readers take the new state. No reader reaches these page
        // numbers before then: each is new, or a free page no protected snapshot reaches.
        for id in writtenEarly { database.cache.remove(id) }
        for id in uncached { database.cache.remove(id) }
        for page in written { database.cache.insert(page) }
        var newMeta = Meta(
            txid: txid, pageSize: pageSize, flags: meta.flags, pageCount: pageCount,
            catalog: catalogBox.info, freelist: freelistBox.info, freePages: freePages,
            commitPages: listed ?? [], inlineFree: inlineFree, slot: plan.slot)
        let syncsMeta = switch durability {
        case .full: false  // synced with its group, after the writer lock is released
        case .deferredMetaSync: false
        case .normal(let schedule): database.unsyncedCommits(after: durable) + 1 >= schedule.commits
        }
        // A `.full` commit arriving during a group sync leaves its meta page to that sync's
        // runner, who writes the newest such one once the sync returns and syncs it.
        let deferred = durability == .full && durable == nil && database.deferMetaPage(newMeta, plannedDurable: plan.durableTxid)
        if !deferred {
            do {
                newMeta = try database.writeMetaPage(newMeta, plannedDurable: plan.durableTxid, sync: syncsMeta)
                if syncsMeta { durable = newMeta }
            } catch {
                database.poison()
                throw error
            }
        }
        if !deferred { database.finishCommit(newMeta, durable: durable) }
        if let pinnedFreelist { database.noteFreelistHint(pinnedFreelist) }
        guard durability == .full, durable?.txid != newMeta.txid else { return nil }
        database.joinGroup(newMeta.txid)
        leadsGroupSync = true
        return newMeta.txid
    }

    /// The pages the new meta page lists: those of earlier commits not known durable that the
    /// new state still reaches, and every page this commit wrote, in page order; nil when they
    /// are more than a meta page holds.
    func commitPageList() throws -> [CommitPage]? {
        let limit = Meta.maxCommitPages(pageSize: pageSize)
        guard plan.carried.count + committedNodes.count + writtenEarly.count <= limit else { return nil }
        var own: [CommitPage] = []
        own.reserveCapacity(committedNodes.count + writtenEarly.count)
        for id in committedNodes + Array(writtenEarly) {
            guard let checksum = writtenChecksums[id] else {
                throw ArborError.internalInconsistency("page \(id) was written without a checksum")
            }
            own.append(CommitPage(page: id, checksum: checksum))
        }
        own.sort { $0.page < $1.page }
        guard !plan.carried.isEmpty else { return own }
        // The carried list is in page order (as its meta page lists it): merge, leaving out the
        // pages this commit freed and those it wrote again.
        let freed = pendingFree.map(\.page).sorted()
        let carriedList = zip(plan.carried, plan.carried.dropFirst()).allSatisfy { $0.page < $1.page }
            ? plan.carried : plan.carried.sorted { $0.page < $1.page }  // a damaged list, still merged right
        var list: [CommitPage] = []
        list.reserveCapacity(carriedList.count + own.count)
        var next = 0, nextFreed = 0
        for carried in carriedList {
            while nextFreed < freed.count, freed[nextFreed] < carried.page { nextFreed += 1 }
            if nextFreed < freed.count, freed[nextFreed] == carried.page { continue }
            while next < own.count, own[next].page < carried.page {
                list.append(own[next])
                next += 1
            }
            if next < own.count, own[next].page == carried.page { continue }
            list.append(carried)
        }
        list.append(contentsOf: own[next...])
        return list
    }

    /// Writes every dirty node, in page order, and returns the images the shared cache keeps.
    /// Nodes are released a batch at a time as they are written, so a large commit does not hold
    /// its nodes and their images at once. A small commit's pages are all kept (the next
    /// transactions read them again); a larger one keeps its branches only, since keeping an
    /// import's every leaf would double its memory peak for pages the OS caches anyway. The
    /// numbers of pages written but not kept are returned too: the cache may hold an image of
    /// their previous contents (a reused page), which must go.
    private func writeDirtyNodes() throws -> (kept: [Page], uncached: [PageID]) {
        committedNodes = dirty.keys.sorted()
        let cachePages = database.cache.capacityBytes / pageSize
        let keepsAll = committedNodes.count <= min(Self.smallCommitPages, cachePages)
        var kept: [Page] = [], uncached: [PageID] = []
        var branchesKept = 0
        let batch = 256
        for start in stride(from: 0, to: committedNodes.count, by: batch) {
            let ids = committedNodes[start..<min(start + batch, committedNodes.count)]
            var nodes: [(PageID, Node)] = []
            nodes.reserveCapacity(ids.count)
            for id in ids {
                guard let node = dirty.removeValue(forKey: id) else {
                    throw ArborError.internalInconsistency("dirty page \(id) vanished before the commit wrote it")
                }
                nodes.append((id, node))
            }
            kept += try writeNodes(nodes) { id, node in
                guard keepsAll || (!node.isLeaf && branchesKept < cachePages / 2) else {
                    uncached.append(id)
                    return false
                }
                branchesKept += node.isLeaf ? 0 : 1
                return true
            }
        }
        return (kept, uncached)
    }

    /// The most pages a commit writes for all of them to stay in the cache.
    static let smallCommitPages = 256

    /// Serializes nodes and writes them, coalescing consecutive page numbers into one write.
    /// Returns the images of the nodes `keep` chooses, in order, for the shared cache.
    @discardableResult
    func writeNodes(_ nodes: [(PageID, Node)], keep: (PageID, Node) -> Bool) throws -> [Page] {
        var images: [Page] = []
        guard !nodes.isEmpty else { return images }
        let runLimit = 64
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize * runLimit, alignment: 8)
        defer { buffer.deallocate() }
        var index = 0
        while index < nodes.count {
            var runLength = 1
            while index + runLength < nodes.count, runLength < runLimit,
                  nodes[index + runLength].0 == nodes[index].0 + PageID(runLength) {
                runLength += 1
            }
            for offset in 0..<runLength {
                let (id, node) = nodes[index + offset]
                guard node.byteSize <= pageSize else {
                    throw ArborError.internalInconsistency("page \(id) holds \(node.byteSize) bytes")
                }
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[(offset * pageSize)..<((offset + 1) * pageSize)])
                node.serialize(into: slice, id: id, txid: txid)
                writtenChecksums[id] = UnsafeRawBufferPointer(slice).u32(PageHeader.checksum)
                if keep(id, node) {
                    // Built by this transaction just now: no need to validate what we serialized.
                    images.append(Page.copy(id: id, image: UnsafeRawBufferPointer(slice), separatorsOf: node.unchangedSeparatorsSource))
                }
            }
            try database.file.write(
                UnsafeRawBufferPointer(rebasing: buffer[0..<(runLength * pageSize)]),
                at: UInt64(nodes[index].0) * UInt64(pageSize))
            index += runLength
        }
        return images
    }
}
