import ArborEngine
import Foundation

/// Searches of words and substrings indexes: `WORDSBEGINWITH[cd]` through a words index,
/// `CONTAINS[cd]`, `BEGINSWITH[cd]`, `ENDSWITH[cd]` and `LIKE[cd]` through a substrings index.
extension QueryPlanner {
    /// The rows that have, for every probe, an entry of `index` beginning with it: a superset
    /// of the rows the conjuncts it comes from accept (the whole predicate is evaluated on each).
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

    /// A search of a text index for the conjuncts `parts` that one can serve, with the
    /// conjuncts it came from and their positions in `parts`; nil when none can. The first text
    /// index a conjunct names is taken, with the probes of every conjunct that index serves.
    static func textSearch(_ parts: [ObjectPredicate], info: EntityInfo) -> (TextSearch, [ConditionLabel], positions: [Int])? {
        var chosen: EntityInfo.Index?
        var probes: [String] = [], used: [ConditionLabel] = [], positions: [Int] = []
        var isExact = true
        for (position, conjunct) in parts.enumerated() {
            guard case .comparison(let comparison) = conjunct, comparison.modifier == .direct,
                  comparison.options == IndexKeys.normalization,
                  case .keyPath(let path) = comparison.left, path.count == 1,
                  case .constant(.string(let text)) = comparison.right,
                  let attribute = info.attribute(named: path[0]) else { continue }
            let kind: IndexDescription.Kind
            switch comparison.op {
            case .wordsBeginWith: kind = .words
            case .contains, .beginsWith, .endsWith, .like: kind = .substrings
            default: continue
            }
            guard let index = chosen ?? info.indexes.first(where: { $0.kind == kind && $0.slots.first == attribute.slot }),
                  index.kind == kind, index.slots.first == attribute.slot else { continue }
            let found = kind == .words ? TextTerms.wordProbes(text) : substringProbes(comparison.op, text)
            guard !found.isEmpty else { continue }
            chosen = index
            for probe in found where probes.count < TextTerms.maximumProbes && !probes.contains(probe) { probes.append(probe) }
            used.append(.predicate(conjunct))
            positions.append(position)
            // Exact when every word of the query is a probe, whole.
            isExact = isExact && kind == .words && found.allSatisfy(probes.contains)
                && TextTerms.wordProbes(text, limit: .max).allSatisfy { found.contains($0) && $0.utf8.count < TextTerms.maximumTermBytes }
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
            guard case .comparison(let comparison) = conjunct, comparison.modifier == .direct,
                  case .keyPath(let path) = comparison.left, path.count == 1,
                  case .constant(.string) = comparison.right,
                  let attribute = info.attribute(named: path[0]), attribute.description.type == .string else { continue }
            let kind: IndexDescription.Kind
            switch comparison.op {
            case .wordsBeginWith: kind = .words
            case .contains, .endsWith, .like: kind = .substrings
            default: continue
            }
            if let index = info.indexes.first(where: { $0.kind == kind && $0.slots.first == attribute.slot }) {
                guard comparison.options != IndexKeys.normalization else { continue }
                return "\(index.tree) serves \(comparison.op.rawValue)[cd] only; compare with [cd] to use it"
            }
            return "a \(kind.rawValue) index on \(info.name)(\(path[0])) would help: IndexDescription([\"\(path[0])\"], kind: .\(kind.rawValue))"
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
