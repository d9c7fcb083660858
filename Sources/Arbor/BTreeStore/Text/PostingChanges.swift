import ArborEngine

/// Changes to a text index's logical entries, gathered per term: the primary keys added to and
/// removed from each term, in the order given (the last change to a (term, key) wins).
///
/// An import gives millions of (term, key) changes over tens of thousands of terms. Gathered
/// per term, each change is a hash lookup and an append, and the keys of a term come out
/// ascending when the rows came in key order, so nothing but the terms needs sorting; kept as
/// entries of a `TreeChanges`, each would be sorted among all, then visited in an order that
/// jumps all over memory.
struct PostingChanges {
    /// The terms' bytes, back to back; term i is `termBytes[termStarts[i]..<termStarts[i + 1]]`.
    private var termBytes: [UInt8] = []
    private var termStarts: [Int] = [0]
    /// Per term, its changes in the order given: a key added, or the bitwise complement of a
    /// key removed (keys are positive, so complements are negative).
    private var changes: [[Int64]] = []
    /// Open addressing over term numbers + 1 (0: empty), a power of two in size.
    private var slots: [Int32] = Array(repeating: 0, count: 64)
    /// The number of changes gathered.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    /// Bytes held, roughly: for the budget that decides when changes are applied.
    var byteCount: Int { termBytes.count + count * 8 + changes.count * 48 }

    /// Adds `key` to `term`'s keys.
    mutating func put(term: UnsafeRawBufferPointer, key: Int64) { append(term, key) }

    /// Removes `key` from `term`'s keys.
    mutating func delete(term: UnsafeRawBufferPointer, key: Int64) { append(term, ~key) }

    private mutating func append(_ term: UnsafeRawBufferPointer, _ change: Int64) {
        let number = termNumber(term)
        changes[number].append(change)
        count += 1
    }

    /// The number of `term`, added if new.
    private mutating func termNumber(_ term: UnsafeRawBufferPointer) -> Int {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: XXH3.hash(term)) & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { break }
            let number = entry - 1
            let start = termStarts[number], end = termStarts[number + 1]
            let equal = end - start == term.count
                && termBytes.withUnsafeBytes { compareBytes(UnsafeRawBufferPointer(rebasing: $0[start..<end]), term) == 0 }
            if equal { return number }
            slot = (slot + 1) & mask
        }
        let number = changes.count
        termBytes.append(contentsOf: term)
        termStarts.append(termBytes.count)
        changes.append([])
        slots[slot] = Int32(number + 1)
        // At most half full: probes stay short.
        if changes.count * 2 > slots.count { grow() }
        return number
    }

    private mutating func grow() {
        slots = Array(repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        termBytes.withUnsafeBytes { bytes in
            for number in 0..<changes.count {
                let term = UnsafeRawBufferPointer(rebasing: bytes[termStarts[number]..<termStarts[number + 1]])
                var slot = Int(truncatingIfNeeded: XXH3.hash(term)) & mask
                while slots[slot] != 0 { slot = (slot + 1) & mask }
                slots[slot] = Int32(number + 1)
            }
        }
    }

    /// Calls `body` for each term in ascending byte order, with the keys added to it and those
    /// removed from it (each ascending and distinct, disjoint: of several changes to a key only
    /// the last counts).
    /// - Complexity: O(t log t) for t terms, plus O(c) for c changes given in key order per
    ///   term (O(c log c) otherwise).
    func forEachTerm(_ body: (_ term: ArraySlice<UInt8>, _ adds: [Int64], _ removes: [Int64]) throws -> Void) rethrows {
        let order = (0..<changes.count).sorted { a, b in
            termBytes[termStarts[a]..<termStarts[a + 1]].lexicographicallyPrecedes(termBytes[termStarts[b]..<termStarts[b + 1]])
        }
        var adds: [Int64] = [], removes: [Int64] = []
        for number in order {
            adds.removeAll(keepingCapacity: true)
            removes.removeAll(keepingCapacity: true)
            Self.resolve(changes[number], adds: &adds, removes: &removes)
            try body(termBytes[termStarts[number]..<termStarts[number + 1]], adds, removes)
        }
    }

    /// Splits one term's changes into the keys added and removed, the last change to a key
    /// winning.
    static func resolve(_ changes: [Int64], adds: inout [Int64], removes: inout [Int64]) {
        func key(_ change: Int64) -> Int64 { change < 0 ? ~change : change }
        var ascending = true
        for index in changes.indices.dropFirst() where key(changes[index - 1]) >= key(changes[index]) {
            ascending = false
            break
        }
        if ascending {
            for change in changes { if change < 0 { removes.append(~change) } else { adds.append(change) } }
            return
        }
        // A stable sort by key keeps the changes to one key in the order given; the last stays.
        let sorted = changes.enumerated().sorted { (key($0.element), $0.offset) < (key($1.element), $1.offset) }
        for (index, change) in sorted.enumerated() {
            if index + 1 < sorted.count && key(sorted[index + 1].element) == key(change.element) { continue }
            if change.element < 0 { removes.append(~change.element) } else { adds.append(change.element) }
        }
    }

    /// Adds `other`'s changes after these (so they win over these for the same entry).
    mutating func append(contentsOf other: PostingChanges) {
        for number in 0..<other.changes.count {
            other.termBytes.withUnsafeBytes { bytes in
                let target = termNumber(UnsafeRawBufferPointer(rebasing: bytes[other.termStarts[number]..<other.termStarts[number + 1]]))
                changes[target].append(contentsOf: other.changes[number])
            }
        }
        count += other.count
    }
}

extension PostingChanges {
    /// Adds `key` to every term of `text` in an index of `kind` (repeats and all: a term met
    /// twice is added twice, which changes nothing).
    mutating func add(_ text: String, kind: IndexDescription.Kind, key: Int64) {
        TextTerms.forEachTerm(of: text, kind: kind) { put(term: $0, key: key) }
    }

    /// Removes `key` from every term of `text` in an index of `kind`.
    mutating func remove(_ text: String, kind: IndexDescription.Kind, key: Int64) {
        TextTerms.forEachTerm(of: text, kind: kind) { delete(term: $0, key: key) }
    }
}
