import ArborEngine
import Foundation

/// Searches of words and substrings indexes: `WORDSBEGINWITH[cd]` through a words index,
/// `CONTAINS[cd]`, `BEGINSWITH[cd]`, `ENDSWITH[cd]` and `LIKE[cd]` through a substrings index.
extension QueryPlanner {
    /// The rows that have, for every probe, an entry of `index` beginning with it: a superset
    /// of the rows the conjuncts it comes from accept, or exactly those (`isExact`).
    struct TextSearch {
        let index: EntityInfo.Index
        /// Folded prefixes of terms, each a key range of the index (see `TextTerms`).
        let probes: [String]
        /// Whether the rows having every probe are exactly those the conjuncts it serves accept
        /// (then they are not evaluated again): a words index, `WORDSBEGINWITH[cd]` only, every
        /// query word a probe as it is (none left out or cut).
        let isExact: Bool

        /// The key range of the entries whose term begins with `probe`.
        static func range(_ probe: String) -> KeyRange { .prefix(encodedStringPrefix(probe)) }
    }

    /// A comparison a text index could serve: an attribute compared with a string constant by
    /// a word or substring operator, with the index kind that serves it.
    private struct TextComparison {
        let comparison: Comparison
        let attribute: EntityInfo.Attribute
        let text: String
        let kind: IndexDescription.Kind

        init?(_ conjunct: ObjectPredicate, info: EntityInfo) {
            guard case .comparison(let comparison) = conjunct, comparison.modifier == .direct,
                  case .keyPath(let path) = comparison.left, path.count == 1,
                  case .constant(.string(let text)) = comparison.right,
                  let attribute = info.attribute(named: path[0]), attribute.description.type == .string else { return nil }
            switch comparison.op {
            case .wordsBeginWith: kind = .words
            case .contains, .beginsWith, .endsWith, .like: kind = .substrings
            default: return nil
            }
            (self.comparison, self.attribute, self.text) = (comparison, attribute, text)
        }

        /// The index of `info` of this comparison's kind on its attribute.
        func index(in info: EntityInfo) -> EntityInfo.Index? {
            info.indexes.first { $0.kind == kind && $0.slots.first == attribute.slot }
        }
    }

    /// A search of a text index for the conjuncts `parts` that one can serve, with the
    /// conjuncts it came from and their positions in `parts`; nil when none can. The first text
    /// index a conjunct names is taken, with the probes of every conjunct that index serves.
    static func textSearch(_ parts: [ObjectPredicate], info: EntityInfo) -> (TextSearch, [ConditionLabel], positions: [Int])? {
        var chosen: EntityInfo.Index?
        var probes: [String] = [], used: [ConditionLabel] = [], positions: [Int] = []
        var isExact = true
        for (position, conjunct) in parts.enumerated() {
            guard let candidate = TextComparison(conjunct, info: info), candidate.comparison.options == IndexKeys.normalization,
                  let index = chosen ?? candidate.index(in: info), index === candidate.index(in: info) else { continue }
            let found: [String]
            if candidate.kind == .words {
                // Exact when every word of the query is a probe, whole.
                let words = TextTerms.wordProbes(candidate.text, limit: .max)
                found = Array(words.prefix(TextTerms.maximumProbes))
                isExact = isExact && found.count == words.count && words.allSatisfy { $0.utf8.count < TextTerms.maximumTermBytes }
            } else {
                found = substringProbes(candidate.comparison.op, candidate.text)
                isExact = false
            }
            guard !found.isEmpty else { continue }
            chosen = index
            for probe in found where probes.count < TextTerms.maximumProbes && !probes.contains(probe) { probes.append(probe) }
            isExact = isExact && found.allSatisfy(probes.contains)
            used.append(.predicate(conjunct))
            positions.append(position)
        }
        guard let chosen, !probes.isEmpty else { return nil }
        return (TextSearch(index: chosen, probes: probes, isExact: isExact), used, positions)
    }

    /// For a scan that answered a word or substring comparison (`WORDSBEGINWITH`, `CONTAINS`,
    /// `ENDSWITH`, `LIKE` on a string attribute): the text index that would serve it, or the
    /// options that let an existing one serve it; nil when the predicate has none.
    static func textIndexHint(_ predicate: ObjectPredicate?, for info: EntityInfo) -> String? {
        guard let predicate else { return nil }
        for conjunct in conjuncts(predicate) {
            // BEGINSWITH is left to the folded index's hint.
            guard let candidate = TextComparison(conjunct, info: info), candidate.comparison.op != .beginsWith else { continue }
            if let index = candidate.index(in: info) {
                guard candidate.comparison.options != IndexKeys.normalization else { continue }
                return "\(index.tree) serves \(candidate.comparison.op.rawValue)[cd] only; compare with [cd] to use it"
            }
            let name = candidate.attribute.description.name, kind = candidate.kind.rawValue
            return "a \(kind) index on \(info.name)(\(name)) would help: IndexDescription([\"\(name)\"], kind: .\(kind))"
        }
        return nil
    }

    /// The probes of a substrings index for a `[cd]` comparison with `text`: the literal runs of
    /// a `LIKE` pattern (between `*` and `?`), else the whole text.
    private static func substringProbes(_ op: Comparison.Operator, _ text: String) -> [String] {
        guard op == .like else { return TextTerms.substringProbes(text) }
        // LIKE matches the folded pattern's scalars: runs are cut from it, then not folded again.
        let folded = ValueOrder.fold(text, IndexKeys.normalization)
        var probes: [String] = []
        for run in folded.unicodeScalars.split(whereSeparator: { $0 == "*" || $0 == "?" }) {
            for probe in TextTerms.substringProbes(String(String.UnicodeScalarView(run)), isFolded: true)
            where probes.count < TextTerms.maximumProbes && !probes.contains(probe) {
                probes.append(probe)
            }
        }
        return probes
    }
}
