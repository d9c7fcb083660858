#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Tracks which snapshots open readers use, so the writer never reuses a page they can reach,
/// and serializes writers. In-process bookkeeping always; across processes through a lock file.
final class ReaderRegistry: Sendable {
    private struct State {
        /// Active readers of this process per snapshot transaction id.
        var readers = SnapshotReaders()
        /// The oldest and newest snapshots published in this process's lock-file slot (0 = none).
        var published: UInt64 = 0
        var publishedNewest: UInt64 = 0
        /// This process holds the lock file's writer lock (possibly kept between two writers of
        /// this process, see `unlockWriter(keepingFileLock:)`).
        var holdsFileLock = false
    }

    private let state = Locked(State())
    private let writerGate = DispatchSemaphore(value: 1)
    /// The thread holding the writer lock (0: none), so `Database.sync()` called from inside a
    /// write transaction does not wait for its own lock.
    private let writerThread = Atomic<UInt>(0)
    let lockFile: LockFile?

    init(lockFile: LockFile?) {
        self.lockFile = lockFile
    }

    /// Registers a reader of snapshot `txid`. Afterwards the writer will not reuse pages that
    /// snapshot reaches until `unregister` is called. The slot is widened before the caller
    /// re-checks the committed id (see `Database.beginRead`).
    func register(_ txid: UInt64) {
        state.withLock { state in
            state.readers.add(txid)
            guard let lockFile else { return }
            // Newest first: a writer that sees the oldest set must see a newest that covers it.
            if txid > state.publishedNewest {
                lockFile.publishNewestSnapshot(txid)
                state.publishedNewest = txid
            }
            if state.published == 0 || txid < state.published {
                lockFile.publishSlot(txid)
                state.published = txid
            }
        }
    }

    func unregister(_ txid: UInt64) {
        state.withLock { state in
            // Not a registered snapshot, or a reader of it remains: the slot is unchanged.
            guard state.readers.remove(txid) == true else { return }
            // The slot spans the oldest and newest snapshots in use: only their last readers move it.
            guard let lockFile, txid == state.published || txid == state.publishedNewest else { return }
            let oldest = state.readers.oldest ?? 0
            let newest = state.readers.newest ?? 0
            // Narrowed oldest first, newest last: a writer never sees a slot narrower than the
            // snapshots still in use.
            if oldest != state.published {
                lockFile.publishSlot(oldest)
                state.published = oldest
            }
            if newest != state.publishedNewest {
                lockFile.publishNewestSnapshot(newest)
                state.publishedNewest = newest
            }
        }
    }

    /// The oldest snapshot any reader (this process or another) is using, or nil when none.
    func oldestSnapshot() throws -> UInt64? {
        try readerSnapshots().map(\.lowerBound).min()
    }

    /// Every snapshot open readers use: this process's exactly, another process's (or another
    /// handle's) as the range between its oldest and newest.
    /// - Complexity: O(local snapshots + slots); no system call when no other slot is in use,
    ///   one per slot in use otherwise (its liveness lock is tested).
    func readerSnapshots() throws -> [ClosedRange<UInt64>] {
        var snapshots = state.withLock { $0.readers.snapshots.map { $0...$0 } }
        if let lockFile { snapshots += try lockFile.foreignSnapshots() }
        return snapshots
    }

    func lockWriter() throws {
        writerGate.wait()
        do { _ = try lockFileWriterIfNeeded(wait: true) } catch {
            writerGate.signal()
            throw error
        }
        writerThread.store(Self.currentThread, ordering: .relaxed)
    }

    /// Takes the writer lock, waiting at most `timeout` for the writer of another thread or
    /// process to release it; false when it did not. Another process's lock is tried again
    /// and again (`BusyWait`): `fcntl` cannot wait with a deadline.
    func lockWriter(timeout: Duration) throws -> Bool {
        let timeout = max(timeout, .zero)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        guard writerGate.wait(timeout: .now() + Self.dispatchInterval(timeout)) == .success else { return false }
        do {
            guard try BusyWait.retry(for: clock.now.duration(to: deadline), { try lockFileWriterIfNeeded(wait: false) }) else {
                writerGate.signal()
                return false
            }
        } catch {
            writerGate.signal()
            throw error
        }
        writerThread.store(Self.currentThread, ordering: .relaxed)
        return true
    }

    /// `duration` (not negative) for `DispatchSemaphore.wait(timeout:)`.
    private static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue < Int64(Int.max) - 1_000_000_000 else { return .never }
        return .nanoseconds(Int(nanoseconds.partialValue + attoseconds / 1_000_000_000))
    }

    /// Takes the writer lock only if no writer holds it; returns whether it did.
    func tryLockWriter() -> Bool { (try? lockWriter(timeout: .zero)) == true }

    /// Called holding the gate. False when another process holds the lock and `wait` is false.
    private func lockFileWriterIfNeeded(wait: Bool) throws -> Bool {
        guard let lockFile, !state.withLock({ $0.holdsFileLock }) else { return true }
        if wait { try lockFile.lockWriter() } else if try !lockFile.tryLockWriter() { return false }
        state.withLock { $0.holdsFileLock = true }
        return true
    }

    /// Releases the writer lock. With `keepingFileLock`, another process still cannot take it:
    /// the next writer of this process does, without a system call (group commit keeps it until
    /// the commits that wait for a sync have it).
    func unlockWriter(keepingFileLock: Bool = false) {
        writerThread.store(0, ordering: .relaxed)
        if !keepingFileLock { releaseFileLock() }
        writerGate.signal()
    }

    /// Releases a file lock kept by `unlockWriter(keepingFileLock: true)` when no writer of this
    /// process holds the writer lock (one that does releases it itself).
    func releaseKeptFileLock() {
        guard writerGate.wait(timeout: .now()) == .success else { return }
        releaseFileLock()
        writerGate.signal()
    }

    private func releaseFileLock() {
        guard let lockFile, state.withLock({ $0.holdsFileLock }) else { return }
        lockFile.unlockWriter()
        state.withLock { $0.holdsFileLock = false }
    }

    /// Whether the calling thread holds the writer lock. Only the holder stores its own id, so
    /// a relaxed load sees it exactly when it is the holder.
    var isWriterLockHeldByCurrentThread: Bool {
        writerThread.load(ordering: .relaxed) == Self.currentThread
    }

    private static var currentThread: UInt { Platform.currentThreadID }
}

/// A process's readers per snapshot: a few (snapshot, count) pairs, searched in order. Readers
/// of a process use one or a few snapshots at a time; a dictionary keyed by `UInt64` cost a
/// search of every loaded protocol conformance the first time a process opened a store.
struct SnapshotReaders {
    private var entries: [(txid: UInt64, count: Int)] = []

    /// The snapshots in use, in no particular order.
    var snapshots: [UInt64] { entries.map(\.txid) }
    var oldest: UInt64? { entries.lazy.map(\.txid).min() }
    var newest: UInt64? { entries.lazy.map(\.txid).max() }

    /// Counts one more reader of `txid`. O(snapshots in use).
    mutating func add(_ txid: UInt64) {
        if let index = entries.firstIndex(where: { $0.txid == txid }) {
            entries[index].count += 1
        } else {
            entries.append((txid, 1))
        }
    }

    /// Counts one reader of `txid` less: whether it was the last, nil when `txid` had none.
    /// O(snapshots in use).
    mutating func remove(_ txid: UInt64) -> Bool? {
        guard let index = entries.firstIndex(where: { $0.txid == txid }) else { return nil }
        if entries[index].count > 1 {
            entries[index].count -= 1
            return false
        }
        entries.swapAt(index, entries.count - 1)
        entries.removeLast()
        return true
    }
}
