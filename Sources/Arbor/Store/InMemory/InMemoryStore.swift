import ArborEngine
import Dispatch
import Foundation

/// A store whose rows live in memory (Core Data's `NSInMemoryStoreType`): the second
/// implementation of `StoreStorage`, for tests, previews and caches that need no file.
///
/// The same model, predicates, sorts, relationships, merge policies and uniqueness rules as a
/// file store; no indexes — a fetch evaluates its predicate on every row of the entity's
/// hierarchy. Readers take a snapshot of the whole state (a copy of a few dictionaries that
/// shares their storage until the next save changes them); a save holds the writer lock from
/// `prepareSave` until it commits or aborts, and commits by swapping the state in.
///
/// Batch requests are not supported, as in Core Data, where they need an SQLite store: they
/// throw `StoreError.unsupported`.
final class InMemoryStore: StoreStorage {
    /// Everything the store holds; a value, so a snapshot is a copy.
    struct State {
        /// Rows by the code of their hierarchy's root entity, then primary key.
        var rows: [UInt16: [Int64: StoredRow]] = [:]
        /// The last primary key used per hierarchy root.
        var lastKeys: [UInt16: Int64] = [:]
        /// Per to-one relationship (named by its foreign-key tree): owner key → the keys of the
        /// rows pointing at it.
        var referrers: [String: [Int64: Set<Int64>]] = [:]
        /// Per side of a many-to-many relationship (its join tree and side): owner key → members
        /// in order (by order key, then member key).
        var joins: [JoinSide: [Int64: [JoinMember]]] = [:]
        /// Per unique index (named by its tree): each value held, encoded as a file store's
        /// unique index compares it → the keys of the rows holding it (more than one only
        /// within a save that is about to fail). A save checks only the values it wrote.
        var uniqueValues: [String: [[UInt8]: Set<Int64>]] = [:]
        /// Bumped by every commit.
        var version: UInt64 = 0
    }

    struct JoinSide: Hashable {
        var tree: String
        var side: UInt8
    }

    struct JoinMember: Equatable {
        var order: Int64
        var key: Int64
        var code: UInt16
    }

    let model: ManagedObjectModel
    let identifier: UUID
    let name: String
    let isReadOnly: Bool
    let references: StoredReferences
    /// The encoding of index values, used only to compare unique values exactly as a file
    /// store's unique index does (folded for normalized indexes, NULL equal to NULL).
    let keys = IndexKeys(format: IndexKeys.currentFormat)
    /// The order column (slot, hierarchy root) of each ordered to-one relationship, by its
    /// foreign-key tree.
    let orderColumns: [String: (slot: Int, root: UInt16)]
    let state = Locked(State())
    /// Held by a prepared save until it commits or aborts: one writer at a time.
    let writerLock = DispatchSemaphore(value: 1)
    private let counters = Locked(StoreStatistics())

    /// - Throws: `StoreError.notAStoreFile` when the model has no configuration `configuration`.
    init(model: ManagedObjectModel, configuration: String, identifier: UUID, name: String, readOnly: Bool) throws {
        guard model.entityNames(inConfiguration: configuration) != nil else {
            throw StoreError.notAStoreFile(path: name, detail: "the model has no configuration named \(configuration)")
        }
        self.model = model
        self.identifier = identifier
        self.name = name
        isReadOnly = readOnly
        references = StoredReferences(entities: model.infosByCode, store: identifier)
        var orderColumns: [String: (slot: Int, root: UInt16)] = [:]
        for info in model.infos {
            for relationship in info.relationships where relationship.kind == .toOne {
                if let tree = relationship.foreignKeyTree, let slot = relationship.orderSlot { orderColumns[tree] = (slot, info.rootCode) }
            }
        }
        self.orderColumns = orderColumns
    }

    var objectRowCache: RowCache? { nil }
    var statistics: StoreStatistics { counters.withLock { $0 } }
    func resetStatistics() { counters.withLock { $0 = StoreStatistics() } }
    var indexOrder: (any IndexOrderReading)? { nil }

    func snapshot() -> State { state.withLock { $0 } }

    private func noteRowsRead(_ count: Int) {
        counters.withLock { $0.rowsRead += UInt64(count) }
    }

    // MARK: Reading

    func row(for id: ObjectID, maxAge: TimeInterval?) throws -> StoredRow? {
        noteRowsRead(1)
        return state.withLock { $0.rows[id.info.rootCode]?[id.primaryKey] }.flatMap { matching($0, id) }
    }

    func rows(for ids: [ObjectID], maxAge: TimeInterval?) throws -> [StoredRow?] {
        let state = snapshot()
        noteRowsRead(ids.count)
        return ids.map { id in state.rows[id.info.rootCode]?[id.primaryKey].flatMap { matching($0, id) } }
    }

    /// `row` when it is of `id`'s entity or a sub-entity.
    private func matching(_ row: StoredRow, _ id: ObjectID) -> StoredRow? {
        guard let info = model.infosByCode[row.entityCode], id.info.includes(info) else { return nil }
        return row
    }

    func members(of relationship: EntityInfo.Relationship, owner: ObjectID) throws -> [ObjectID] {
        members(snapshot(), relationship, owner: owner.primaryKey)
    }

    /// The members of `relationship` of the row `owner` in `state`: for one-to-many, the rows
    /// pointing at it, by order key (ordered) then primary key, as a file store's foreign-key
    /// index has them; for many-to-many, the join side's list.
    func members(_ state: State, _ relationship: EntityInfo.Relationship, owner: Int64) -> [ObjectID] {
        switch relationship.kind {
        case .toOne:
            return []
        case .oneToMany:
            guard let destination = model.info(named: relationship.destinationName),
                  let inverse = destination.inverse(of: relationship),
                  let tree = inverse.foreignKeyTree, let keys = state.referrers[tree]?[owner] else { return [] }
            let rows = state.rows[destination.rootCode] ?? [:]
            var found: [(order: Int64, key: Int64, code: UInt16)] = []
            for key in keys {
                guard let row = rows[key] else { continue }
                var order: Int64 = 0
                if let slot = inverse.orderSlot, slot < row.columns.count, case .value(.int(let value)) = row.columns[slot] { order = value }
                found.append((order, key, row.entityCode))
            }
            found.sort { ($0.order, $0.key) < ($1.order, $1.key) }
            return found.compactMap { references.objectID(code: $0.code, key: $0.key) }
        case .manyToMany:
            guard let tree = relationship.joinTree else { return [] }
            let list = state.joins[JoinSide(tree: tree, side: relationship.joinSide)]?[owner] ?? []
            return list.compactMap { references.objectID(code: $0.code, key: $0.key) }
        }
    }

    func fetch(_ query: StoreQuery) throws -> (rows: [FetchedRow], statistics: FetchStatistics) {
        let state = snapshot()
        let info = query.entity
        var evaluator = PredicateEvaluator(resolver: InMemorySubjectResolver(store: self, state: state))
        let rows = state.rows[info.rootCode] ?? [:]
        var found: [FetchedRow] = []
        var examined = 0
        // Without a sort, the rows come in primary-key order and the fetch stops at its limit.
        let limit = query.sortDescriptors.isEmpty ? query.rowLimit : nil
        let predicate = query.predicate  // read once: a prepared request's values are substituted on each read
        for key in rows.keys.sorted() {
            if let limit, found.count >= limit { break }
            guard let row = rows[key] else { continue }
            examined += 1
            if examined % 256 == 0, let onProgress = query.onProgress { try onProgress(examined) }
            let matchesEntity = query.includesSubentities ? info.descendantCodes.contains(row.entityCode) : row.entityCode == info.code
            guard matchesEntity, let concrete = model.infosByCode[row.entityCode] else { continue }
            let id = ObjectID(info: concrete, store: identifier, key: key)
            let subject = InMemorySubject(subjectID: id, entity: concrete, row: row, store: self, state: state)
            if let predicate, try !evaluator.evaluate(predicate, subject) { continue }
            let values = try query.keyPaths.map { try evaluator.follow($0, from: .object(id), start: subject) }
            found.append(FetchedRow(id: id, row: row, values: values))
        }
        noteRowsRead(examined)
        let statistics = FetchStatistics(planText: "SCAN \(info.name) (in memory)", rowsExamined: examined, rowsMatched: found.count)
        return (found, statistics)
    }

    func forEachKey(_ info: EntityInfo, includesSubentities: Bool, _ body: (Int64, UInt16) throws -> Void) throws {
        let rows = snapshot().rows[info.rootCode] ?? [:]
        for key in rows.keys.sorted() {
            guard let code = rows[key]?.entityCode else { continue }
            if includesSubentities ? info.descendantCodes.contains(code) : code == info.code { try body(key, code) }
        }
    }

    func countsByOwner(_ relationship: EntityInfo.Relationship, of entity: EntityInfo) throws -> [(owner: Int64, count: Int)] {
        let state = snapshot()
        guard let tree = relationship.foreignKeyTree, let owners = state.referrers[tree] else { return [] }
        let rows = state.rows[entity.rootCode] ?? [:]
        return owners.keys.sorted().compactMap { owner in
            let count = owners[owner]?.filter { rows[$0].map { entity.descendantCodes.contains($0.entityCode) } ?? false }.count ?? 0
            return count > 0 ? (owner, count) : nil
        }
    }

    func estimatedCount(_ info: EntityInfo) throws -> Int {
        state.withLock { $0.rows[info.rootCode]?.count ?? 0 }
    }

    func dataVersion() throws -> UInt64 { state.withLock { $0.version } }

    /// An in-memory store is never migrated: nothing is ever pending.
    func pendingDerivations() throws -> [String] { [] }
    func clearPendingDerivations() throws {}

    // MARK: Batch requests

    func batchInsert(_ info: EntityInfo, _ request: BatchInsertRequest) throws -> BatchInsertResult {
        throw StoreError.unsupported("batch requests need a file store; \(name) is in memory (insert the objects in a context)")
    }

    func batchUpdate(_ info: EntityInfo, _ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        throw StoreError.unsupported("batch requests need a file store; \(name) is in memory (change the objects in a context)")
    }

    func batchDelete(_ info: EntityInfo, _ request: BatchDeleteRequest) throws -> BatchDeleteResult {
        throw StoreError.unsupported("batch requests need a file store; \(name) is in memory (delete the objects in a context)")
    }
}

/// A row of an in-memory store seen by a predicate, in one snapshot.
struct InMemorySubject: PredicateSubject {
    let subjectID: ObjectID
    let entity: EntityInfo
    let row: StoredRow
    let store: InMemoryStore
    let state: InMemoryStore.State

    func attributeValue(slot: Int) throws -> AttributeValue {
        guard slot < row.columns.count, case .value(let value) = row.columns[slot] else { return .null }
        return value
    }

    func toOneTarget(_ relationship: EntityInfo.Relationship) throws -> ObjectID? {
        guard relationship.slot < row.columns.count, case .reference(let code, let key) = row.columns[relationship.slot] else { return nil }
        return store.references.objectID(code: code, key: key)
    }

    func toManyMembers(_ relationship: EntityInfo.Relationship) throws -> [ObjectID] {
        store.members(state, relationship, owner: subjectID.primaryKey)
    }
}

struct InMemorySubjectResolver: SubjectResolver {
    let store: InMemoryStore
    let state: InMemoryStore.State

    func subject(for id: ObjectID) throws -> PredicateSubject? {
        guard id.storeIdentifier == store.identifier, let row = state.rows[id.info.rootCode]?[id.primaryKey],
              let info = store.model.infosByCode[row.entityCode] else { return nil }
        return InMemorySubject(subjectID: ObjectID(info: info, store: store.identifier, key: id.primaryKey), entity: info, row: row,
                               store: store, state: state)
    }
}
