#if canImport(Glibc)
import Glibc
#endif
import ArborEngine

/// The error a `SimulatedFile` throws when its planned crash point is reached.
public struct SimulatedCrash: Error, Equatable {}

/// How the contents of a crashed `SimulatedFile` are reconstructed.
public enum CrashMode: CaseIterable, Sendable {
    /// Every write since the last sync is lost.
    case loseUnsynced
    /// Unsynced writes reach the disk in order, but the last one is torn at a random byte.
    case tearLastWrite
    /// A random subset of the unsynced writes reaches the disk, in a random order.
    case reorderUnsynced
}

/// An in-memory `StorageFile` that models a disk with a volatile write cache, for crash tests.
///
/// Writes land in a pending list until `sync()`; reads see them (as the OS page cache would).
/// With `crashAfter = n`, the (n+1)-th write or sync throws `SimulatedCrash` and so does every
/// later operation; `crashImage(mode:seed:)` then returns what the disk could hold afterwards.
/// This is the fault-injection seam for ArborEngine, modelled on swift-system's mocking.
public final class SimulatedFile: StorageFile, Sendable {
    struct PendingWrite {
        var offset: Int
        var bytes: [UInt8]
        /// What the write overwrote, and the file length before it: undoing every pending write
        /// in reverse order yields the durable image without keeping a second copy of the file.
        var previous: [UInt8] = []
        var previousLength = 0
    }

    struct State {
        var current: [UInt8]
        var pending: [PendingWrite] = []
        var operations = 0
        var crashAfter: Int?
        var crashed = false
        var syncs = 0
        var writes = 0
        var writesAtLastSync = 0
    }

    private let state: Locked<State>
    /// How long `sync()` takes after it has made the earlier writes durable (a slow disk), in
    /// microseconds: writes that other threads issue meanwhile stay unsynced, as on a real disk
    /// they may. Widens the windows in which threads meet a running sync.
    private let syncMicroseconds: UInt32

    /// A file whose durable contents are `bytes`.
    public init(bytes: [UInt8] = [], crashAfter: Int? = nil, syncMicroseconds: UInt32 = 0) {
        state = Locked(State(current: bytes, crashAfter: crashAfter))
        self.syncMicroseconds = syncMicroseconds
    }

    /// Writes plus syncs performed so far (the crash points a workload offers).
    public var operationCount: Int { state.withLock { $0.operations } }
    public var syncCount: Int { state.withLock { $0.syncs } }
    public var writeCount: Int { state.withLock { $0.writes } }
    /// `writeCount` when the last sync ran: equal to `writeCount` when no write followed it.
    public var writesAtLastSync: Int { state.withLock { $0.writesAtLastSync } }
    public var hasCrashed: Bool { state.withLock { $0.crashed } }
    /// The contents as readers currently see them.
    public var currentBytes: [UInt8] { state.withLock { $0.current } }

    private func step(_ state: inout State) throws {
        if state.crashed { throw SimulatedCrash() }
        if let limit = state.crashAfter, state.operations >= limit {
            state.crashed = true
            throw SimulatedCrash()
        }
        state.operations += 1
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        try state.withLock { state in
            if state.crashed { throw SimulatedCrash() }
            let start = Int(clamping: offset)
            guard start < state.current.count else { return 0 }
            let length = min(buffer.count, state.current.count - start)
            state.current.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + length)]))
            }
            return length
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try state.withLock { state in
            try step(&state)
            state.writes += 1
            let start = Int(offset)
            var write = PendingWrite(offset: start, bytes: Array(bytes))
            write.previousLength = state.current.count
            let overlapEnd = min(start + bytes.count, state.current.count)
            if start < overlapEnd { write.previous = Array(state.current[start..<overlapEnd]) }
            Self.apply(&state.current, write)
            state.pending.append(write)
        }
    }

    public func sync() throws {
        try state.withLock { state in
            try step(&state)
            state.syncs += 1
            state.writesAtLastSync = state.writes
            state.pending.removeAll()
        }
        if syncMicroseconds > 0 { usleep(syncMicroseconds) }
    }

    public func size() throws -> UInt64 {
        try state.withLock { state in
            if state.crashed { throw SimulatedCrash() }
            return UInt64(state.current.count)
        }
    }

    public func truncate(to size: UInt64) throws {
        try state.withLock { state in
            try step(&state)
            let length = Int(size)
            if length < state.current.count {
                // Shrinking is modelled as durable at once (the engine only ever extends).
                state.current.removeSubrange(length...)
                state.pending.removeAll()
            } else {
                // Extending is a pending write of zeros, lost or torn like any other.
                var write = PendingWrite(offset: state.current.count, bytes: [UInt8](repeating: 0, count: length - state.current.count))
                write.previousLength = state.current.count
                Self.apply(&state.current, write)
                state.pending.append(write)
            }
        }
    }

    /// A copy as a process that opens the file after this one's process crashed finds it: the
    /// same contents, with the writes not yet synced still only in the (simulated) OS cache, so
    /// that a power cut later may lose them. The copy crashes after `crashAfter` operations.
    public func afterProcessCrash(crashAfter: Int? = nil) -> SimulatedFile {
        let copy = state.withLock { $0 }
        let file = SimulatedFile(bytes: copy.current, crashAfter: crashAfter)
        file.state.withLock { $0.pending = copy.pending }
        return file
    }

    /// What the disk may contain after the crash, under `mode`.
    public func crashImage(mode: CrashMode, seed: UInt64) -> [UInt8] {
        state.withLock { state in
            var generator = SplitMix64(seed: seed)
            var image = Self.durableImage(state)
            switch mode {
            case .loseUnsynced:
                break
            case .tearLastWrite:
                for (index, write) in state.pending.enumerated() {
                    if index == state.pending.count - 1 {
                        let cut = Int(generator.next() % UInt64(max(write.bytes.count, 1)))
                        Self.apply(&image, PendingWrite(offset: write.offset, bytes: Array(write.bytes[0..<cut])))
                    } else {
                        Self.apply(&image, write)
                    }
                }
            case .reorderUnsynced:
                var writes = state.pending
                for index in writes.indices.reversed() where index > 0 {
                    writes.swapAt(index, Int(generator.next() % UInt64(index + 1)))
                }
                for write in writes where generator.next() % 2 == 0 { Self.apply(&image, write) }
            }
            return image
        }
    }

    /// The number of writes since the last sync (those a power cut may lose).
    public var unsyncedWriteCount: Int { state.withLock { $0.pending.count } }

    /// What the disk holds after a power cut that kept exactly the unsynced writes `keep`
    /// chooses (by their position since the last sync), in order.
    public func crashImage(keeping keep: (Int) -> Bool) -> [UInt8] {
        state.withLock { state in
            var image = Self.durableImage(state)
            for (index, write) in state.pending.enumerated() where keep(index) { Self.apply(&image, write) }
            return image
        }
    }

    /// The file without its unsynced writes.
    private static func durableImage(_ state: State) -> [UInt8] {
        var image = state.current
        for write in state.pending.reversed() {
            image.replaceSubrange(write.offset..<(write.offset + write.previous.count), with: write.previous)
            if image.count > write.previousLength { image.removeSubrange(write.previousLength...) }
        }
        return image
    }

    private static func apply(_ image: inout [UInt8], _ write: PendingWrite) {
        let end = write.offset + write.bytes.count
        if end > image.count { image += [UInt8](repeating: 0, count: end - image.count) }
        image.replaceSubrange(write.offset..<end, with: write.bytes)
    }
}

/// A small deterministic random number generator for reproducible tests.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
