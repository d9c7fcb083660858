/// A column of a row to write: references are object IDs, possibly temporary ones of objects
/// inserted by the same save.
enum WriteColumn: Sendable {
    case value(AttributeValue)
    case reference(ObjectID)
}

/// What a context asks one store to write in one atomic transaction.
struct SaveRequest: Sendable {
    struct RowWrite: Sendable {
        var id: ObjectID
        var columns: [WriteColumn]
        /// The version the context read; nil skips the optimistic-locking check.
        var expectedVersion: UInt64?
        /// For updates: the slots the context changed, and the committed values it read, so a
        /// conflict can be merged property by property inside the transaction.
        var changedSlots: [Int] = []
        var readColumns: [WriteColumn]?
    }

    struct RowDelete: Sendable {
        var id: ObjectID
        var expectedVersion: UInt64?
    }

    /// The full member list of an ordered one-to-many relationship whose order the app set.
    struct OrderedList: Sendable {
        var owner: ObjectID
        var relationship: String
        var members: [ObjectID]
    }

    /// Members appended to an ordered one-to-many relationship since it was last saved, in
    /// order (they follow the stored members).
    struct OrderedAppend: Sendable {
        var owner: ObjectID
        var relationship: String
        var members: [ObjectID]
    }

    /// The change of one side of a many-to-many relationship of one owner.
    struct JoinChange: Sendable {
        var owner: ObjectID
        var relationship: String
        /// The whole new member list (replaces the stored one), or nil to apply `added`/`removed`.
        var members: [ObjectID]?
        var added: [ObjectID] = []
        var removed: [ObjectID] = []
    }

    var inserts: [RowWrite] = []
    var updates: [RowWrite] = []
    var deletes: [RowDelete] = []
    var orderedLists: [OrderedList] = []
    var orderedAppends: [OrderedAppend] = []
    var joinChanges: [JoinChange] = []
    /// How optimistic-locking conflicts of updates are resolved (under the write lock).
    var mergePolicy: MergePolicy = .error

    var isEmpty: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && orderedLists.isEmpty && orderedAppends.isEmpty && joinChanges.isEmpty
    }
}

/// What a store reports after committing a save.
struct SaveResult: Sendable {
    /// Temporary ID → permanent ID of each inserted object.
    var permanentIDs: [ObjectID: ObjectID] = [:]
    /// The rows as now stored (new versions, order columns), by permanent ID.
    var writtenRows: [ObjectID: StoredRow] = [:]
    /// Updated objects whose rows another writer had deleted (the merge policy dropped them).
    var vanished: [ObjectID] = []
}
