import Dispatch

/// Group commit: `.full` commits of several threads of one process share one sync.
///
/// A `.full` commit writes its meta page without syncing (it overwrites no durable meta page:
/// see `planCommit` and `writeMetaPage`), joins the group of commits waiting for a sync, releases
/// the writer lock and then waits for a sync that covers it. It leads that sync itself when no
/// other thread of this process waits for the writer lock (or the group is full); otherwise it
/// waits for the last of them to lead it. So the next writers build their commits while a sync
/// runs, and every commit that met them shares it. Syncs run under `metaWrites`, the lock every
/// meta page write of the process takes, and while a group waits this process keeps the lock
/// file's writer lock between its writers: no meta page changes during a sync.
///
/// A waiting commit whose group has not synced after `groupWait` leads a sync itself. This bounds
/// its wait when the next writer is slow (or waits for something the waiting thread holds) to
/// `groupWait` plus one sync.
extension Database {
    /// The most commits one sync covers.
    static let maxGroupCommits: UInt64 = 16
    static let groupWait = DispatchTimeInterval.milliseconds(2)

    /// Counts commit `txid` in the group waiting for a sync (called holding the writer lock).
    func joinGroup(_ txid: UInt64) {
        state.withLock { $0.groupTxid = max($0.groupTxid, txid) }
    }

    /// Writes `meta` — the commit that follows `base` — to its meta page and, when `sync` is
    /// true, syncs, with no group commit sync running meanwhile; returns it as written (slot and
    /// checksum). When a group commit sync made `base` durable after the commit was planned to
    /// overwrite `base`'s meta page, writes the other one: the newest durable meta page is never
    /// overwritten.
    func writeMetaPage(_ meta: Meta, over base: Meta, sync: Bool) throws -> Meta {
        try metaWrites.withLock { newest in
            var meta = meta
            if meta.slot == base.slot, isKnownDurable(base) { meta.slot = base.slot ^ 1 }
            let image = meta.image(number: meta.slot)
            meta.checksum = image.withUnsafeBytes { $0.u32(PageHeader.checksum) }
            try image.withUnsafeBytes { try file.write($0, at: UInt64(meta.slot) * UInt64(pageSize)) }
            newest = meta
            if sync { try file.sync() }
            return meta
        }
    }

    /// Releases the writer lock. A group still waiting for its sync keeps the lock file's writer
    /// lock; when no writer of this process is queued to lead that sync and the releasing writer
    /// will not (an abort, a failed commit), it is led now.
    func releaseWriter(leadsGroupSync: Bool = false) {
        let syncsGroup = state.withLock { !leadsGroupSync && $0.isGroupWaiting && $0.queuedWriters == 0 }
        if syncsGroup { syncWaitingCommits() }
        registry.unlockWriter(keepingFileLock: state.withLock { $0.isGroupWaiting })
    }

    /// Waits until commit `txid`, written without a sync, is durable: leads the sync when nobody
    /// is queued to commit after it, else waits for them (at most `groupWait`, then leads).
    /// - Throws: `needsReopen` when the sync that should cover it failed.
    func awaitDurable(_ txid: UInt64) throws {
        let signal = DispatchSemaphore(value: 0)
        let waits = state.withLock { state -> Bool in
            guard !state.poisoned, state.durableTxid < txid else { return false }
            guard state.queuedWriters > 0, state.groupTxid < state.durableTxid + Self.maxGroupCommits else { return false }
            state.durabilityWaiters.append((txid, signal))
            return true
        }
        if !waits {
            syncWaitingCommits()
        } else if signal.wait(timeout: .now() + Self.groupWait) == .timedOut {
            syncWaitingCommits()
            signal.wait()
        }
        let failure = state.withLock { state -> (any Error)? in
            guard state.durableTxid < txid else { return nil }
            return state.groupSyncFailure ?? ArborError.needsReopen
        }
        if let failure { throw failure }
    }

    /// Syncs the newest meta page this process wrote (with every page before it) and wakes the
    /// commits it covers. Called while commits wait (this process keeps the lock file's writer
    /// lock); a failed sync poisons the database (and wakes every waiting commit).
    private func syncWaitingCommits() {
        enum Outcome { case synced(Meta), notNeeded, failed(any Error) }
        let outcome: Outcome = metaWrites.withLock { newest in
            guard let newest, state.withLock({ $0.durableTxid < newest.txid && !$0.poisoned }) else { return .notNeeded }
            do {
                try file.sync()
                return .synced(newest)
            } catch {
                return .failed(error)
            }
        }
        switch outcome {
        case .synced(let meta): noteDurable(meta)
        case .failed(let error):
            state.withLock { $0.groupSyncFailure = error }
            poison()
        case .notNeeded: break
        }
        if !state.withLock({ $0.isGroupWaiting }) { registry.releaseKeptFileLock() }
    }
}
