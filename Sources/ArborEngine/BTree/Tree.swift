/// A handle on one named B+tree inside a transaction. Keys and values are byte strings;
/// keys compare with memcmp (use `TupleKey` for typed, order-preserving composite keys).
///
/// Valid only while its transaction is open. Writes require a `WriteTransaction`.
public struct Tree {
    let transaction: Transaction
    let box: TreeBox

    public var name: String { box.name }
    /// Root, depth and entry count, as of this transaction (including its own changes).
    public var info: TreeInfo { box.info }
    /// The number of entries. O(1): kept in the catalog.
    public var count: Int { Int(box.info.count) }

    /// The value for `key`, or nil. O(log n) page visits.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try transaction.ensureOpen()
        return try transaction.get(box, key)
    }

    /// Calls `body` with the value for `key` in place (no copy unless it overflows its page)
    /// and returns its result, or nil when `key` is absent. The bytes are valid only during
    /// `body`. O(log n) page visits.
    public func withValue<R>(_ key: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try key.withUnsafeBytes { try withValue(forKeyBytes: $0, body) }
    }

    /// `withValue(_:_:)` for a key given as bytes in place (a part of another tree's key, say):
    /// no array is made for the lookup.
    public func withValue<R>(forKeyBytes key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try transaction.ensureOpen()
        return try transaction.withValue(box, key, body)
    }

    /// Whether `key` is present. O(log n), without reading overflow values.
    public func contains(_ key: [UInt8]) throws -> Bool {
        try transaction.ensureOpen()
        return try transaction.findLeaf(box, key) != nil
    }

    /// Inserts or replaces `key`. O(log n) plus rebalancing.
    /// - Throws: `readOnly`, `keyTooLarge`, `valueTooLarge`.
    public func put(_ key: [UInt8], _ value: [UInt8]) throws {
        guard let writer = transaction as? WriteTransaction else { throw ArborError.readOnly }
        try writer.put(box, key, value)
    }

    /// Removes `key`; returns whether it was present. O(log n) plus rebalancing.
    @discardableResult
    public func delete(_ key: [UInt8]) throws -> Bool {
        guard let writer = transaction as? WriteTransaction else { throw ArborError.readOnly }
        return try writer.delete(box, key)
    }

    /// A cursor over the tree, positioned nowhere until `first`, `last` or `seek`.
    public func makeCursor() throws -> Cursor {
        try transaction.ensureOpen()
        return Cursor(transaction: transaction, box: box)
    }

    /// Calls `body` for each entry in `range` (ascending, or descending with `reverse`) until it
    /// returns false. Values in overflow pages are read only for the entries visited.
    /// - Complexity: O(log n) to find the start, then amortized O(1) per entry.
    public func forEach(in range: KeyRange = .all, reverse: Bool = false,
                        _ body: (_ key: [UInt8], _ value: [UInt8]) throws -> Bool) throws {
        try forEachUnsafe(in: range, reverse: reverse) { key, value in try body(Array(key), Array(value)) }
    }

    /// Like `forEach`, without copying: `key` and `value` point into the page and are valid only
    /// during the call. The fastest way to scan.
    ///
    /// With `filter`, an entry whose key the filter does not admit is skipped before `body` is
    /// called: a range scan that rejects most of its entries by key alone (a geo box's latitude
    /// inside a (longitude, latitude) index) pays one filter call per rejected entry, not a
    /// call of `body`.
    /// - Throws: what `filter` or `body` throws; `corruptPage` for a damaged page.
    public func forEachUnsafe(in range: KeyRange = .all, reverse: Bool = false, filter: (any ScanKeyFilter)? = nil,
                              _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        let cursor = try makeCursor()
        try cursor.scan(in: range, reverse: reverse, filter: filter, body)
    }

    /// Calls `body` with the first entry of `range` in place (key and value valid only during
    /// the call) and returns its verdict, or nil when the range holds no entry. One descent from
    /// the root without a cursor: the probe of a semi-join ("has this owner an entry in this
    /// window?") asks it once per candidate. (Not generic: called from another module, a
    /// generic result would be looked up at run time on every call.)
    /// - Complexity: O(log n) page visits.
    public func withFirstEntry(in range: KeyRange,
                               _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        try transaction.ensureOpen()
        return try transaction.withFirstEntry(box, in: range, body)
    }

    /// `withFirstEntry(in:_:)` for a range given by byte bounds in place (`upper` nil: no upper
    /// bound): for a probe that composes its bounds per call in a reused buffer, without a
    /// `KeyRange` and its arrays.
    /// - Complexity: O(log n) page visits.
    public func withFirstEntry(from lower: UnsafeRawBufferPointer, inclusive lowerInclusive: Bool,
                               to upper: UnsafeRawBufferPointer?, inclusive upperInclusive: Bool,
                               _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws -> Bool? {
        try transaction.ensureOpen()
        return try transaction.withFirstEntry(box, from: lower, inclusive: lowerInclusive, to: upper, inclusive: upperInclusive, body)
    }

    /// `body` over the value stored under `key` where it lies (valid only during the call),
    /// if every page on the way is already in memory; `.notInMemory` when one is not, and then
    /// nothing is read from the file. For reading first what costs no file read: a semi-join
    /// that needs one member of many meeting a condition tries the members in memory first.
    /// After many lookups in a tree of three levels or more, a read transaction finds the leaf
    /// through the tree's `LeafDirectory` (one search, no branch page), and then only the leaf
    /// has to be in memory.
    /// - Complexity: O(log n), no I/O but two kinds: values in overflow chains are read (their
    ///   pages are not cached), and the call that builds a tree version's directory reads the
    ///   branch pages it needs that are not in memory (once per version, within a bound).
    /// - Throws: `corruptPage` for a damaged page in memory or a damaged branch page read for
    ///   the directory, an I/O error from such a read.
    public func withValueInMemory<R>(forKey key: UnsafeRawBufferPointer,
                                     _ body: (UnsafeRawBufferPointer) throws -> R) throws -> LookupInMemory<R> {
        try transaction.ensureOpen()
        return try transaction.withValueInMemory(box, key, body)
    }

    /// `withValueInMemory(forKey:_:)` for a body that returns a verdict (nil: undecided),
    /// compiled for that type here: the generic form runs unspecialized in other modules,
    /// through value witnesses, and a semi-join tests up to millions of member rows with it.
    public func withValueInMemory(forKey key: UnsafeRawBufferPointer,
                                  _ body: (UnsafeRawBufferPointer) throws -> Bool?) throws -> LookupInMemory<Bool?> {
        try transaction.ensureOpen()
        return try transaction.withValueInMemory(box, key, body)
    }

    /// All entries in `range`, in order.
    public func entries(in range: KeyRange = .all, limit: Int = .max) throws -> [(key: [UInt8], value: [UInt8])] {
        var result: [(key: [UInt8], value: [UInt8])] = []
        try forEach(in: range) { key, value in
            result.append((key, value))
            return result.count < limit
        }
        return result
    }

    /// The number of entries in `range`, counting whole leaves without decoding their cells.
    /// O(log n + leaves in range).
    public func count(in range: KeyRange) throws -> Int {
        let cursor = try makeCursor()
        return try cursor.countForward(in: range)
    }
}

/// What `Tree.withValueInMemory(forKey:_:)` found.
public enum LookupInMemory<R> {
    /// The key's value, passed through the body.
    case found(R)
    /// The key is not in the tree.
    case absent
    /// A page on the way is not in memory: nothing was read.
    case notInMemory
}

/// A test a scan applies to each entry's key before calling its body (see
/// `Tree.forEachUnsafe(in:reverse:filter:_:)`). A class, so the scan calls it through one
/// reference, without a closure context to unpack per entry.
public protocol ScanKeyFilter: AnyObject {
    /// Whether the entry with `key` (valid only during the call) reaches the scan's body.
    func admits(_ key: UnsafeRawBufferPointer) throws -> Bool
    /// A range the scan tests itself before calling `admits`, without a call: an entry outside
    /// it is skipped and counted (`scanRejected`); an entry inside it, or one whose key it
    /// cannot decide, still goes to `admits`. So it must reject only entries `admits` would
    /// reject. Read at each leaf and after each entry that reached the body (the body may
    /// change what the filter admits). nil by default.
    var scanRange: FixedComponentRange? { get }
    /// Counts entries `scanRange` rejected since the last count: called before the filter's
    /// next `admits` and when the scan ends. Every 1,024th rejected entry is passed to `admits`
    /// instead, so that a filter reporting progress (and cancellation) from `admits` still
    /// sees long runs of rejections.
    func scanRejected(_ count: Int)
}

extension ScanKeyFilter {
    public var scanRange: FixedComponentRange? { nil }
    public func scanRejected(_ count: Int) {}
}

/// A range of keys: optional lower and upper bounds, each inclusive or exclusive.
public struct KeyRange: Sendable, Equatable {
    public struct Bound: Sendable, Equatable {
        public var key: [UInt8]
        public var inclusive: Bool
        public init(_ key: [UInt8], inclusive: Bool) {
            self.key = key
            self.inclusive = inclusive
        }
    }

    public var lower: Bound?
    public var upper: Bound?

    public init(lower: Bound? = nil, upper: Bound? = nil) {
        self.lower = lower
        self.upper = upper
    }

    public static let all = KeyRange()

    /// Keys from `lower` (inclusive) to `upper` (exclusive).
    public static func halfOpen(_ lower: [UInt8], _ upper: [UInt8]) -> KeyRange {
        KeyRange(lower: Bound(lower, inclusive: true), upper: Bound(upper, inclusive: false))
    }

    /// Keys from `lower` to `upper`, both inclusive.
    public static func closed(_ lower: [UInt8], _ upper: [UInt8]) -> KeyRange {
        KeyRange(lower: Bound(lower, inclusive: true), upper: Bound(upper, inclusive: true))
    }

    /// Keys that start with `prefix`.
    public static func prefix(_ prefix: [UInt8]) -> KeyRange {
        var upper = prefix
        // The smallest key greater than every key with this prefix: increment the last byte below 0xFF.
        while let last = upper.last, last == 0xFF { upper.removeLast() }
        guard !upper.isEmpty else { return KeyRange(lower: Bound(prefix, inclusive: true)) }
        upper[upper.count - 1] += 1
        return KeyRange(lower: Bound(prefix, inclusive: true), upper: Bound(upper, inclusive: false))
    }

    public func contains(_ key: [UInt8]) -> Bool { isAboveLower(key) && isBelowUpper(key) }

    func isAboveLower(_ key: [UInt8]) -> Bool {
        guard let lower else { return true }
        let order = compareBytes(key, lower.key)
        return order > 0 || (order == 0 && lower.inclusive)
    }

    func isBelowUpper(_ key: [UInt8]) -> Bool {
        guard let upper else { return true }
        let order = compareBytes(key, upper.key)
        return order < 0 || (order == 0 && upper.inclusive)
    }

    func isAboveLower(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let lower else { return true }
        let order = lower.key.withUnsafeBytes { compareBytes(key, $0) }
        return order > 0 || (order == 0 && lower.inclusive)
    }

    func isBelowUpper(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let upper else { return true }
        let order = upper.key.withUnsafeBytes { compareBytes(key, $0) }
        return order < 0 || (order == 0 && upper.inclusive)
    }
}
