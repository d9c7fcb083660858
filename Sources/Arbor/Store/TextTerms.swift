import Foundation

/// The terms a words or substrings index keeps for a string, and the probes a search of one
/// looks up (Spec/object-store.md §4, "Text indexes"). Both sides fold as `[cd]` folds, so an
/// index answers `[cd]` comparisons; every candidate it gives is still evaluated on its row.
enum TextTerms {
    /// Terms are cut to this many UTF-8 bytes (at a scalar boundary), so that a word of any
    /// length makes a key well below the page's limit; a probe is cut the same way, which keeps
    /// every match (a cut word still begins with the cut probe).
    static let maximumTermBytes = 64

    /// The distinct terms of `text` for an index of `kind`, sorted by their UTF-8 bytes.
    /// - Complexity: O(n log n) in the text's scalars.
    static func terms(of text: String, kind: IndexDescription.Kind) -> [String] {
        switch kind {
        case .values: return []
        case .words: return distinct(Words.folded(text, IndexKeys.normalization).map(cut))
        case .substrings:
            let scalars = substringScalars(text)
            var terms: [String] = []
            terms.reserveCapacity(scalars.count)
            for start in scalars.indices {
                var term = String.UnicodeScalarView()
                term.append(contentsOf: scalars[start..<min(start + 3, scalars.count)])
                terms.append(String(term))
            }
            return distinct(terms)
        }
    }

    /// The prefixes a `WORDSBEGINWITH[cd]` query looks up in a words index: its folded words, cut
    /// as terms are, distinct, longest first (a longer prefix is usually the rarer one).
    static func wordProbes(_ query: String) -> [String] {
        distinct(Words.folded(query, IndexKeys.normalization).map(cut)).sorted { $0.utf8.count > $1.utf8.count }
    }

    /// The prefixes a substrings index is searched with for text that must hold `literal` (the
    /// needle of `CONTAINS[cd]`, a run of a `LIKE[cd]` pattern): every text that holds it has an
    /// entry starting with each probe. Runs of three scalars at steps of three, and the last
    /// three; one shorter probe for a literal of one or two scalars; none for an empty one.
    /// `isFolded`: the literal is already `[cd]`-folded (a run of a folded `LIKE` pattern).
    static func substringProbes(_ literal: String, isFolded: Bool = false) -> [String] {
        var scalars = substringScalars(literal, isFolded: isFolded)
        // Combining marks at either end may be reordered with the text's own marks by the
        // decomposition (canonical ordering): only the part between base characters is certain.
        while let first = scalars.first, first.properties.canonicalCombiningClass.rawValue != 0 { scalars.removeFirst() }
        while let last = scalars.last, last.properties.canonicalCombiningClass.rawValue != 0 { scalars.removeLast() }
        guard !scalars.isEmpty else { return [] }
        var starts = Array(stride(from: 0, to: max(scalars.count - 2, 1), by: 3))
        if scalars.count > 3, let last = starts.last, last != scalars.count - 3 { starts.append(scalars.count - 3) }
        return distinct(starts.map { start in
            var probe = String.UnicodeScalarView()
            probe.append(contentsOf: scalars[start..<min(start + 3, scalars.count)])
            return String(probe)
        })
    }

    /// The scalars a substrings index reads from `text`: its `[cd]` fold, canonically
    /// decomposed, so that canonically equivalent texts give the same terms (`CONTAINS` matches
    /// characters by canonical equivalence).
    static func substringScalars(_ text: String, isFolded: Bool = false) -> [Unicode.Scalar] {
        let folded = isFolded ? text : ValueOrder.fold(text, IndexKeys.normalization)
        if folded.utf8.allSatisfy({ $0 < 0x80 }) { return Array(folded.unicodeScalars) }
        return Array(folded.decomposedStringWithCanonicalMapping.unicodeScalars)
    }

    /// `term` cut to at most `maximumTermBytes` UTF-8 bytes, at a scalar boundary.
    static func cut(_ term: String) -> String {
        guard term.utf8.count > maximumTermBytes else { return term }
        var kept = String.UnicodeScalarView(), bytes = 0
        for scalar in term.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maximumTermBytes { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// `terms` without repeats, in the order of their UTF-8 bytes (the index order).
    private static func distinct(_ terms: [String]) -> [String] {
        var sorted = terms.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var kept = 0
        for position in sorted.indices where kept == 0 || !sorted[position].utf8.elementsEqual(sorted[kept - 1].utf8) {
            sorted.swapAt(kept, position)
            kept += 1
        }
        sorted.removeLast(sorted.count - kept)
        return sorted
    }
}
