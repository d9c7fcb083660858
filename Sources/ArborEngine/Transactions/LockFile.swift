import Synchronization

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
    static let writerByte: Int64 = 0
    private static let tableByte: Int64 = 1

    let path: String
    private let descriptor: Int32
    /// The first `size` bytes of the file, mapped shared with every process that has it open.
    private let mapping: UnsafeMutableRawPointer
    let slot: Int

    /// Opens or creates the lock file and claims a reader slot. Returns nil when the lock file
    /// cannot be written (read-only media); the caller then runs without cross-process readers.
    static func open(path: String) throws -> LockFile? {
        while true {
            guard let fd = try Platform.openLockFile(path) else { return nil }
            let opened: LockFile?
            do {
                try Platform.lock(fd, byte: Self.tableByte, exclusive: true, wait: true)
                // Removed before we locked it (see `removeIfUnused`): it coordinates no one, so
                // the one at the path now is opened instead.
                let current = try Platform.identity(at: path) == Platform.identity(of: fd, path: path)
                opened = current ? try LockFile(path: path, descriptor: fd) : nil
                Platform.unlock(fd, byte: Self.tableByte)
            } catch {
                Platform.close(fd)  // releases the table byte too
                throw error
            }
            if let opened { return opened }
            Platform.close(fd)
        }
    }

    /// Removes the lock file at `path`, opened as `descriptor`, unless a process has the store
    /// open (a live slot). Slots are claimed holding the table byte, and `open` checks, holding
    /// it, that the file it opened is still at the path: no process can be left on a removed one.
    static func removeIfUnused(path: String, descriptor: Int32) throws {
        try Platform.lock(descriptor, byte: tableByte, exclusive: true, wait: true)
        defer { Platform.unlock(descriptor, byte: tableByte) }
        for index in 0..<slotCount where try Platform.isLocked(descriptor, byte: livenessBase + Int64(index)) { return }
        Platform.unlink(path)
    }

    /// Called holding the table byte.
    private init(path: String, descriptor: Int32) throws {
        self.path = path
        self.descriptor = descriptor
        if try Platform.size(of: descriptor, path: path) < Self.size {
            var header = [UInt8](repeating: 0, count: Self.size)
            for (index, byte) in "ARBORLCK".utf8.enumerated() { header[index] = byte }
            header.withUnsafeMutableBytes { $0.putU32(UInt32(Self.slotCount), at: 16) }
            try Platform.write(descriptor, header, at: 0, path: path)
        }
        let mapped = try Platform.mapShared(descriptor, size: Self.size, path: path)
        mapping = mapped
        // Until a slot is claimed the object is not whole, so no deinit unmaps: do it here.
        var claimed: Int?
        do {
            for index in 0..<Self.slotCount {
                if try !Platform.isLocked(descriptor, byte: Self.livenessBase + Int64(index)),
                   (try? Platform.lock(descriptor, byte: Self.livenessBase + Int64(index), exclusive: true, wait: false)) != nil {
                    claimed = index
                    break
                }
            }
        } catch {
            Platform.unmap(mapped, size: Self.size)
            throw error
        }
        guard let claimed else {
            Platform.unmap(mapped, size: Self.size)
            throw ArborError.readerTableFull(slots: Self.slotCount)
        }
        slot = claimed
        store(0, at: Self.slotOffset(claimed))
        store(Self.newestTag, at: Self.slotOffset(claimed) + 8)
    }

    deinit {
        store(0, at: Self.slotOffset(slot))
        store(0, at: Self.slotOffset(slot) + 8)
        Platform.unmap(mapping, size: Self.size)
        Platform.close(descriptor)  // releases every lock held through this descriptor
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
            guard oldest != 0, try Platform.isLocked(descriptor, byte: Self.livenessBase + Int64(index)) else { continue }
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

    func lockWriter() throws { try Platform.lock(descriptor, byte: Self.writerByte, exclusive: true, wait: true) }
    /// False when another process holds the writer lock.
    func tryLockWriter() throws -> Bool {
        try Platform.tryLock(descriptor, byte: Self.writerByte)
    }
    func unlockWriter() { Platform.unlock(descriptor, byte: Self.writerByte) }
}
