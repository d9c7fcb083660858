import Foundation

/// How a store's reference columns become object IDs: the model's entities by code and the
/// store's identifier. One per store, shared by every object loaded from it (objects do not
/// keep the store itself alive).
final class StoredReferences: Sendable {
    let entities: EntityCodeTable
    let store: ObjectID.StoreBits

    init(entities: EntityCodeTable, store: UUID) {
        self.entities = entities
        self.store = ObjectID.StoreBits(store)
    }

    /// The ID a reference column names; nil for an entity code the model does not have.
    func objectID(code: UInt16, key: Int64) -> ObjectID? {
        entities[code].map { ObjectID(info: $0, storeBits: store, key: key) }
    }
}

/// An object's committed state: the values it was loaded with or last saved.
///
/// Loaded from a store, it keeps the row's columns as the fetch read them — shared, not
/// converted per object; usually still encoded — and turns a column into a `PropertyValue`
/// when it is read. Values given by a parent context or a save are kept as they are.
struct CommittedValues {
    private enum Storage {
        /// A stored row's columns; `toOne` marks the slots of to-one relationships (a null
        /// column there reads as a nil reference).
        case columns(RowColumns, StoredReferences, toOne: [Bool])
        case values([PropertyValue])
    }

    private var storage: Storage

    /// The committed state of a row read from the store of `references`, for an object of
    /// `info`. Every reference column must name an entity `references` knows (see
    /// `unknownReference(in:)`).
    init(columns: RowColumns, references: StoredReferences, info: EntityInfo) {
        storage = .columns(columns, references, toOne: info.isToOneSlot)
    }

    init(_ values: [PropertyValue]) {
        storage = .values(values)
    }

    /// The first reference column of `columns` whose entity code `references` does not know.
    /// - Complexity: O(1) for encoded columns without references (most rows: checked before
    ///   the search's closure is made, which retains the entity table); else O(columns),
    ///   decoding only reference columns.
    static func unknownReference(in columns: RowColumns, references: StoredReferences) -> UInt16? {
        guard columns.mayHaveReferences else { return nil }
        return columns.firstReference { references.entities[$0] == nil }
    }

    var count: Int {
        switch storage {
        case .columns(let columns, _, _): return columns.count
        case .values(let values): return values.count
        }
    }

    /// The value of `slot` (`0 ..< count`).
    /// - Complexity: O(1), O(length) for a stored string or data column (decoded at each
    ///   read); a reference column costs one lookup of its entity.
    subscript(slot: Int) -> PropertyValue {
        switch storage {
        case .columns(let columns, let references, let toOne):
            switch columns[slot] {
            case .value(.null) where slot < toOne.count && toOne[slot]: return .reference(nil)
            case .value(let value): return .value(value)
            case .reference(let code, let key):
                // Codes were checked when the row was applied; a stranger reads as invalid.
                return references.objectID(code: code, key: key).map { .reference($0) } ?? .invalid("unknown entity code \(code)")
            }
        case .values(let values):
            return values[slot]
        }
    }

    /// The stored row's columns, when the state holds them (nil for values given by a parent
    /// context or a save).
    var storedColumns: RowColumns? {
        if case .columns(let columns, _, _) = storage { return columns }
        return nil
    }

    /// The references of the stored row's columns, when the state holds them.
    var storedReferences: StoredReferences? {
        if case .columns(_, let references, _) = storage { return references }
        return nil
    }

    /// Every slot's value, in slot order.
    var all: [PropertyValue] {
        switch storage {
        case .columns: return (0..<count).map { self[$0] }
        case .values(let values): return values
        }
    }

    /// The state with references passed through `map` (temporary IDs made permanent by a
    /// save). Stored columns never name a temporary ID: they are kept as they are.
    func remapped(_ map: (ObjectID) -> ObjectID) -> CommittedValues {
        switch storage {
        case .columns: return self
        case .values(let values): return CommittedValues(values.map { $0.remapped(map) })
        }
    }
}
