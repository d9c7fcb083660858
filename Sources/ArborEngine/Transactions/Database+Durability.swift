import Dispatch

extension Database {
    /// When a commit reaches stable storage. Every mode keeps every commit atomic: after a crash
    /// or power loss the file opens at a committed state, never a torn one.
    public enum Durability: Sendable, Equatable {
        /// One `fdatasync` per commit, after its pages and meta page are written; a commit is
        /// durable when `commit()` returns (like SQLite's `synchronous=FULL` in WAL mode).
        /// A commit of more than 256 pages syncs its pages before its meta page (two syncs).
        /// Threads of one process that commit at once share one sync (group commit); a commit
        /// becomes visible to new readers when its sync returns.
        case full
        /// No sync per commit, like SQLite's `synchronous=NORMAL` in WAL mode: a commit survives
        /// a crash of the process as soon as `commit()` returns, and a power loss once the next
        /// sync has run — after the schedule's number of commits or interval, when a commit's
        /// pages outgrow what a meta page lists, on `sync()`, and when the database is released.
        case normal(SyncSchedule)
        /// One `fdatasync` per commit, before its meta page is written: the meta page reaches
        /// the disk with the next commit's sync (or `sync()`, or closing the database), so a
        /// power loss may undo the last commit. Like LMDB's `MDB_NOMETASYNC`.
        case deferredMetaSync

        /// `.normal` with the default schedule: a sync every 1,000 commits or one second after
        /// the first commit it has not covered.
        public static var normal: Durability { .normal(SyncSchedule()) }

        var syncInterval: Duration? {
            if case .normal(let schedule) = self { return schedule.interval }
            return nil
        }
    }

    /// When a `.normal` database syncs: whichever comes first.
    public struct SyncSchedule: Sendable, Equatable {
        /// Sync in the commit that makes this many commits not yet known durable (at least 1).
        public var commits: Int
        /// Sync this long after the first commit not yet known durable; nil: only by count,
        /// `sync()` and release.
        public var interval: Duration?

        public init(commits: Int = 1000, interval: Duration? = .seconds(1)) {
            self.commits = max(1, commits)
            self.interval = interval
        }
    }

    /// Makes every commit so far durable, by this process or another. Waits for a writer at work
    /// (a meta page being rewritten cannot be declared durable), except when called from inside
    /// a write transaction on its own thread.
    /// - Throws: an I/O error, after which the database needs reopening (`needsReopen`): a
    ///   failed `fdatasync` may have dropped unsynced writes.
    /// - Complexity: one `fdatasync`.
    public func sync() throws {
        guard !isReadOnly else { return }
        if registry.isWriterLockHeldByCurrentThread { return try syncHoldingWriterLock() }
        try registry.lockWriter()
        defer { releaseWriter() }
        try syncHoldingWriterLock()
    }

    private func syncHoldingWriterLock() throws {
        // After a failed meta page write, the newest commit may be torn: nothing to vouch for.
        if state.withLock({ $0.poisoned }) { throw ArborError.needsReopen }
        // A commit whose meta page waits for a running group sync: that sync's runner covers it.
        let unwritten = state.withLock { $0.unwrittenMeta }
        if unwritten != 0 { return try awaitDurable(unwritten) }
        // The newest commit on disk, this process's or another's: the sync covers it.
        let meta = try refreshMetaForWriter()
        do {
            try file.sync()
        } catch {
            poison()
            throw error
        }
        noteDurable(meta)
    }

    /// Queues the timed sync of `.normal` durability (at most one queued at a time).
    func scheduleSync() {
        guard let interval = options.durability.syncInterval else { return }
        let (seconds, attoseconds) = interval.components
        // At most a day: a longer interval only waits for the count, `sync()` or release.
        let nanoseconds = min(max(0, seconds), 86_400) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [weak self] in
            self?.runScheduledSync()
        }
    }

    private func runScheduledSync() {
        let due = state.withLock { state -> Bool in
            state.syncScheduled = false
            return state.hasUnsyncedCommit && !state.poisoned
        }
        // A failure poisons the database: the next commit reports it.
        if due { try? sync() }
    }
}

/// Which meta page a commit may overwrite and which freed pages it may reuse.
///
/// The rule that keeps every commit atomic with one sync: at all times one meta page holds the
/// newest commit known to be durable, and no writer overwrites that meta page or any page its
/// state reaches until a later commit is durable. A power cut then leaves that state intact,
/// and the other meta page is either older, or newer with every page it lists verified on
/// open (`Meta.readVerified`), or passed over.
struct CommitPlan {
    /// The meta page (0 or 1) the commit writes.
    var slot: PageID
    /// Which freed pages may be reused: those no open reader's snapshot, no snapshot a new
    /// reader may take before the commit, and not the durable state reaches.
    var reuse: PageReuse
    /// The newest commit known durable when the plan was made.
    var durableTxid: UInt64
    /// Pages written by commits after the durable one that the new state may still reach: the
    /// commit lists them again, as they are not yet known to be on disk.
    var carried: [CommitPage]
}

extension Database {
    /// Plans the commit that follows `base`, syncing first when no meta page is known to be
    /// durable (a file just opened, or another process's unsynced commit over a state this
    /// process cannot vouch for). Called with the writer lock held. A group sync's runner may
    /// have written `base`'s deferred meta page since it was read: `base` becomes that state as
    /// written (slot and checksum).
    func planCommit(after base: inout Meta) throws -> CommitPlan {
        func read() -> (current: Meta, unwritten: Bool, durable: (txid: UInt64, checksum: UInt32, slot: PageID)?, readable: UInt64) {
            state.withLock { ($0.asWritten(base), $0.isUnwritten(base.txid), $0.durable, $0.readable.txid) }
        }
        var snapshot = read()
        if snapshot.unwritten, snapshot.durable == nil {
            // No durable commit to plan against: let the runner write and sync it first.
            try awaitDurable(base.txid)
            snapshot = read()
        }
        let current = snapshot.current
        let pendingDurable = snapshot.unwritten ? snapshot.durable : nil
        base = current
        try retireRejectedMeta(current: current)
        // After the readable commit is read: a reader that registers after this sees a readable
        // commit at least as new and retries when it took an older one (`beginRead`).
        let readers = try registry.readerSnapshots()
        // New readers take the readable commit (behind `current` while a group waits for its
        // sync) or the one the lock file publishes, both moving up to `current`.
        let readable = snapshot.readable
        let published = registry.lockFile?.publishedCommit() ?? readable
        let newReaders = min(readable, published, current.txid)...current.txid
        func plan(durable: UInt64, slot: PageID, carried: [CommitPage]) -> CommitPlan {
            CommitPlan(slot: slot, reuse: PageReuse(protecting: readers + [durable...durable, newReaders]),
                       durableTxid: durable, carried: carried)
        }
        // `current`'s meta page waits for a running group sync (it is not on disk yet): plan
        // against the newest durable commit, listing `current`'s pages again.
        if let durable = pendingDurable {
            return plan(durable: durable.txid, slot: durable.slot ^ 1, carried: current.commitPages)
        }
        if isKnownDurable(current) { return plan(durable: current.txid, slot: current.slot ^ 1, carried: []) }
        if let durable = durableMetaBeside(current) {
            return plan(durable: durable.txid, slot: current.slot, carried: current.commitPages)
        }
        if let other = try Meta.readCandidates(from: file, path: path).metas.first(where: { $0.slot != current.slot }),
           other.txid < current.txid, isKnownDurable(other) {
            // The current state is not known durable: overwrite its meta page, list its pages again.
            return plan(durable: other.txid, slot: current.slot, carried: current.commitPages)
        }
        try file.sync()
        noteDurable(current)
        return plan(durable: current.txid, slot: current.slot ^ 1, carried: [])
    }

    /// Overwrites the meta page passed over on open (a commit that did not reach the disk whole)
    /// with a copy of `current`, and syncs, before the first commit of this process. That commit
    /// may reuse pages the passed-over meta page lists; without this, a crash tearing one of
    /// them would make the next open report that older meta page as damaged. Once per open that
    /// passed a meta page over; called holding the writer lock.
    private func retireRejectedMeta(current: Meta) throws {
        guard let rejected = rejectedAtOpen, !state.withLock({ $0.rejectedMetaRetired }) else { return }
        let onDisk = try Meta.readCandidates(from: file, path: path).metas
        if onDisk.contains(where: { ($0.slot, $0.txid, $0.checksum) == (rejected.slot, rejected.txid, rejected.checksum) }),
           rejected.slot != current.slot {
            var copy = current
            copy.slot = rejected.slot
            _ = try writeMetaPage(copy, plannedDurable: current.txid, sync: true)
            noteDurable(current)
        }
        state.withLock { $0.rejectedMetaRetired = true }
    }

    /// The newest commit known durable when `current` is this process's own last commit and that
    /// commit left it in the other meta page: no meta page has been written since, so it is
    /// still there and need not be read.
    private func durableMetaBeside(_ current: Meta) -> (txid: UInt64, checksum: UInt32)? {
        state.withLock { state in
            guard let durable = state.durable, let last = state.lastCommit,
                  last == (current.txid, current.checksum), durable.slot == current.slot ^ 1,
                  durable.txid < current.txid else { return nil }
            return (durable.txid, durable.checksum)
        }
    }

    /// Whether `meta` (as read from its meta page) is a commit known to be on stable storage,
    /// by this process or by another one through the lock file.
    func isKnownDurable(_ meta: Meta) -> Bool {
        if let durable = state.withLock({ $0.durable }), durable.txid == meta.txid, durable.checksum == meta.checksum { return true }
        guard let published = registry.lockFile?.durableCommit() else { return false }
        return published.txid == meta.txid && published.checksum == meta.checksum
    }

    /// Records that `meta` and every commit before it are on stable storage (a sync that began
    /// after its meta page was written has returned), here and in the lock file.
    func noteDurable(_ meta: Meta) {
        let (woken, published) = state.withLock { state -> ([DispatchSemaphore], UInt64?) in
            if state.durableTxid <= meta.txid { state.durable = (meta.txid, meta.checksum, meta.slot) }
            // Group commits now durable become visible (not one whose writer is still finishing).
            var published: UInt64?
            let visible = meta.txid <= state.meta.txid ? meta : state.meta
            if visible.txid > state.readable.txid {
                state.readable = visible
                published = visible.txid
            }
            if state.meta.txid <= meta.txid {
                state.hasUnsyncedCommit = false
                state.unsyncedCommits = 0
            }
            let covered = state.durabilityWaiters.filter { $0.txid <= meta.txid }
            state.durabilityWaiters.removeAll { $0.txid <= meta.txid }
            return (covered.map(\.signal), published)
        }
        if let published { registry.lockFile?.publishCommit(published) }
        for signal in woken { signal.signal() }
        // Not only upwards: a file renamed into place may have a lower id. An older record
        // than the newest durable commit is still true, and costs at most one sync.
        registry.lockFile?.publishDurableCommit(meta.txid, checksum: meta.checksum)
    }
}
