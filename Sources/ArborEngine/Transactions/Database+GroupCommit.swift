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
/// file's writer lock between its writers: no meta page changes during a sync. A commit that
/// completes during a sync therefore defers its meta page to that sync's runner, which writes the
/// newest deferred one when the sync returns and syncs again (`syncWaitingCommits`).
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

    /// Writes `meta` to its meta page and, when `sync` is true, syncs, with no group commit sync
    /// running meanwhile; returns it as written (slot and checksum). `plannedDurable` is the
    /// durable commit its plan protected, in the other meta page: when a group commit sync made
    /// a newer commit durable since, in the meta page the commit was planned to overwrite, the
    /// other one is written instead. The newest durable meta page is never overwritten.
    func writeMetaPage(_ meta: Meta, plannedDurable: UInt64, sync: Bool) throws -> Meta {
        try metaWrites.withLock { newest in
            var meta = meta
            if let durable = state.withLock({ $0.durable }), durable.txid > plannedDurable, durable.slot == meta.slot {
                meta.slot ^= 1
            }
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

    /// Leaves the meta page of `.full` commit `meta` to the group sync running now, if one is:
    /// that sync's runner writes the newest such meta page once the sync returns, then syncs it
    /// (see `syncWaitingCommits`). Records the commit as `finishCommit` does an unsynced one, in
    /// the same lock as the deferral, so the runner never sees one without the other.
    /// Returns false when no sync runs (the caller writes the meta page itself).
    func deferMetaPage(_ meta: Meta, plannedDurable: UInt64) -> Bool {
        state.withLock { state in
            guard state.syncInFlight, !state.poisoned else { return false }
            state.deferredMeta = (meta, plannedDurable)
            state.unwrittenMeta = meta.txid
            _ = state.recordCommit(meta, durable: nil, durability: options.durability)  // not published: unsynced
            return true
        }
    }

    /// `meta` as its meta page holds it (slot and checksum), once on stable storage when that
    /// page was left to a group sync's runner: waits for that runner's sync. Called holding the
    /// writer lock, so no later commit replaces `meta` meanwhile.
    func writtenMeta(_ meta: Meta) throws -> Meta {
        if state.withLock({ $0.isUnwritten(meta.txid) }) { try awaitDurable(meta.txid) }
        return state.withLock { $0.asWritten(meta) }
    }

    /// Waits until commit `txid` is durable: leads the sync when nobody is queued to commit
    /// after it and no sync runs, else waits for them (at most `groupWait`, then leads).
    /// - Throws: `needsReopen` when the sync that should cover it failed.
    func awaitDurable(_ txid: UInt64) throws {
        let signal = DispatchSemaphore(value: 0)
        let (registered, leads) = state.withLock { state -> (Bool, Bool) in
            guard !state.poisoned, state.durableTxid < txid else { return (false, false) }
            state.durabilityWaiters.append((txid, signal))
            let queued = state.queuedWriters > 0 && state.groupTxid < state.durableTxid + Self.maxGroupCommits
            return (true, !queued && !state.syncInFlight)
        }
        if registered, leads || signal.wait(timeout: .now() + Self.groupWait) == .timedOut {
            syncWaitingCommits(returningWhenDurable: txid)
            signal.wait()
        }
        let failure = state.withLock { state -> (any Error)? in
            guard state.durableTxid < txid else { return nil }
            return state.groupSyncFailure ?? ArborError.needsReopen
        }
        if let failure { throw failure }
    }

    /// Runs group syncs until no commit waits for one, unless another thread runs them already:
    /// syncs the newest meta page this process wrote (with every page before it), wakes the
    /// commits it covers, then writes the newest meta page deferred meanwhile and syncs again.
    /// Commits arriving during a sync thus all share the next one. Once commit
    /// `returningWhenDurable` is durable, the caller returns and a background thread carries on,
    /// so no commit waits for syncs that cover only later ones. A failed write or sync poisons
    /// the database (and wakes every waiting commit).
    func syncWaitingCommits(returningWhenDurable txid: UInt64? = nil) {
        let runs = state.withLock { state -> Bool in
            guard !state.syncInFlight else { return false }
            state.syncInFlight = true
            return true
        }
        if runs { runSyncLoop(returningWhenDurable: txid) }
    }

    private func runSyncLoop(returningWhenDurable txid: UInt64?) {
        enum Step { case done, handOff, write(Meta, plannedDurable: UInt64) }
        while true {
            syncNewestMetaPage()
            let step = state.withLock { state -> Step in
                guard !state.poisoned, let deferred = state.deferredMeta else {
                    state.syncInFlight = false
                    state.deferredMeta = nil
                    return .done
                }
                if let txid, state.durableTxid >= txid { return .handOff }  // still in flight
                state.deferredMeta = nil
                return .write(deferred.meta, plannedDurable: deferred.plannedDurable)
            }
            switch step {
            case .done:
                if !state.withLock({ $0.isGroupWaiting }) { registry.releaseKeptFileLock() }
                return
            case .handOff:
                DispatchQueue.global(qos: .userInitiated).async { [self] in runSyncLoop(returningWhenDurable: nil) }
                return
            case .write(let meta, let plannedDurable):
                do {
                    let written = try writeMetaPage(meta, plannedDurable: plannedDurable, sync: false)
                    state.withLock { state in
                        if state.meta.txid == written.txid {
                            state.meta = written
                            state.lastCommit = (written.txid, written.checksum)
                        }
                        if state.unwrittenMeta <= written.txid { state.unwrittenMeta = 0 }
                    }
                } catch {
                    state.withLock {
                        $0.groupSyncFailure = error
                        $0.syncInFlight = false
                    }
                    poison()
                    if !state.withLock({ $0.isGroupWaiting }) { registry.releaseKeptFileLock() }
                    return
                }
            }
        }
    }

    private func syncNewestMetaPage() {
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
    }
}
