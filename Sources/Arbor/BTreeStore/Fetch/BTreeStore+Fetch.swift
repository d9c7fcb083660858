import ArborEngine
import Foundation

/// One fetched row with the values of the key paths the request needs (sort keys first).
struct FetchedRow {
    var id: ObjectID
    var row: StoredRow?
    var values: [PredicateValue]

    /// The scalar value at `index` (nil for objects and collections).
    func scalar(_ index: Int) -> AttributeValue {
        if case .scalar(let value) = values[index] { return value }
        return .null
    }
}

extension BTreeStore {
    /// Plans `query` (`QueryPlanner.plan(_:store:)`, order and limit included) and reads its
    /// rows in one snapshot, with the values of its key paths (sort keys first).
    /// - Complexity: O(log n + rows examined); a scan when no index covers the predicate.
    /// Without `needsRows`, a row the search answers by its key alone (no residual, no key
    /// path to follow) is not read: its `FetchedRow` has no row.
    func fetchRows(_ query: StoreQuery) throws -> (rows: [FetchedRow], statistics: FetchStatistics) {
        let found = FetchAccumulator()
        found.needsRows = query.needsRows
        let statistics = try walkMatches(QueryPlanner.plan(query, store: self), predicate: query.boundPredicate,
                                         includesSubentities: query.includesSubentities, keyPaths: query.keyPaths,
                                         onProgress: query.onProgress, into: found, transaction: nil)
        // Moved out, so the caller holds the only reference (appending then copies nothing).
        let result = found.rows
        found.rows = []
        return (result, statistics)
    }

    /// Plans `query` as `fetchRows` does and visits its matches in one snapshot: `slots` loaded
    /// from each row where it lies in its page, then `visit` called with the row's ID. `query`
    /// has no key paths (its caller sorts nothing).
    /// - Complexity: as `fetchRows`, decoding only the columns of `slots`; keeps no row.
    func visitMatches(_ query: StoreQuery, loading slots: RowSlots, _ visit: (ObjectID) throws -> Void) throws -> FetchStatistics {
        precondition(query.keyPaths.isEmpty, "a visit follows no key path")
        return try withoutActuallyEscaping(visit) { visit in
            let found = FetchAccumulator()
            found.visit = RowVisit(slots: slots, body: visit)
            return try walkMatches(QueryPlanner.plan(query, store: self), predicate: query.boundPredicate,
                                   includesSubentities: query.includesSubentities, keyPaths: [],
                                   onProgress: query.onProgress, into: found, transaction: nil)
        }
    }

    /// The primary keys and entity codes of the rows of `info` (and its sub-entities when
    /// asked) that satisfy `predicate`, in the order the plan reads them, read in `tx` (a write
    /// transaction's own state, for a batch request): planned and evaluated as a fetch, keeping
    /// 10 bytes per match instead of the row.
    func matchingKeys(_ info: EntityInfo, predicate: ObjectPredicate?, includesSubentities: Bool,
                      in tx: Transaction) throws -> [(key: Int64, code: UInt16)] {
        let found = FetchAccumulator()
        found.keysOnly = true
        found.needsRows = false
        _ = try walkMatches(QueryPlanner.plan(predicate, for: info, store: self), predicate: BoundPredicate(predicate),
                            includesSubentities: includesSubentities, keyPaths: [], onProgress: nil, into: found, transaction: tx)
        return found.keys
    }

    /// Reads the rows `plan` finds into `found` (rows, or keys only), evaluating what the plan
    /// leaves of `predicate`, in `transaction` when given, else in a snapshot of its own;
    /// returns what it did. (`predicate` is bound only where the plan leaves it whole.)
    /// The plan is consumed: the closures below capture only the parts they read, so the plan
    /// moves into the statistics at the end without a copy.
    private func walkMatches(_ plan: consuming QueryPlan, predicate bound: BoundPredicate, includesSubentities: Bool, keyPaths: [[String]],
                             onProgress: ((Int) throws -> Void)?, into found: FetchAccumulator,
                             transaction: Transaction?) throws -> FetchStatistics {
        let info = plan.entity
        let limit = plan.limit
        let access = plan.access, keyFilters = plan.keyFilters, ordering = plan.ordering
        // Residual conditions run cheapest first, whatever order they were written in.
        switch plan.residual {
        case .whole: found.residual = bound.predicate?.orderedByCost()
        case .part(let rest): found.residual = rest?.orderedByCost()
        }
        found.memberChecks = plan.memberChecks
        /// Makes the rows decide the whole predicate (when the access path answered nothing).
        func evaluateWhole() {
            guard let predicate = bound.predicate else { return }
            let (checks, rest) = QueryPlanner.memberChecks(in: predicate, on: info, store: self)
            found.memberChecks = checks
            found.residual = rest?.orderedByCost()
        }
        // Member checks and a residual that reads no column of the candidate (a SUBQUERY the
        // planner left to the evaluator) are checked before the row is read: only matches are
        // read. Not when other conditions remain: cheap column checks should still go first.
        let rowFree = found.residual?.readsOnlyToMany(of: info) ?? true
        // Nothing to evaluate or follow: the key says which rows match, and the row is read
        // only when asked for.
        found.keysSuffice = !found.needsRows && found.residual == nil && found.memberChecks.isEmpty && keyPaths.isEmpty
        // Counts, rows and what the walk may change in a class (`found`): the per-entry
        // closures below would otherwise capture variables, each boxed on the heap, and each
        // access to one costs a run-time exclusivity check.
        do {
            func read(_ tx: Transaction) throws {
                if transaction == nil { rowCache.observe(snapshot: tx.snapshotID) }
                var evaluator = PredicateEvaluator(resolver: RowResolver(store: self, tx: tx))
                /// Whether the row `key` passes every member check.
                func passesMemberChecks(_ key: Int64) throws -> Bool {
                    found.memberChecksRun += 1
                    for check in found.memberChecks where try !check.passes(owner: key, store: self, tx: tx, evaluator: &evaluator) { return false }
                    return true
                }
                /// The entity of a row of entity `code`, when it is one the fetch returns (the
                /// fetched entity itself needs no lookup by code: the common case).
                func fetchedEntity(_ code: UInt16) -> EntityInfo? {
                    if code == info.code { return info }
                    return includesSubentities && info.descendantCodes.contains(code) ? model.infosByCode[code] : nil
                }
                /// Adds the row `key` of entity `code` without reading it (`keysSuffice`):
                /// whether it is of the fetched entities.
                @discardableResult
                func considerKey(_ key: Int64, code: UInt16) throws -> Bool {
                    found.examined += 1
                    found.unread += 1
                    guard let concrete = fetchedEntity(code) else { return false }
                    found.append(FetchedRow(id: ObjectID(info: concrete, storeBits: identifierBits, key: key), row: nil, values: []))
                    return true
                }
                /// Whether the row matched (and was added to the result).
                /// `checked`: the member checks and residual already held (checked before the read).
                /// `residual`: the walk's (passed in, so that the per-row path reads a parameter,
                /// not a captured variable, which costs a run-time exclusivity check).
                @discardableResult
                func consider(_ key: Int64, _ row: StoredRow, checked: Bool, residual: ObjectPredicate?) throws -> Bool {
                    found.examined += 1
                    if found.examined % 256 == 0, let onProgress { try onProgress(found.examined) }
                    guard let concrete = fetchedEntity(row.entityCode) else { return false }
                    try row.checkColumnCount(of: concrete, tree: info.rowTree, key: key)
                    let id = ObjectID(info: concrete, storeBits: identifierBits, key: key)
                    // A subject only when a residual or a sort key path reads through it.
                    guard (!checked && residual != nil) || !keyPaths.isEmpty else {
                        if !checked, !found.memberChecks.isEmpty, try !passesMemberChecks(key) { return false }
                        found.append(FetchedRow(id: id, row: row, values: []))
                        return true
                    }
                    let subject = RowSubject(subjectID: id, entity: concrete, row: row, store: self, tx: tx)
                    if !checked, let residual, try !evaluator.evaluate(residual, subject) { return false }
                    if !checked, !found.memberChecks.isEmpty, try !passesMemberChecks(key) { return false }
                    let values = try keyPaths.map { try evaluator.follow($0, from: .object(id), start: subject) }
                    found.append(FetchedRow(id: id, row: row, values: values))
                    return true
                }
                /// For a visit (`found.visit`): whether the stored row `bytes` of `pk` matches
                /// (its entity, then what is left to evaluate unless `checked`); if so, its slots
                /// are loaded and its ID returned.
                func visitStored(_ pk: Int64, _ bytes: UnsafeRawBufferPointer, _ visit: RowVisit, checked: Bool,
                                 residual: ObjectPredicate?) throws -> ObjectID? {
                    found.examined += 1
                    if found.examined % 256 == 0, let onProgress { try onProgress(found.examined) }
                    guard let code = RowCodec.entityCode(ofRow: bytes) else {
                        throw StoreError.corruptRow(location: "\(info.rowTree)/\(pk)", detail: "malformed row header")
                    }
                    guard let concrete = fetchedEntity(code) else { return nil }
                    let id = ObjectID(info: concrete, storeBits: identifierBits, key: pk)
                    if !checked {
                        if let residual {
                            let row = try RowCodec.decode(bytes, tree: info.rowTree, key: pk)
                            guard try evaluator.evaluate(residual, RowSubject(subjectID: id, entity: concrete, row: row, store: self, tx: tx)) else { return nil }
                        }
                        if !found.memberChecks.isEmpty, try !passesMemberChecks(pk) { return nil }
                    }
                    // Named only when malformed (as `RowCodec.decode(_:tree:key:)` does): a closure
                    // naming the row would capture the entity, a retain and a release per row.
                    do { try visit.slots.load(encoded: bytes) } catch {
                        throw StoreError.corruptRow(location: "\(info.rowTree)/\(pk)", detail: error.detail)
                    }
                    found.noteVisited()
                    return id
                }
                /// Takes the stored row `bytes` of `pk`, read where it lies in its page: visited
                /// (`found.visit`), or decoded and considered. Whether it matched.
                @discardableResult
                func take(_ pk: Int64, _ bytes: UnsafeRawBufferPointer, checked: Bool, residual: ObjectPredicate?) throws -> Bool {
                    if let visit = found.visit {
                        guard let id = try visitStored(pk, bytes, visit, checked: checked, residual: residual) else { return false }
                        defer { visit.slots.endRow() }  // `bytes` lie in a page that outlives only this call
                        try visit.body(id)
                        return true
                    }
                    let row = try found.arena._withUnsafeGuaranteedRef { try RowCodec.decode(bytes, tree: info.rowTree, key: pk, arena: $0) }
                    return try consider(pk, row, checked: checked, residual: residual)
                }
                /// Considers the stored row `bytes` of `pk`: by its key and entity code alone when
                /// they suffice, else taken (`take`).
                func considerStored(_ pk: Int64, _ bytes: UnsafeRawBufferPointer) throws {
                    if found.keysSuffice {
                        guard let code = RowCodec.entityCode(ofRow: bytes) else {
                            throw StoreError.corruptRow(location: "\(info.rowTree)/\(pk)", detail: "malformed row header")
                        }
                        try considerKey(pk, code: code)
                    } else {
                        try take(pk, bytes, checked: false, residual: found.residual)
                    }
                }
                /// Reads every row of the entity's tree.
                func scan() throws {
                    try tx.tree(info.rowTree).forEachUnsafe { key, value in
                        if let limit, found.matched >= limit { return false }
                        guard let pk = IndexKeys.trailingKey(key) else {
                            throw StoreError.corruptRow(location: info.rowTree, detail: "malformed row key")
                        }
                        try considerStored(pk, value)
                        return true
                    }
                }
                switch access {
                case .scan:
                    try scan()
                case .text(let search):
                    let rowCount = try tx.tree(info.rowTree).count
                    var entries = 0
                    guard let (candidates, complete) = try textCandidates(search, rowCount: rowCount, tx, examined: &entries) else {
                        // Too common a term: every row is read once instead, and the whole
                        // predicate evaluated on it (the index answered nothing).
                        found.textIndexSkipped = "\(search.index.tree) not used: its rarest prefix is in more than a quarter of the rows"
                        evaluateWhole()
                        found.keysSuffice = !found.needsRows && found.residual == nil && found.memberChecks.isEmpty && keyPaths.isEmpty
                        try scan()
                        break
                    }
                    found.examined += entries
                    if search.isExact && !complete {
                        // A probe left out: the rows decide the conjuncts the index did not.
                        evaluateWhole()
                        found.keysSuffice = false
                    }
                    if found.keysSuffice && info.rootCode == info.code && info.descendantCodes.count <= 1 {
                        // Entries of a hierarchy of one entity are that entity's rows: the keys
                        // answer (object IDs, counts) without a row read.
                        for pk in candidates {
                            if let limit, found.matched >= limit { break }
                            try considerKey(pk, code: info.code)
                        }
                        break
                    }
                    try visitRows(tx, tree: info.rowTree, sortedKeys: candidates) { pk, bytes in
                        if let limit, found.matched >= limit { return false }
                        try considerStored(pk, bytes)
                        return true
                    }
                case .index(let index, let ranges):
                    // Ranges of one index are disjoint and a row has one entry in it: each row
                    // is met once.
                    var seen: Set<Int64>?
                    try walk(index, ranges, keyFilters, &seen)
                case .union(let branches):
                    var seen: Set<Int64>? = []
                    for branch in branches {
                        guard case .index(let index, let ranges) = branch.access else { continue }
                        try walk(index, ranges, branch.keyFilters, &seen)
                    }
                case .rows(let named):
                    // A row counts when it has the entity the predicate named it with.
                    try visitRows(tx, tree: info.rowTree, keys: named.keys) { pk, bytes in
                        if let limit, found.matched >= limit { return false }
                        guard let code = RowCodec.entityCode(ofRow: bytes) else {
                            throw StoreError.corruptRow(location: "\(info.rowTree)/\(pk)", detail: "malformed row header")
                        }
                        if named.contains(pk, code: code) { try take(pk, bytes, checked: false, residual: found.residual) } else { found.examined += 1 }
                        return true
                    }
                case .related(let search):
                    var examined = 0
                    let owners = try relatedKeys(search, tx, examined: &examined)
                    found.examined += examined
                    try visitRows(tx, tree: info.rowTree, keys: owners) { pk, bytes in
                        if let limit, found.matched >= limit { return false }
                        try take(pk, bytes, checked: false, residual: found.residual)
                        return true
                    }
                }

                /// Reads the rows behind the entries of `ranges` of `index` (each once).
                func walk(_ index: EntityInfo.Index, _ ranges: [KeyRange], _ keyFilters: [KeyFilter], _ seen: inout Set<Int64>?) throws {
                    // One cursor for every row read: consecutive reads share the upper levels
                    // of their descents (`Cursor.withValue(forKey:_:)`).
                    let rows = try tx.tree(info.rowTree).makeCursor()
                    let indexTree = try tx.tree(index.tree)
                    // Locals in the per-entry loop, read once: not through `found` (a load, and a
                    // retain of the residual) nor a captured variable (a run-time exclusivity
                    // check) at every entry.
                    // The ordered walk's sort position and count only: binding the whole tuple
                    // per entry would copy (and retain) its index description.
                    let reverse = ordering?.ascending == false
                    let ordering = ordering.map { (position: $0.position, count: $0.count) }
                    let keys = keys, entityCode = info.code, rootCode = info.rootCode
                    let walkResidual = found.residual, walkKeysSuffice = found.keysSuffice
                    let descendantCodes = includesSubentities ? info.descendantCodes : []
                    var matched = found.matched, skipped = 0
                    // Conditions the key answers, checked by the scan itself: an entry one of
                    // them rejects is skipped without its row being read (another branch of a
                    // union may still find the row).
                    let filterSet = keyFilters.isEmpty ? nil : KeyFilterSet(keyFilters, onProgress: onProgress)
                    filterSet?.examined = found.examined
                    defer { found.examined += skipped + (filterSet?.rejected ?? 0) }
                    // For an ordered walk: the sort column's encoded bytes in the last match.
                    var lastSortKey: [UInt8]?
                    // One cursor moves through every range (an IN list's points, in key order).
                    try indexTree.makeCursor().scan(reverse ? ranges.reversed() : ranges, reverse: reverse, filter: filterSet) { key, value in
                        if let ordering, matched >= ordering.count {
                            // Past the limit: stop at the first entry whose sort value differs.
                            if KeyFilterSet.sortValue(of: key, at: ordering.position, differsFrom: lastSortKey) { return false }
                        } else if let limit, matched >= limit {
                            return false
                        }
                        guard let code = keys.entryCode(from: value, root: rootCode) else {
                            throw StoreError.corruptRow(location: index.tree, detail: "malformed index entry")
                        }
                        // The entity's own code first: a set lookup only for sub-entities.
                        guard code == entityCode || descendantCodes.contains(code) else { return true }
                        // The primary key ends the entry; found by walking its components,
                        // so only for entries the filters kept.
                        guard let pkStart = TupleKey.lastComponentStart(in: key), let pk = IndexKeys.integer(in: key, at: pkStart) else {
                            throw StoreError.corruptRow(location: index.tree, detail: "malformed index entry")
                        }
                        if seen != nil, seen?.insert(pk).inserted == false { return true }
                        if walkKeysSuffice {
                            if try considerKey(pk, code: code) {
                                matched += 1
                                if let limit, matched >= limit { return false }
                            }
                            filterSet?.examined = found.examined + skipped
                            return true
                        }
                        var checked = false
                        if rowFree, !found.memberChecks.isEmpty || walkResidual != nil, let concrete = model.infosByCode[code] {
                            if let residual = walkResidual {
                                let subject = RowSubject(subjectID: ObjectID(info: concrete, storeBits: identifierBits, key: pk), entity: concrete,
                                                         row: nil, store: self, tx: tx)
                                guard try evaluator.evaluate(residual, subject) else {
                                    skipped += 1
                                    return true
                                }
                            }
                            guard try passesMemberChecks(pk) else {
                                skipped += 1
                                return true
                            }
                            checked = true
                        }
                        guard let taken = try withRow(rows, pk, endingEntry: key, at: pkStart, {
                            try take(pk, $0, checked: checked, residual: walkResidual)
                        }) else {
                            throw StoreError.corruptRow(location: index.tree, detail: "entry for missing row \(pk)")
                        }
                        if taken {
                            matched += 1
                            if let ordering {
                                lastSortKey = TupleKey.componentRange(in: key, at: ordering.position).map { Array(key[$0]) }
                                // Past the limit: the walk must see the first entry with a new sort value, to stop there.
                                if matched >= ordering.count { filterSet?.boundary = (ordering.position, lastSortKey) }
                            } else if let limit, matched >= limit {
                                return false
                            }
                        }
                        filterSet?.examined = found.examined + skipped
                        return true
                    }
                }
            }
            if let transaction { try read(transaction) } else { try reading(read) }
        } catch { throw storeError(error, path: path) }
        rowCache.noteRowsRead(found.examined - found.unread)
        let examined = found.examined, matched = found.matched
        if let skipped = found.textIndexSkipped { plan = QueryPlan(entity: info, access: .scan, usedConditions: [.text(skipped)]) }
        // The member checks the walk ran (those the rows took over too), for `explain`.
        plan.memberChecks = found.memberChecks
        let suggestion = FetchStatistics.suggestion(for: plan, conditionKeys: { QueryPlanner.conditionKeys(bound.predicate, for: info, store: self) },
                                                    textHint: { QueryPlanner.textIndexHint(bound.predicate, for: info) },
                                                    examined: examined, matched: matched)
        return FetchStatistics(plan: plan, rowsExamined: examined, rowsMatched: matched, suggestion: suggestion,
                               memberChecks: found.memberChecksRun)
    }

    /// `body` over the stored bytes of row `pk`, read through `rows` (a cursor on its row tree)
    /// and looked up by the part of `entry` from `pkStart` on: an index, foreign-key or join
    /// entry ends with the row's key as the row tree encodes it (one store, one key format), so
    /// no key is encoded; an entry encoded otherwise falls back to encoding the key. nil when
    /// the row is missing.
    func withRow<R>(_ rows: Cursor, _ pk: Int64, endingEntry entry: UnsafeRawBufferPointer, at pkStart: Int,
                    _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        if let result = try rows.withValue(forKey: UnsafeRawBufferPointer(rebasing: entry[pkStart...]), body) { return result }
        return try keys.rowKey(pk).withUnsafeBytes { try rows.withValue(forKey: $0, body) }
    }

    /// Entries per owner key in a foreign-key tree, in owner order, counting only rows of
    /// `entity` (or its sub-entities). Reads index entries only.
    func countByOwner(tree: String, entity: EntityInfo) throws -> [(owner: Int64, count: Int)] {
        // The current run's owner component as stored (an integer component is at most 9
        // bytes): an entry that starts with the same bytes has the same owner, and is counted
        // without decoding its key. Any other entry is decoded (and checked).
        let ownerBytes = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
        defer { ownerBytes.deallocate() }
        do {
            return try reading { tx in
                var result: [(owner: Int64, count: Int)] = []
                // The current owner's run is counted in locals, and appended when the next begins.
                var owner: Int64 = 0, count = 0, ownerLength = 0
                let entityCode = entity.code, rootCode = entity.rootCode
                try tx.tree(tree).forEachUnsafe { key, value in
                    guard let code = keys.entryCode(from: value, root: rootCode) else {
                        throw StoreError.corruptRow(location: tree, detail: "malformed foreign-key entry")
                    }
                    let sameOwner = ownerLength > 0 && ownerLength <= key.count
                        && compareBytes(UnsafeRawBufferPointer(start: key.baseAddress, count: ownerLength),
                                        UnsafeRawBufferPointer(start: ownerBytes, count: ownerLength)) == 0
                    if !sameOwner {
                        // The key starts with the owner's key.
                        guard let (entryOwner, end) = TupleKey.integer(in: key, at: 0), let base = key.baseAddress else {
                            throw StoreError.corruptRow(location: tree, detail: "malformed foreign-key entry")
                        }
                        if entryOwner != owner {
                            if count > 0 { result.append((owner, count)) }
                            (owner, count) = (entryOwner, 0)
                        }
                        ownerBytes.copyMemory(from: base, byteCount: end)
                        ownerLength = end
                    }
                    // The entity's own code first: a set lookup hashes (most of the cost per entry).
                    guard code == entityCode || entity.descendantCodes.contains(code) else { return true }
                    count += 1
                    return true
                }
                if count > 0 { result.append((owner, count)) }
                return result
            }
        } catch { throw storeError(error, path: path) }
    }

    /// The number of rows in `info`'s hierarchy: an upper bound on what a fetch can examine.
    /// - Complexity: O(1) (the catalog keeps each tree's count).
    func estimatedCount(_ info: EntityInfo) throws -> Int {
        do { return try reading { try $0.tree(info.rowTree).count } } catch { throw storeError(error, path: path) }
    }

    /// The plan a fetch of `info` with `predicate` would use.
    func explain(_ info: EntityInfo, predicate: ObjectPredicate?) -> String {
        QueryPlanner.plan(predicate, for: info, store: self).description
    }
}

/// A store fetch's running counts and rows. Unchecked: one fetch uses it, on one thread, and
/// its accesses never overlap.
final class FetchAccumulator {
    /// Index entries or rows visited.
    @exclusivity(unchecked) var examined = 0
    /// Rows that met the predicate.
    @exclusivity(unchecked) var rows: [FetchedRow] = []
    /// With `keysOnly`: the key and entity code of each row that met the predicate, instead of `rows`.
    @exclusivity(unchecked) var keys: [(key: Int64, code: UInt16)] = []
    @exclusivity(unchecked) var keysOnly = false
    /// Entries taken by their key alone, without reading their rows.
    @exclusivity(unchecked) var unread = 0
    /// Whether rows are wanted with their keys (see `fetchRows`'s `needsRows`).
    @exclusivity(unchecked) var needsRows = true
    /// The plan's member checks (all of the predicate's, once the rows decide it all).
    @exclusivity(unchecked) var memberChecks: [MemberCheck] = []
    /// Candidates whose member checks ran (each a probe or a walk of members per check).
    @exclusivity(unchecked) var memberChecksRun = 0
    /// How many rows met the predicate.
    @exclusivity(unchecked) private(set) var matched = 0

    /// For `visitMatches`: the columns to load and the visitor, instead of keeping rows.
    @exclusivity(unchecked) var visit: RowVisit?
    /// What rows must still be evaluated on (the plan's residual, cheapest conditions first;
    /// the whole predicate once the rows decide it all).
    @exclusivity(unchecked) var residual: ObjectPredicate?
    /// Whether an entry's key and entity code answer without its row (nothing to evaluate,
    /// check or follow, and no row asked for).
    @exclusivity(unchecked) var keysSuffice = false
    /// Where the rows read keep their columns: shared allocations, a few rows to each. Made
    /// with the first row kept (a fetch that keeps none, a count or an empty result, makes
    /// none); handed out unretained, as the accumulator keeps it for the whole walk.
    var arena: Unmanaged<RowArena> {
        if let madeArena { return madeArena }
        let made = RowArena()
        keptArena = made
        madeArena = Unmanaged.passUnretained(made)
        return Unmanaged.passUnretained(made)
    }
    @exclusivity(unchecked) private var keptArena: RowArena?
    @exclusivity(unchecked) private var madeArena: Unmanaged<RowArena>?
    /// Why a text index was given up for a scan of every row (for the plan `explain` shows).
    @exclusivity(unchecked) var textIndexSkipped: String?

    /// A row visited (`visit`) matched.
    @inline(__always)
    func noteVisited() { matched += 1 }

    @inline(__always)
    func append(_ row: FetchedRow) {
        matched += 1
        if keysOnly { keys.append((row.id.primaryKey, row.id.info.code)) } else { rows.append(row) }
    }
}

/// What `BTreeStore.visitMatches` does with each match: loads `slots`, then calls `body`.
struct RowVisit {
    let slots: RowSlots
    let body: (ObjectID) throws -> Void
}
