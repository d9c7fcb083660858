import ArborEngine
import Foundation

extension BTreeStore {
    /// Objects written per `SaveWriter` run: bounds the memory of the per-save bookkeeping
    /// (the transaction's dirty pages still grow with the whole request).
    static let batchChunk = 16_384

    func batchInsert(_ info: EntityInfo, _ request: BatchInsertRequest, chunkSize: Int = batchChunk) throws -> BatchInsertResult {
        guard !isReadOnly else { throw StoreError.readOnlyStore(path: path) }
        let constraint = try ConflictResolver.constraint(of: info, request)
        let pull: (inout BatchInsertObject) throws -> Bool
        switch request.source {
        case .objects(let objects):
            var iterator = objects.makeIterator()
            pull = { object in
                guard let values = iterator.next() else { return false }
                for (key, value) in values { object.setValue(value, forKey: key) }
                return true
            }
        case .handler(let handler):
            pull = { object in try !handler(&object) }
        }
        var count = 0
        var ids: [ObjectID]? = request.resultType == .objectIDs ? [] : nil
        var inserted = ObjectIDSet(), updated = ObjectIDSet()
        var insertedCount = 0, ignoredCount = 0
        // One object refilled for every row: its array of columns is cleared, not reallocated.
        var object = BatchInsertObject(info: info)
        do {
            let tx = try database.beginWrite()
            do {
                var checker = BatchReferenceChecker()
                let writer = SaveWriter(store: self, tx: tx)
                writer.keepsWrittenRows = false
                writer.defersRowWrites = true
                // Conflicts on the constraint are resolved against the stored rows (and within
                // each chunk) before rows are written: its entries need no second check.
                writer.resolvedUniqueIndex = constraint
                if info.indexes.contains(where: \.isText) { writer.textTermWorker = TextTermWorker() }
                var finished = false
                while !finished {
                    // Rows are complete and their references resolved here, so the writer
                    // numbers and writes them directly: no temporary IDs, no save request.
                    var chunk: [CompletedObject] = []
                    chunk.reserveCapacity(chunkSize)
                    var failures: [ValidationFailure] = []
                    while chunk.count < max(chunkSize, 1) {
                        object.reset()
                        guard try pull(&object) else {
                            finished = true
                            break
                        }
                        let completed = try complete(object, at: count, tx: tx, checker: &checker, failures: &failures,
                                                     recordsSetSlots: constraint != nil)
                        // Every object is new unless conflicts are resolved: its required values
                        // are checked now, so all problems come in request order.
                        if constraint == nil { failures.append(contentsOf: completed.missingValues(info, columns: completed.columns, id: nil)) }
                        chunk.append(completed)
                        count += 1
                        if failures.count >= BatchRequestLimits.failures { break }
                    }
                    if !failures.isEmpty { throw ValidationError(failures: failures) }
                    guard !chunk.isEmpty else { break }
                    let chunkStart = count - chunk.count
                    // Which objects are new, and which go to a stored object (or an earlier one).
                    var resolver = ConflictResolver(store: self, tx: tx, info: info, index: constraint, rule: request.conflictRule)
                    try resolver.resolve(chunk, firstIndex: chunkStart)
                    if !resolver.failures.isEmpty { throw ValidationError(failures: resolver.failures) }
                    writer.written = [:]
                    for update in resolver.updates {
                        try writer.writeRow(update.id, columns: update.columns, old: update.old)
                    }
                    // Only objects of the request's entity are updated (ConflictResolver).
                    updated.append(store: identifier, info: info, keys: resolver.updates.map(\.id.primaryKey))
                    var rows = resolver.inserts.map(\.columns)
                    let firstKey = try writer.lastPrimaryKey(root: info.rootName) + 1
                    let rowCount = rows.count
                    do {
                        try writer.insertRows(&rows, of: info, firstKey: firstKey)
                    } catch var error as ValidationError {
                        // Uniqueness: name the new objects by their position, not a primary key.
                        for index in error.failures.indices {
                            guard let id = error.failures[index].objectID, id.info.rootName == info.rootName,
                                  id.primaryKey >= firstKey, id.primaryKey - firstKey < Int64(rowCount) else { continue }
                            error.failures[index].batchIndex = resolver.inserts[Int(id.primaryKey - firstKey)].batchIndex
                            error.failures[index].objectID = nil
                        }
                        throw error
                    }
                    insertedCount += rowCount
                    ignoredCount += resolver.ignoredCount
                    inserted.append(store: identifier, info: info, keys: (0..<Int64(rowCount)).map { firstKey + $0 })
                    if ids != nil {
                        for target in resolver.targets {
                            switch target {
                            case .inserted(let position): ids?.append(ObjectID(info: info, store: identifier, key: firstKey + Int64(position)))
                            case .existing(let id): ids?.append(id)
                            }
                        }
                    }
                }
                try writer.flushIndexes()
                try tx.commit()
                // New rows are in no cache; updated ones are dropped from it.
                rowCache.applyBatch(changed: updated, snapshot: tx.transactionID)
            } catch {
                tx.abort()
                throw error
            }
        } catch { throw storeError(error, path: path) }
        return BatchInsertResult(count: count, objectIDs: ids, insertedCount: insertedCount, updatedCount: count - insertedCount - ignoredCount,
                                 ignoredCount: ignoredCount, changes: ObjectChanges(inserted: inserted, updated: updated))
    }

    /// The object's full row: defaults for what it did not set, its problems (and references
    /// to rows that are not stored) appended to `failures`. Required values are checked once
    /// it is known whether the object is new (`ConflictResolver`).
    /// `recordsSetSlots`: the slots the object set are kept (for an update of a stored object).
    private func complete(_ object: BatchInsertObject, at index: Int, tx: WriteTransaction, checker: inout BatchReferenceChecker,
                          failures: inout [ValidationFailure], recordsSetSlots: Bool) throws -> CompletedObject {
        let info = object.info
        // A key with a problem already reported is not reported again.
        var reported = object.problems.isEmpty ? [] : Set(object.problems.map(\.key))
        for problem in object.problems {
            failures.append(ValidationFailure(objectID: nil, entity: info.name, key: problem.key, kind: problem.kind, batchIndex: index))
        }
        var columns = [ColumnValue](repeating: .null, count: info.columnCount)
        var setSlots: [Int] = []
        for attribute in info.attributes {
            if case .value(let set) = object.columns[attribute.slot] {
                columns[attribute.slot] = .value(set)
                if recordsSetSlots { setSlots.append(attribute.slot) }
            } else if let fallback = attribute.description.defaultValue {
                columns[attribute.slot] = .value(fallback)
            }
        }
        for relationship in info.relationships where relationship.kind == .toOne {
            guard let set = object.columns[relationship.slot] else { continue }
            if recordsSetSlots { setSlots.append(relationship.slot) }
            switch set {
            case .reference(let target):
                if try checker.exists(target, in: self, tx: tx) {
                    columns[relationship.slot] = .reference(code: target.info.code, key: target.primaryKey)
                } else if reported.insert(relationship.description.name).inserted {
                    failures.append(ValidationFailure(objectID: nil, entity: info.name, key: relationship.description.name,
                                                      kind: .danglingReference(target), batchIndex: index))
                }
            case .value(let value):
                columns[relationship.slot] = .value(value)
            }
        }
        return CompletedObject(columns: columns, setSlots: setSlots, batchIndex: index, reported: reported)
    }
}

/// One object of a batch insert with its full row.
struct CompletedObject {
    var columns: [ColumnValue]
    /// The slots the object set itself (what an update of a stored object takes).
    var setSlots: [Int]
    /// Its position in the request.
    var batchIndex: Int
    /// Keys with a problem already reported.
    var reported: Set<String>

    /// Failures for required attributes and to-one relationships that are nil in `columns`
    /// (of the object at `batchIndex`, or of the stored object `id` it updates).
    func missingValues(_ info: EntityInfo, columns: [ColumnValue], id: ObjectID?) -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        func fail(_ key: String) {
            guard !reported.contains(key) else { return }
            failures.append(ValidationFailure(objectID: id, entity: info.name, key: key, kind: .missingValue, batchIndex: id == nil ? batchIndex : nil))
        }
        for attribute in info.attributes where !attribute.description.isOptional && columns[attribute.slot].isNull {
            fail(attribute.description.name)
        }
        for relationship in info.relationships where relationship.kind == .toOne && !relationship.description.isOptional {
            if columns[relationship.slot].isNull { fail(relationship.description.name) }
        }
        return failures
    }
}

/// Which referenced rows a batch insert found stored, so each is read once.
struct BatchReferenceChecker {
    private var found: [UInt16: Set<Int64>] = [:]

    mutating func exists(_ id: ObjectID, in store: BTreeStore, tx: WriteTransaction) throws -> Bool {
        guard id.storeIdentifier == store.identifier else { return false }
        if found[id.info.rootCode]?.contains(id.primaryKey) == true { return true }
        guard try store.readRow(tx, id) != nil else { return false }
        found[id.info.rootCode, default: []].insert(id.primaryKey)
        return true
    }
}

extension SaveWriter {
    /// Writes `rows` of `info` (complete, references resolved; emptied as they are written) as new rows numbered from
    /// `firstKey` (the hierarchy's next primary key), with their index entries; checks unique
    /// indexes (for these rows and the others in `written`) and stores the advanced counter.
    /// - Throws: `ValidationError` naming the new rows (by primary key) that break a unique
    ///   index; storage errors.
    func insertRows(_ rows: inout [[ColumnValue]], of info: EntityInfo, firstKey: Int64) throws {
        orderAssignments = [:]
        let (lastKey, overflow) = firstKey.addingReportingOverflow(Int64(rows.count) - 1)
        guard firstKey > 0, !overflow else {
            throw StoreError.corruptStore(path: store.path, detail: "primary keys of \(info.rootName) are exhausted")
        }
        for offset in rows.indices {
            // Taken out of the chunk, so the row's array is uniquely referenced when written.
            var columns: [ColumnValue] = []
            swap(&columns, &rows[offset])
            try writeRow(ObjectID(info: info, store: store.identifier, key: firstKey + Int64(offset)), columns: consume columns, old: nil)
        }
        counters[info.rootName] = lastKey
        // Rows append in key order; unique indexes are checked now, so they go now. Other
        // indexes take entries anywhere: gathered over chunks, each is rewritten once in a while.
        try flushRows()
        let flushesAll = indexChangesAreDue
        try flushIndexes(only: { flushesAll || $0.isUnique })
        try checkUniqueness()
        if !failures.isEmpty { throw ValidationError(failures: failures) }
        try storeCounters()
    }
}
