import ArborEngine

/// A words or substrings index's tree, read and written as its logical entries.
///
/// Logically a text index holds one entry (term, primary key) per distinct term of a row (the
/// keys `IndexKeys.textKeys` gives); saves, batch requests and migration gather their changes
/// per term (`PostingChanges`). Stored, each term's keys are grouped in posting blocks
/// (`PostingBlock`) under the key (term, first key of the block). The blocks of a term are
/// disjoint and ascending: every key of a block lies below the next block's first key.
struct PostingTree {
    let tree: Tree
    let keys: IndexKeys

    private func malformed(_ detail: String) -> StoreError {
        StoreError.corruptRow(location: tree.name, detail: "malformed index entry: \(detail)")
    }

    /// Where the first key of the block `key` starts (after its term); nil when `key` is not a
    /// term followed by a primary key.
    private static func firstKeyStart(_ key: UnsafeRawBufferPointer) -> Int? {
        guard let start = TupleKey.lastComponentStart(in: key), start > 0 else { return nil }
        return start
    }

    /// The block `key`/`value`: the length of its term's component and its keys, appended to
    /// `found`.
    /// - Throws: `StoreError.corruptRow` for a malformed block.
    @discardableResult
    private func decode(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, into found: inout [Int64]) throws -> Int {
        guard let start = Self.firstKeyStart(key), let first = IndexKeys.integer(in: key, at: start) else {
            throw malformed("a key that is not a term and a primary key")
        }
        guard PostingBlock.decode(value, first: first, into: &found) else { throw malformed("a block that does not decode") }
        return start
    }

    // MARK: Reading

    /// The primary keys of the entries in `range` (terms with a common prefix), appended to
    /// `found` block by block: ascending within a term, not across terms.
    /// - Returns: the number of keys appended.
    /// - Throws: `StoreError.corruptRow` for a malformed block.
    /// - Complexity: O(log n + b) for b blocks in the range.
    @discardableResult
    func keys(in range: KeyRange, into found: inout [Int64]) throws -> Int {
        let before = found.count
        try tree.forEachUnsafe(in: range) { key, value in
            try decode(key, value, into: &found)
            return true
        }
        return found.count - before
    }

    /// The number of entries in `range`: the blocks' counts, no gap decoded.
    /// - Throws: `StoreError.corruptRow` for a malformed block.
    /// - Complexity: O(log n + b) for b blocks in the range.
    func count(in range: KeyRange) throws -> Int {
        var total = 0
        try tree.forEachUnsafe(in: range) { _, value in
            guard let count = PostingBlock.count(value) else { throw malformed("a block that does not decode") }
            total += count
            return true
        }
        return total
    }

    /// Every logical entry, in key order (for consistency checks): `body` gets each
    /// (term, primary key) key.
    /// - Throws: `StoreError.corruptRow` for a malformed block, or blocks of a term that are
    ///   not disjoint and ascending; what `body` throws.
    func forEachEntry(_ body: ([UInt8]) throws -> Void) throws {
        var term: [UInt8] = [], last: Int64 = 0, found: [Int64] = []
        try tree.forEachUnsafe { key, value in
            found.removeAll(keepingCapacity: true)
            let start = try decode(key, value, into: &found)
            let sameTerm = start == term.count && key.prefix(start).elementsEqual(term)
            if !sameTerm { term = Array(key.prefix(start)) }
            guard let first = found.first, !sameTerm || first > last else { throw malformed("blocks of a term that overlap") }
            for pk in found {
                var entry = term
                TupleKey.append(keys.integer(pk), descending: false, to: &entry)
                try body(entry)
            }
            last = found.last ?? last
            return true
        }
    }

    // MARK: Writing

    /// Applies changes to the logical entries (see `PostingChanges`). For each term changed it
    /// reads the blocks its changed keys fall in, merges, cuts the keys into full blocks again
    /// and writes those (an import's new keys, above every stored one, rewrite only the term's
    /// last block). Adding a present key or removing an absent one changes nothing.
    /// - Throws: `StoreError.corruptRow` for a malformed block met on the way; storage errors.
    /// - Complexity: O(t log t) to order t terms, plus O(log n + b + c) per term for b blocks
    ///   read and written and c changes.
    func apply(_ changes: PostingChanges) throws {
        guard !changes.isEmpty else { return }
        let cursor = try tree.makeCursor()
        var blocks = TreeChanges(), term: [UInt8] = []
        try changes.forEachTerm { bytes, adds, removes in
            term.removeAll(keepingCapacity: true)
            TupleKey.appendString(utf8: bytes, to: &term)
            try rewrite(term, adds: adds, removes: removes, cursor, into: &blocks)
        }
        try tree.apply(blocks)
    }

    /// Rewrites the blocks of `term` (its encoded component) that keys `adds` and `removes`
    /// (ascending, disjoint) fall in.
    private func rewrite(_ term: [UInt8], adds: [Int64], removes: [Int64], _ cursor: Cursor, into blocks: inout TreeChanges) throws {
        let low = min(adds.first ?? .max, removes.first ?? .max), high = max(adds.last ?? .min, removes.last ?? .min)
        guard low <= high else { return }
        func onTerm() -> Bool { cursor.withKey { $0.count > term.count && $0.prefix(term.count).elementsEqual(term) } ?? false }
        // The block `low` falls in: the last of the term's blocks that begins at or below it,
        // else the term's first block.
        var lowKey = term
        TupleKey.append(keys.integer(low), descending: false, to: &lowKey)
        var positioned = try cursor.seek(lowKey)
        if !(positioned && cursor.withKey({ $0.elementsEqual(lowKey) }) == true) {
            let stepped = positioned ? try cursor.previous() : try cursor.last()
            positioned = stepped && onTerm() ? true : try cursor.seek(lowKey)
        }
        var stored: [Int64] = [], oldKeys: [[UInt8]] = []
        while positioned && onTerm() {
            let first = try cursor.withKey { key -> Int64 in
                guard let start = Self.firstKeyStart(key), start == term.count, let first = IndexKeys.integer(in: key, at: start) else {
                    throw malformed("a key that is not a term and a primary key")
                }
                return first
            } ?? .max
            guard first <= high else { break }
            guard stored.last.map({ first > $0 }) ?? true else { throw malformed("blocks of a term that overlap") }
            let decoded = try cursor.withValue { PostingBlock.decode($0, first: first, into: &stored) } ?? false
            guard decoded else { throw malformed("a block that does not decode") }
            if let key = cursor.key { oldKeys.append(key) }
            positioned = try cursor.next()
        }
        let merged = Self.merge(stored, adding: adds, removing: removes)
        for key in oldKeys { blocks.delete(key) }
        var key: [UInt8] = [], value: [UInt8] = []
        for chunk in PostingBlock.chunks(merged) {
            key = term
            TupleKey.append(keys.integer(merged[chunk.lowerBound]), descending: false, to: &key)
            value.removeAll(keepingCapacity: true)
            PostingBlock.encode(merged[chunk], into: &value)
            blocks.put(key, value)
        }
    }

    /// `stored` with `removes` taken out and `adds` put in (all ascending; the result too).
    static func merge(_ stored: [Int64], adding adds: [Int64], removing removes: [Int64]) -> [Int64] {
        var result: [Int64] = []
        result.reserveCapacity(stored.count + adds.count)
        var s = 0, a = 0, r = 0
        while s < stored.count || a < adds.count {
            let next: Int64
            if a == adds.count || (s < stored.count && stored[s] <= adds[a]) {
                next = stored[s]
                if a < adds.count && adds[a] == next { a += 1 }
                s += 1
            } else {
                next = adds[a]
                a += 1
            }
            while r < removes.count && removes[r] < next { r += 1 }
            if r < removes.count && removes[r] == next { continue }
            result.append(next)
        }
        return result
    }
}
