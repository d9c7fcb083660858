import Foundation

/// The terms a words or substrings index keeps for a string, and the probes a search of one
/// looks up (Spec/object-store.md §4, "Text indexes"). Both sides fold as `[cd]` folds, so an
/// index answers `[cd]` comparisons: exactly for a words search (`QueryPlanner.TextSearch.isExact`),
/// else as candidates evaluated on their rows.
enum TextTerms {
    /// Terms are cut to this many UTF-8 bytes (at a scalar boundary), so that a word of any
    /// length makes a key well below the page's limit; a probe is cut the same way, which keeps
    /// every match (a cut word still begins with the cut probe).
    static let maximumTermBytes = 64

    /// The terms of `text` for an index of `kind`, as UTF-8 bytes, in no particular order and
    /// possibly repeated (`IndexKeys.textKeys` sorts and merges their keys).
    /// - Complexity: O(n) in the text's scalars.
    static func terms(of text: String, kind: IndexDescription.Kind) -> [[UInt8]] {
        var terms: [[UInt8]] = []
        forEachTerm(of: text, kind: kind) { terms.append(Array($0)) }
        return terms
    }

    /// Calls `body` with each term of `text` for an index of `kind` (as `terms(of:kind:)`), its
    /// bytes valid only during the call: no array per term (an import makes millions).
    /// - Complexity: O(n) in the text's scalars.
    static func forEachTerm(of text: String, kind: IndexDescription.Kind, _ body: (UnsafeRawBufferPointer) -> Void) {
        switch kind {
        case .values: return
        case .words:
            Words.forEachFolded(text, IndexKeys.normalization) { body(UnsafeRawBufferPointer(rebasing: $0[..<cutLength($0)])) }
        case .substrings:
            // The folded text's bytes, and where each scalar starts: a term is three scalars.
            let bytes = Array(substringText(text).utf8)
            var starts: [Int] = []
            starts.reserveCapacity(bytes.count + 1)
            for (offset, byte) in bytes.enumerated() where byte & 0xC0 != 0x80 { starts.append(offset) }
            starts.append(bytes.count)
            bytes.withUnsafeBytes { bytes in
                for position in 0..<starts.count - 1 {
                    body(UnsafeRawBufferPointer(rebasing: bytes[starts[position]..<starts[min(position + 3, starts.count - 1)]]))
                }
            }
        }
    }

    /// Probes a search looks up at most: each costs a count of its range, and a few rare ones
    /// narrow as much as many (a longer query's rows are evaluated instead).
    static let maximumProbes = 8

    /// The prefixes a `WORDSBEGINWITH[cd]` query looks up in a words index: its folded words, cut
    /// as terms are, distinct, the longest `maximumProbes` (a longer prefix is usually rarer).
    static func wordProbes(_ query: String, limit: Int = maximumProbes) -> [String] {
        let words = Words.folded(query, IndexKeys.normalization).map { String(decoding: cut(Array($0.utf8)), as: UTF8.self) }
        return Array(distinct(words).sorted { $0.utf8.count > $1.utf8.count }.prefix(limit))
    }

    /// The prefixes a substrings index is searched with for text that must hold `literal` (the
    /// needle of `CONTAINS[cd]`, a run of a `LIKE[cd]` pattern): every text that holds it has an
    /// entry starting with each probe. Runs of three scalars at steps of three, and the last
    /// three (at most `maximumProbes`, spread); one shorter probe for a literal of one or two
    /// scalars; none for an empty one.
    /// `isFolded`: the literal is already `[cd]`-folded (a run of a folded `LIKE` pattern).
    static func substringProbes(_ literal: String, isFolded: Bool = false) -> [String] {
        var scalars = Array(substringText(literal, isFolded: isFolded).unicodeScalars)
        // Combining marks at either end may be reordered with the text's own marks by the
        // decomposition (canonical ordering): only the part between base characters is certain.
        while let first = scalars.first, first.properties.canonicalCombiningClass.rawValue != 0 { scalars.removeFirst() }
        while let last = scalars.last, last.properties.canonicalCombiningClass.rawValue != 0 { scalars.removeLast() }
        guard !scalars.isEmpty else { return [] }
        var starts = Array(stride(from: 0, to: max(scalars.count - 2, 1), by: 3))
        if scalars.count > 3, let last = starts.last, last != scalars.count - 3 { starts.append(scalars.count - 3) }
        if starts.count > maximumProbes {
            // Spread over the literal: its first, its last and evenly between.
            let count = starts.count
            starts = (0..<maximumProbes).map { starts[$0 * (count - 1) / (maximumProbes - 1)] }
        }
        return distinct(starts.map { start in
            var probe = String.UnicodeScalarView()
            probe.append(contentsOf: scalars[start..<min(start + 3, scalars.count)])
            return String(probe)
        })
    }

    /// The text a substrings index reads: `text`'s `[cd]` fold (unless `isFolded`), canonically
    /// decomposed, so that canonically equivalent texts give the same terms (`CONTAINS` matches
    /// characters by canonical equivalence).
    static func substringText(_ text: String, isFolded: Bool = false) -> String {
        let folded = isFolded ? text : ValueOrder.fold(text, IndexKeys.normalization)
        if folded.utf8.allSatisfy({ $0 < 0x80 }) { return folded }
        return folded.decomposedStringWithCanonicalMapping
    }

    /// `term`'s bytes cut to at most `maximumTermBytes`, at a scalar boundary.
    static func cut(_ term: [UInt8]) -> [UInt8] {
        term.count > maximumTermBytes ? term.withUnsafeBytes { Array($0[..<cutLength($0)]) } : term
    }

    /// The length of `term` cut to at most `maximumTermBytes` bytes, at a scalar boundary.
    static func cutLength(_ term: UnsafeRawBufferPointer) -> Int {
        guard term.count > maximumTermBytes else { return term.count }
        var end = maximumTermBytes
        while end > 0 && term[end] & 0xC0 == 0x80 { end -= 1 }  // not inside a scalar
        return end
    }

    /// `terms` without repeats, in the order of their UTF-8 bytes (the index order).
    private static func distinct(_ terms: [String]) -> [String] {
        var sorted = terms
        sorted.sortUnique { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return sorted
    }
}
