extension FetchStatistics {
    /// `conditionKeys`: the properties the predicate's conditions could bound; `textHint`: the
    /// text index a word or substring comparison would use (both asked only when the fetch
    /// read many more rows than matched).
    static func suggestion(for plan: QueryPlan, conditionKeys: () -> [String], textHint: () -> String?,
                           examined: Int, matched: Int) -> String? {
        guard examined >= 1000, matched * 10 < examined else { return nil }
        switch plan.access {
        case .scan:
            // A text search that gave way to the scan: the index exists.
            guard plan.usedConditions.isEmpty else { return nil }
            if let hint = textHint() { return "scanned \(examined) rows for \(matched); \(hint)" }
            let keys = conditionKeys()
            guard !keys.isEmpty else {
                return "scanned \(examined) rows for \(matched); no condition compares a column of \(plan.entity.name) with a constant, so no index can narrow it"
            }
            return "scanned \(examined) rows for \(matched); an index on \(plan.entity.name)(\(keys.joined(separator: ", "))) would help"
        case .union, .rows, .related, .text:
            return nil
        case .index(let index, _):
            let keys = conditionKeys()
            guard Array(index.properties.prefix(keys.count)) != keys else { return nil }
            return "\(index.tree) narrowed to \(examined) rows for \(matched); an index on \(plan.entity.name)(\(keys.joined(separator: ", "))) would help"
        }
    }
}
