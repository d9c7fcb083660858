import Foundation

/// How a save resolves conflicts (Core Data's merge policies): optimistic-locking conflicts —
/// rows it writes or deletes that another context or process changed since this context read
/// them — and unique-constraint conflicts — an inserted object whose unique properties equal
/// those of a stored one. For the latter, `.objectTrumps` and `.overwrite` make the inserted
/// object take over the stored row (its values win), `.storeTrumps` and `.rollback` drop it in
/// favour of the stored object; either way relationships to it are re-pointed to the stored object.
public enum MergePolicy: Sendable, Equatable {
    /// Fail with `StoreError.conflicts`, naming every conflicting object and both versions (the default).
    case error
    /// Property by property, the store's changes win: properties the other writer changed take
    /// its values; this context's changes to the other properties are saved.
    case storeTrumps
    /// Property by property, this context's changes win; the properties it did not change take
    /// the stored values.
    case objectTrumps
    /// This context's whole state of the object replaces the stored row.
    case overwrite
    /// This context's changes to conflicting objects are discarded; the stored state stays.
    case rollback
}

extension MergePolicy {
    /// Whether this context's change to column `slot` survives a conflict, given the row as
    /// the other writer left it (`stored`) and as this context read it (`read`). The one rule
    /// both sides apply: stores when they merge a row, contexts when they keep or drop changes.
    func keepsChange<Value: Equatable>(at slot: Int, stored: [Value], read: [Value]) -> Bool {
        switch self {
        case .error, .overwrite, .objectTrumps: return true
        // Only where the other writer left the value as this context read it.
        case .storeTrumps: return slot < stored.count && slot < read.count && stored[slot] == read[slot]
        case .rollback: return false
        }
    }

    /// The row an update in conflict writes, inside the store's write transaction: `stored` is
    /// the row as another writer left it, `mine` this context's row, `read` the row as this
    /// context read it, `changedSlots` the columns it changed. Nil for `.rollback` (the stored
    /// row stays). Every store applies this one rule.
    func mergedColumns(stored: [ColumnValue], mine: [ColumnValue], read: [ColumnValue], changedSlots: [Int]) -> [ColumnValue]? {
        switch self {
        case .rollback: return nil
        case .error, .overwrite: return mine  // the whole row as this context has it
        case .objectTrumps, .storeTrumps:
            var merged = stored
            for slot in changedSlots where slot < merged.count && slot < mine.count && keepsChange(at: slot, stored: stored, read: read) {
                merged[slot] = mine[slot]
            }
            return merged
        }
    }
}
