import ArborEngine

/// The key filters of one index walk, applied by the scan itself (`ScanKeyFilter`): an entry
/// they reject never reaches the walk's per-entry closure. Counts what it rejects, for the
/// fetch's statistics, and reports progress (and so cancellation) while entries are only
/// rejected.
final class KeyFilterSet: ScanKeyFilter {
    private let filters: [KeyFilter]
    private let onProgress: ((Int) throws -> Void)?
    // Unchecked: the set is used by one walk on one thread, and a checked access per entry
    // would cost more than the filter itself.
    /// Entries rejected so far (by `admits` and by the scan's test of `scanRange`).
    @exclusivity(unchecked) private(set) var rejected = 0
    /// `rejected` when progress was last reported.
    @exclusivity(unchecked) private var reported = 0
    /// Rows the walk has examined, added to `rejected` in progress reports.
    @exclusivity(unchecked) var examined = 0
    /// Set by an ordered walk past its limit: the sort column's position and its encoded bytes
    /// in the last match. An entry whose sort value differs is admitted whatever the filters
    /// say, so that the walk sees it and stops there; ties are still filtered.
    @exclusivity(unchecked) var boundary: (position: Int, sortKey: [UInt8]?)?

    /// The first filter, tested without iterating the array (most walks have one). A `let` of
    /// the set, so it is used without being retained per entry (an array element would be).
    private let first: KeyFilter

    /// - Precondition: `filters` is not empty.
    init(_ filters: [KeyFilter], onProgress: ((Int) throws -> Void)?) {
        self.filters = filters
        self.first = filters[0]
        self.onProgress = onProgress
    }

    /// The first filter's range when it is on a fixed-size column, for the scan to test
    /// itself; nil once `boundary` is set, since an entry past it must then be admitted
    /// whatever the filters say.
    var scanRange: FixedComponentRange? { boundary == nil ? first.fixedRange : nil }

    func scanRejected(_ count: Int) { rejected += count }

    func admits(_ key: UnsafeRawBufferPointer) throws -> Bool {
        if let boundary, Self.sortValue(of: key, at: boundary.position, differsFrom: boundary.sortKey) { return true }
        if try !first.matches(key) { return try reject() }
        if filters.count > 1 {
            for index in 1..<filters.count where try !filters[index].matches(key) { return try reject() }
        }
        return true
    }

    /// Whether component `position` of `key` is not `sortKey` (nil: the key has no such component).
    static func sortValue(of key: UnsafeRawBufferPointer, at position: Int, differsFrom sortKey: [UInt8]?) -> Bool {
        guard let range = TupleKey.componentRange(in: key, at: position) else { return sortKey != nil }
        guard let sortKey else { return true }
        return !key[range].elementsEqual(sortKey)
    }

    private func reject() throws -> Bool {
        rejected += 1
        if rejected - reported >= 1024, let onProgress {
            reported = rejected
            try onProgress(examined + rejected)
        }
        return false
    }
}
