/// Which freed pages a write transaction may reuse.
///
/// A page written by transaction `B` (its birth) and freed by transaction `F` is reachable from
/// the state after transaction `S` exactly when `B ≤ S < F`. A page may be reused when no state
/// that must stay readable lies in that interval: the snapshots of open readers, the newest
/// durable commit (a power cut may fall back to it) and every snapshot a new reader may still
/// take before the transaction commits. A long reader thus pins only the pages of its own
/// snapshot, not the versions written and freed after it (as LMDB's successors do).
struct PageReuse: Sendable, Equatable {
    /// The protected states, sorted and disjoint.
    private(set) var protected: [ClosedRange<UInt64>]

    /// - Parameter protected: every snapshot that must stay readable, in any order; ranges stand
    ///   for every snapshot between their bounds (a process publishes only its oldest and
    ///   newest reader).
    init(protecting protected: [ClosedRange<UInt64>]) {
        var merged: [ClosedRange<UInt64>] = []
        for range in protected.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            // Overlapping ranges merge; adjacent ones stay apart, so that births on either side
            // of a range's start fall in different segments (see `segment(ofBirth:)`).
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        self.protected = merged
    }

    /// Whether pages freed by `freedBy`, none born before `bornNoEarlierThan`, are reachable from
    /// no protected state. O(log r) for r protected ranges.
    func allowsReuse(freedBy: UInt64, bornNoEarlierThan birth: UInt64) -> Bool {
        pinningRange(freedBy: freedBy, bornNoEarlierThan: birth) == nil
    }

    /// The protected range holding a snapshot that may reach pages freed by `freedBy`, none born
    /// before `birth`; nil when there is none.
    func pinningRange(freedBy: UInt64, bornNoEarlierThan birth: UInt64) -> ClosedRange<UInt64>? {
        guard birth < freedBy else { return nil }  // never visible to any snapshot
        // The first protected range ending at or after the birth holds the lowest protected
        // snapshot ≥ birth; the pages are pinned when that snapshot is before `freedBy`.
        let index = segment(ofBirth: birth)
        guard index < protected.count, max(protected[index].lowerBound, birth) < freedBy else { return nil }
        return protected[index]
    }

    /// The index of the first protected range that ends at or after `birth` (`protected.count`
    /// when none does). Pages whose births share a segment are reachable from the same
    /// protected snapshots, so a freelist entry should not mix segments.
    func segment(ofBirth birth: UInt64) -> Int {
        var low = 0
        var high = protected.count
        while low < high {
            let middle = (low + high) / 2
            if protected[middle].upperBound < birth { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether every snapshot of `range` is still protected (within one protected range: a
    /// range now covered by two adjacent ones answers false, which only costs a rescan).
    func protects(_ range: ClosedRange<UInt64>) -> Bool {
        let index = segment(ofBirth: range.lowerBound)
        return index < protected.count && protected[index].lowerBound <= range.lowerBound
            && protected[index].upperBound >= range.upperBound
    }
}

/// A page a transaction stopped using, with the transaction that wrote it.
struct FreedPage: Equatable, Comparable {
    var page: PageID
    var birth: UInt64

    /// Ordered by birth, so that a freelist entry's pages share a narrow range of births.
    static func < (a: FreedPage, b: FreedPage) -> Bool {
        (a.birth, a.page) < (b.birth, b.page)
    }
}
