import ArborEngine
import Foundation

/// The key of a row within a store: its hierarchy's root entity and its primary key.
struct RowKey: Hashable, Sendable {
    var root: UInt16
    var key: Int64
    init(_ id: ObjectID) {
        root = id.info.rootCode
        key = id.primaryKey
    }

    init(root: UInt16, key: Int64) {
        self.root = root
        self.key = key
    }

    // One combine: the root code goes into the key's top bits (hierarchies are few, keys
    // rarely use them), so hashing a key costs one round, not two.
    func hash(into hasher: inout Hasher) {
        hasher.combine(hashBits)
    }

    var hashBits: UInt64 { UInt64(bitPattern: key) ^ (UInt64(root) << 48) }

    /// See `ObjectID._rawHashValue(seed:)`: a row key is hashed at each retain, store and release.
    func _rawHashValue(seed: Int) -> Int { mixedHash(hashBits, seed: seed) }
}

/// Counters that show what faulting and the row cache do.
public struct StoreStatistics: Equatable, Sendable {
    /// Rows decoded from the file (point lookups and fetched rows).
    public var rowsRead: UInt64 = 0
    /// Row requests answered by the row cache.
    public var cacheHits: UInt64 = 0
    /// Faults fired (objects whose data was needed), whatever served them.
    public var faultsFired: UInt64 = 0
    /// Rows cached now.
    public var cachedRows: Int = 0
    public init() {}
}

/// Each store's cache of rows, keyed by row, with the time each was read (Core Data's row cache).
///
/// An entry exists while some context holds an object for the row (`retain`/`release` by the
/// objects' lifetime), so memory follows what the app holds. Rows are stored only when they
/// come from the newest snapshot, so an old reader can never put back a stale row.
final class RowCache: Sendable {
    struct Entry {
        var row: StoredRow?
        var loadedAt: UInt64 = 0
        var references = 0

        mutating func load(_ row: StoredRow, at time: UInt64) {
            self.row = row
            loadedAt = time
        }
    }

    struct State {
        var entries: [RowKey: Entry] = [:]
        /// The newest transaction whose rows the cache reflects.
        var snapshot: UInt64 = 0
        var statistics = StoreStatistics()
    }

    let state = Locked(State())

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    func retain(_ key: RowKey) {
        state.withLock { $0.entries[key, default: Entry()].references += 1 }
    }

    func release(_ key: RowKey) {
        state.withLock { state in
            // One hash lookup: the entry is changed (or removed) through its index.
            guard let index = state.entries.index(forKey: key) else { return }
            state.entries.values[index].references -= 1
            if state.entries.values[index].references <= 0 { state.entries.remove(at: index) }
        }
    }

    /// The cached row when present and younger than `maxAge` seconds (nil: any age).
    func lookup(_ key: RowKey, maxAge: TimeInterval?) -> StoredRow? {
        let now = maxAge == nil ? 0 : Self.now()
        return state.withLock { Self.cachedRow(key, in: &$0, now: now, maxAge: maxAge) }
    }

    /// `lookup` for several rows under one lock: the cached row (or nil) per key, in order.
    func lookup(_ keys: [RowKey], maxAge: TimeInterval?) -> [StoredRow?] {
        let now = maxAge == nil ? 0 : Self.now()
        return state.withLock { state in keys.map { Self.cachedRow($0, in: &state, now: now, maxAge: maxAge) } }
    }

    /// One lookup under the lock, counted as a hit when it answers.
    private static func cachedRow(_ key: RowKey, in state: inout State, now: UInt64, maxAge: TimeInterval?) -> StoredRow? {
        guard let index = state.entries.index(forKey: key), let row = state.entries.values[index].row else { return nil }
        if let maxAge, Double(now &- state.entries.values[index].loadedAt) / 1e9 >= maxAge { return nil }
        state.statistics.cacheHits += 1
        return row
    }

    /// Notes that a reader saw `snapshot`: a newer one than the cache reflects means another
    /// process (or database handle) committed, so every cached row may be stale.
    func observe(snapshot: UInt64) {
        state.withLock { state in
            guard snapshot > state.snapshot else { return }
            state.snapshot = snapshot
            for key in state.entries.keys { state.entries[key]?.row = nil }
        }
    }

    /// Caches rows read from `snapshot` for rows some context holds.
    func store(_ rows: [(RowKey, StoredRow)], snapshot: UInt64) {
        state.withLock { state in
            state.statistics.rowsRead += UInt64(rows.count)
            guard snapshot == state.snapshot else { return }
            let time = Self.now()
            for (key, row) in rows {
                guard let index = state.entries.index(forKey: key) else { continue }
                state.entries.values[index].load(row, at: time)
            }
        }
    }

    /// Applies a commit made through this store (transaction `snapshot`).
    func apply(written: [(RowKey, StoredRow)], deleted: [RowKey], snapshot: UInt64) {
        state.withLock { state in
            if snapshot != state.snapshot + 1 {
                // Someone else committed in between: drop everything, then take our rows.
                for key in state.entries.keys { state.entries[key]?.row = nil }
            }
            state.snapshot = max(state.snapshot, snapshot)
            let time = Self.now()
            for (key, row) in written {
                guard let index = state.entries.index(forKey: key) else { continue }
                state.entries.values[index].load(row, at: time)
            }
            for key in deleted {
                guard let index = state.entries.index(forKey: key) else { continue }
                state.entries.values[index].row = nil
            }
        }
    }

    /// Applies a batch request's commit (transaction `snapshot`): the rows of `changed` are
    /// no longer cached (read again when next needed); past a few thousand, no row is.
    /// Past this many changed rows a batch forgets every cached row instead of looking each up.
    static let batchForgetsAll = 4_096

    func applyBatch(changed: ObjectIDSet, snapshot: UInt64) {
        if changed.count > Self.batchForgetsAll {
            applyBatch(changed: [], forgetsAll: true, snapshot: snapshot)
        } else {
            applyBatch(changed: changed.rowKeys, snapshot: snapshot)
        }
    }

    func applyBatch(changed: [RowKey], forgetsAll: Bool = false, snapshot: UInt64) {
        guard !forgetsAll && changed.count <= Self.batchForgetsAll else {
            state.withLock { state in
                for key in state.entries.keys { state.entries[key]?.row = nil }
                state.snapshot = max(state.snapshot, snapshot)
            }
            return
        }
        apply(written: [], deleted: changed, snapshot: snapshot)
    }

    func noteRowsRead(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.statistics.rowsRead += UInt64(count) }
    }

    func noteFaultFired() { state.withLock { $0.statistics.faultsFired += 1 } }

    var statistics: StoreStatistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.cachedRows = state.entries.values.reduce(0) { $0 + ($1.row == nil ? 0 : 1) }
            return statistics
        }
    }

    func resetStatistics() { state.withLock { $0.statistics = StoreStatistics() } }
}
