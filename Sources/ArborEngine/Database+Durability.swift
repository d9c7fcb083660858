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
    /// Pages freed by transactions up to this id may be reused: no open reader's snapshot and
    /// not the durable state reaches them.
    var reuseLimit: UInt64
    /// The newest commit known durable when the plan was made.
    var durableTxid: UInt64
    /// Pages written by commits after the durable one that the new state may still reach: the
    /// commit lists them again, as they are not yet known to be on disk.
    var carried: [CommitPage]
}

extension Database {
    /// Plans the commit that follows `current`, syncing first when no meta page is known to be
    /// durable (a file just opened, or another process's unsynced commit over a state this
    /// process cannot vouch for). Called with the writer lock held.
    func planCommit(after current: Meta) throws -> CommitPlan {
        let oldest = try registry.oldestSnapshot()
        func plan(durable: Meta, slot: PageID, carried: [CommitPage]) -> CommitPlan {
            CommitPlan(slot: slot, reuseLimit: min(oldest ?? durable.txid, durable.txid), durableTxid: durable.txid, carried: carried)
        }
        if isKnownDurable(current) { return plan(durable: current, slot: current.slot ^ 1, carried: []) }
        if let other = try Meta.readCandidates(from: file, path: path).metas.first(where: { $0.slot != current.slot }),
           other.txid < current.txid, isKnownDurable(other) {
            // The current state is not known durable: overwrite its meta page, list its pages again.
            return plan(durable: other, slot: current.slot, carried: current.commitPages)
        }
        try file.sync()
        noteDurable(current)
        return plan(durable: current, slot: current.slot ^ 1, carried: [])
    }

    /// Whether `meta` (as read from its meta page) is a commit known to be on stable storage,
    /// by this process or by another one through the lock file.
    func isKnownDurable(_ meta: Meta) -> Bool {
        if let durable = state.withLock({ $0.durable }), durable == (meta.txid, meta.checksum) { return true }
        guard let published = registry.lockFile?.durableCommit() else { return false }
        return published.txid == meta.txid && published.checksum == meta.checksum
    }

    /// Records that `meta` and every commit before it are on stable storage (a sync that began
    /// after its meta page was written has returned), here and in the lock file.
    func noteDurable(_ meta: Meta) {
        state.withLock { state in
            if (state.durable?.txid ?? 0) <= meta.txid { state.durable = (meta.txid, meta.checksum) }
            if state.meta.txid == meta.txid { state.hasUnsyncedCommit = false }
        }
        // Not only upwards: a file renamed into place may have a lower id. An older record
        // than the newest durable commit is still true, and costs at most one sync.
        registry.lockFile?.publishDurableCommit(meta.txid, checksum: meta.checksum)
    }
}
