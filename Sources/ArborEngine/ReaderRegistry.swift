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
        var readers: [UInt64: Int] = [:]
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
            state.readers[txid, default: 0] += 1
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
            // One hash lookup: the count is changed (or the entry removed) through its index.
            guard let index = state.readers.index(forKey: txid) else { return }
            if state.readers.values[index] > 1 {
                state.readers.values[index] -= 1
                return  // a reader of the snapshot remains: the slot is unchanged
            }
            state.readers.remove(at: index)
            // The slot spans the oldest and newest snapshots in use: only their last readers move it.
            guard let lockFile, txid == state.published || txid == state.publishedNewest else { return }
            let oldest = state.readers.keys.min() ?? 0
            let newest = state.readers.keys.max() ?? 0
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
        var snapshots = state.withLock { $0.readers.keys.map { $0...$0 } }
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

    /// Takes the writer lock only if no writer holds it; returns whether it did.
    func tryLockWriter() -> Bool {
        guard writerGate.wait(timeout: .now()) == .success else { return false }
        guard (try? lockFileWriterIfNeeded(wait: false)) == true else {
            writerGate.signal()
            return false
        }
        writerThread.store(Self.currentThread, ordering: .relaxed)
        return true
    }

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

    private static var currentThread: UInt {
        #if canImport(Glibc)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }
}

/// The lock file beside a store (`<path>-lock`): the cross-process writer lock and reader table.
///
/// Layout: bytes 0–7 magic `ARBORLCK`, 8–15 the last committed transaction id, 16–19 the slot
/// count, 24–31 and 32–39 the newest synced commit (its id and meta page checksum); slot `i` at
/// 64 + 16·i holds (UInt64 oldest snapshot txid or 0, UInt64 newest snapshot txid with bit 63
/// set). A process owns one slot while it has the database open and proves it is alive by
/// holding an open-file-description (OFD) write lock on byte `livenessBase + i`; a slot whose
/// byte is unlocked is stale.
/// Byte 0 is the writer lock, byte 1 guards slot claiming.
///
/// The first page is mapped shared: the committed id and the slots are read and written with
/// sequentially consistent atomic operations on the mapping, so a read transaction costs no
/// system call (a `pread`/`pwrite` pair each cost about as much as a small fetch).
final class LockFile: @unchecked Sendable {
    // The descriptor, mapping and slot are fixed after init; OFD locks and atomics are thread-safe.
    static let slotCount = 252
    static let slotsOffset: UInt64 = 64
    static let livenessBase: Int64 = 1 << 20
    /// Bit 63 of a slot's second word: the word holds the newest snapshot (see `publishNewestSnapshot`).
    static let newestTag: UInt64 = 1 << 63
    static let size = 4096
    private static let writerByte: Int64 = 0
    private static let tableByte: Int64 = 1

    // Linux OFD lock commands (not exported by the Glibc module).
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37
    private static let setLockWait: Int32 = 38

    let path: String
    private let descriptor: Int32
    /// The first `size` bytes of the file, mapped shared with every process that has it open.
    private let mapping: UnsafeMutableRawPointer
    let slot: Int

    /// Opens or creates the lock file and claims a reader slot. Returns nil when the lock file
    /// cannot be written (read-only media); the caller then runs without cross-process readers.
    static func open(path: String) throws -> LockFile? {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 {
            if errno == EROFS || errno == EACCES || errno == EPERM { return nil }
            throw ArborError.io(operation: "open \(path)", errno: errno)
        }
        do {
            return try LockFile(path: path, descriptor: fd)
        } catch {
            close(fd)
            throw error
        }
    }

    private init(path: String, descriptor: Int32) throws {
        self.path = path
        self.descriptor = descriptor
        try Self.lock(descriptor, byte: Self.tableByte, exclusive: true, wait: true)
        defer { Self.unlock(descriptor, byte: Self.tableByte) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ArborError.io(operation: "fstat \(path)", errno: errno) }
        if info.st_size < Self.size {
            var header = [UInt8](repeating: 0, count: Self.size)
            for (index, byte) in "ARBORLCK".utf8.enumerated() { header[index] = byte }
            header.withUnsafeMutableBytes { $0.putU32(UInt32(Self.slotCount), at: 16) }
            try Self.write(descriptor, header, at: 0)
        }
        guard let mapped = mmap(nil, Self.size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED else {
            throw ArborError.io(operation: "map \(path)", errno: errno)
        }
        mapping = mapped
        // Until a slot is claimed the object is not whole, so no deinit unmaps: do it here.
        var claimed: Int?
        do {
            for index in 0..<Self.slotCount {
                if try !Self.isLocked(descriptor, byte: Self.livenessBase + Int64(index)),
                   (try? Self.lock(descriptor, byte: Self.livenessBase + Int64(index), exclusive: true, wait: false)) != nil {
                    claimed = index
                    break
                }
            }
        } catch {
            munmap(mapped, Self.size)
            throw error
        }
        guard let claimed else {
            munmap(mapped, Self.size)
            throw ArborError.readerTableFull(slots: Self.slotCount)
        }
        slot = claimed
        store(0, at: Self.slotOffset(claimed))
        store(Self.newestTag, at: Self.slotOffset(claimed) + 8)
    }

    deinit {
        store(0, at: Self.slotOffset(slot))
        store(0, at: Self.slotOffset(slot) + 8)
        munmap(mapping, Self.size)
        close(descriptor)  // releases every OFD lock held through this descriptor
    }

    private static func slotOffset(_ index: Int) -> Int { Int(slotsOffset) + 16 * index }

    // Little-endian in the file, like every other integer Arbor stores. Sequentially consistent:
    // a reader stores its slot then loads the committed id, a writer stores the committed id
    // then (in its next transaction) loads the slots; neither pair may be reordered.
    private func load(at offset: Int) -> UInt64 {
        UInt64(littleEndian: (mapping + offset).assumingMemoryBound(to: Atomic<UInt64>.self).pointee.load(ordering: .sequentiallyConsistent))
    }

    private func store(_ value: UInt64, at offset: Int) {
        (mapping + offset).assumingMemoryBound(to: Atomic<UInt64>.self).pointee.store(value.littleEndian, ordering: .sequentiallyConsistent)
    }

    /// Publishes `txid` (0: none) as the oldest snapshot this process reads. No system call.
    func publishSlot(_ txid: UInt64) {
        store(txid, at: Self.slotOffset(slot))
    }

    /// Publishes `txid` as the newest snapshot this process reads, tagged so that a slot written
    /// by an earlier version (which stored its process id there) reads as unbounded.
    func publishNewestSnapshot(_ txid: UInt64) {
        store(txid | Self.newestTag, at: Self.slotOffset(slot) + 8)
    }

    /// The snapshots other live processes (or other handles of this one) publish: each slot's
    /// oldest through its newest.
    func foreignSnapshots() throws -> [ClosedRange<UInt64>] {
        var snapshots: [ClosedRange<UInt64>] = []
        for index in 0..<Self.slotCount where index != slot {
            let oldest = load(at: Self.slotOffset(index))
            guard oldest != 0, try Self.isLocked(descriptor, byte: Self.livenessBase + Int64(index)) else { continue }
            let tagged = load(at: Self.slotOffset(index) + 8)
            let newest = tagged & Self.newestTag != 0 ? tagged & ~Self.newestTag : UInt64.max
            snapshots.append(oldest...max(oldest, newest))
        }
        return snapshots
    }

    /// The last committed transaction id published by a writer. No system call.
    func publishedCommit() -> UInt64 {
        load(at: 8)
    }

    func publishCommit(_ txid: UInt64) {
        store(txid, at: 8)
    }

    /// The newest commit a process synced, as (transaction id, meta page checksum); (0, 0) when
    /// none was published. No system call.
    func durableCommit() -> (txid: UInt64, checksum: UInt32) {
        (load(at: 24), UInt32(truncatingIfNeeded: load(at: 32)))
    }

    /// Records that the commit `txid` whose meta page has `checksum` is on stable storage.
    /// Written after the sync: a reader that sees a mix of an old and a new record finds no
    /// meta page matching it, which only costs it a sync of its own.
    func publishDurableCommit(_ txid: UInt64, checksum: UInt32) {
        store(UInt64(checksum), at: 32)
        store(txid, at: 24)
    }

    func lockWriter() throws { try Self.lock(descriptor, byte: Self.writerByte, exclusive: true, wait: true) }
    /// False when another process holds the writer lock.
    func tryLockWriter() throws -> Bool {
        do { try Self.lock(descriptor, byte: Self.writerByte, exclusive: true, wait: false) } catch ArborError.io(_, let code) where code == EAGAIN || code == EACCES {
            return false
        }
        return true
    }
    func unlockWriter() { Self.unlock(descriptor, byte: Self.writerByte) }

    // MARK: System calls

    private static func request(_ type: Int32, byte: Int64) -> flock {
        var request = flock()
        request.l_type = Int16(type)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(byte)
        request.l_len = 1
        request.l_pid = 0
        return request
    }

    private static func lock(_ fd: Int32, byte: Int64, exclusive: Bool, wait: Bool) throws {
        var request = request(exclusive ? F_WRLCK : F_RDLCK, byte: byte)
        while true {
            let result = withUnsafeMutablePointer(to: &request) { fcntl(fd, wait ? setLockWait : setLock, $0) }
            if result == 0 { return }
            if errno == EINTR { continue }
            throw ArborError.io(operation: "lock byte \(byte) of the lock file", errno: errno)
        }
    }

    private static func unlock(_ fd: Int32, byte: Int64) {
        var request = request(F_UNLCK, byte: byte)
        _ = withUnsafeMutablePointer(to: &request) { fcntl(fd, setLock, $0) }
    }

    private static func isLocked(_ fd: Int32, byte: Int64) throws -> Bool {
        var request = request(F_WRLCK, byte: byte)
        guard withUnsafeMutablePointer(to: &request, { fcntl(fd, getLock, $0) }) == 0 else {
            throw ArborError.io(operation: "test lock byte \(byte)", errno: errno)
        }
        return request.l_type != Int16(F_UNLCK)
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8], at offset: UInt64) throws {
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else { throw ArborError.io(operation: "write lock file", errno: errno) }
    }
}
