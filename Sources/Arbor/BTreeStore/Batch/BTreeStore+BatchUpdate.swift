import ArborEngine
import Foundation

/// One property a batch update sets, checked against the entity before anything is read.
struct UpdateAssignment {
    enum Source {
        /// The same column for every row (a constant, or a reference).
        case column(ColumnValue)
        /// An attribute's value computed from each row's attributes.
        case expression(CompiledExpression)
    }

    let key: String
    let slot: Int
    let source: Source
    /// For an attribute: its type and whether nil is allowed.
    let type: AttributeType?
    let isOptional: Bool
    /// For a to-one relationship: its target, to be checked once that its row is stored.
    let target: ObjectID?

    /// The assignments of `request` for `info`.
    /// - Throws: `ValidationError` listing every property that cannot be set as asked.
    static func resolve(_ properties: [String: BatchUpdateRequest.Value], for info: EntityInfo) throws -> [UpdateAssignment] {
        var result: [UpdateAssignment] = []
        var failures: [ValidationFailure] = []
        func fail(_ key: String, _ kind: ValidationFailureKind) {
            failures.append(ValidationFailure(objectID: nil, entity: info.name, key: key, kind: kind))
        }
        // In name order: the same request always checks (and reports) in the same order.
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            if let attribute = info.attribute(named: key) {
                let type = attribute.description.type, optional = attribute.description.isOptional
                switch value {
                case .value(let constant):
                    guard let coerced = constant.coerced(to: type) else {
                        fail(key, .typeMismatch(expected: type, found: constant.kindName))
                        continue
                    }
                    if coerced.isNull && !optional { fail(key, .missingValue) }
                    result.append(UpdateAssignment(key: key, slot: attribute.slot, source: .column(.value(coerced)), type: type,
                                                   isOptional: optional, target: nil))
                case .expression(let expression):
                    for name in expression.keys.sorted() where info.attribute(named: name) == nil {
                        fail(key, .invalidValue("the expression reads \"\(name)\", which is not an attribute of \(info.name)"))
                    }
                    guard let compiled = CompiledExpression(expression, slot: { info.attribute(named: $0)?.slot }) else { continue }
                    result.append(UpdateAssignment(key: key, slot: attribute.slot, source: .expression(compiled), type: type,
                                                   isOptional: optional, target: nil))
                case .object:
                    fail(key, .invalidValue("an attribute takes a value or an expression, not an object"))
                }
            } else if let relationship = info.relationship(named: key) {
                guard relationship.kind == .toOne else {
                    fail(key, .invalidValue("a batch update cannot set a to-many relationship; set its inverse to-one"))
                    continue
                }
                let target: ObjectID?
                switch value {
                case .object(let id): target = id
                case .value(.null): target = nil
                default:
                    fail(key, .invalidValue("a relationship takes an ObjectID or nil"))
                    continue
                }
                guard let target else {
                    if !relationship.description.isOptional { fail(key, .missingValue) }
                    result.append(UpdateAssignment(key: key, slot: relationship.slot, source: .column(.null), type: nil, isOptional: true, target: nil))
                    continue
                }
                guard relationship.destinationCodes.contains(target.info.code) else {
                    fail(key, .invalidValue("\(target) is not a \(relationship.destinationName)"))
                    continue
                }
                guard !target.isTemporaryID else {
                    fail(key, .danglingReference(target))
                    continue
                }
                result.append(UpdateAssignment(key: key, slot: relationship.slot, source: .column(.reference(code: target.info.code, key: target.primaryKey)),
                                               type: nil, isOptional: relationship.description.isOptional, target: target))
            } else {
                fail(key, .invalidValue("the entity has no property \"\(key)\""))
            }
        }
        if !failures.isEmpty { throw ValidationError(failures: failures) }
        return result
    }

    /// Sets this property in `columns` (a copy of `old`'s), or reports why it cannot for the
    /// row of `id` in `failures`.
    func apply(to columns: inout [ColumnValue], old: RowColumns, id: ObjectID, failures: inout [ValidationFailure]) {
        guard slot < columns.count, let value = newValue(old: old, id: id, failures: &failures) else { return }
        columns[slot] = value
    }

    /// The property's new column for the stored row `old` of `id`; nil, with the reason in
    /// `failures`, when it cannot be set.
    func newValue(old: RowColumns, id: ObjectID, failures: inout [ValidationFailure]) -> ColumnValue? {
        guard slot < old.count else { return nil }
        switch source {
        case .column(let column):
            return column
        case .expression(let compiled):
            let computed: AttributeValue
            do {
                computed = try compiled.evaluate(old)
            } catch {
                failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: key, kind: .invalidValue("\(compiled.expression): \(error)")))
                return nil
            }
            guard let type, let value = computed.coerced(to: type) else {
                failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: key,
                                                  kind: .typeMismatch(expected: type ?? .int64, found: "\(computed.kindName) \(computed)")))
                return nil
            }
            if value.isNull && !isOptional {
                failures.append(ValidationFailure(objectID: id, entity: id.entityName, key: key, kind: .missingValue))
                return nil
            }
            return .value(value)
        }
    }
}

extension BTreeStore {
    /// Rows read, computed and written per step of a batch update: bounds the rows held in
    /// memory at once (the transaction's dirty pages still grow with the whole request).
    static let updateChunk = 16_384
    /// Index changes a batch request gathers before applying them (about 40 bytes each).
    static let indexChangeBudget = 8_000_000
    /// Bytes of index changes a batch request gathers before applying them.
    static let indexByteBudget = 512 << 20

    func batchUpdate(_ info: EntityInfo, _ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        guard !isReadOnly else { throw StoreError.readOnlyStore(path: path) }
        let assignments = try UpdateAssignment.resolve(request.propertiesToUpdate, for: info)
        var matched: [Int64] = []
        var changed = ObjectIDSet()
        do {
            let tx = try database.beginWrite()
            do {
                for assignment in assignments {
                    guard let target = assignment.target else { continue }
                    guard target.storeIdentifier == identifier, try readRow(tx, target) != nil else {
                        throw ValidationError(failures: [ValidationFailure(objectID: nil, entity: info.name, key: assignment.key, kind: .danglingReference(target))])
                    }
                }
                matched = try matchingRowKeys(info, predicate: request.predicate, includesSubentities: request.includesSubentities, tx)
                let writer = SaveWriter(store: self, tx: tx)
                let slots = Set(assignments.map(\.slot))
                // The slots a row's write can change: the assigned ones, and the order column of
                // an assigned to-one relationship.
                var changedSlots = SlotMask(slots)
                for relationship in info.relationships where relationship.kind == .toOne && slots.contains(relationship.slot) {
                    if let orderSlot = relationship.orderSlot { changedSlots.insert(orderSlot) }
                }
                writer.keepsWrittenRows = false
                writer.defersRowWrites = true
                // Unique indexes the update can change are checked chunk by chunk.
                let checksUniqueness = info.indexes.contains { $0.isUnique && $0.slots.contains(where: slots.contains) }
                // Only attributes change: rows are rewritten in their encoded form (no order key moves).
                let patchesRows = assignments.allSatisfy { $0.type != nil }
                var replacements: [(slot: Int, value: ColumnValue)] = []
                var start = 0
                while start < matched.count {
                    let chunk = Array(matched[start..<min(start + Self.updateChunk, matched.count)])
                    start += chunk.count
                    var rows: [(ObjectID, StoredRow, [ColumnValue])] = []
                    var failures: [ValidationFailure] = []
                    try visitRows(tx, tree: info.rowTree, sortedKeys: chunk) { key, bytes in
                        let row = try RowCodec.decode(bytes, tree: info.rowTree, key: key)
                        guard let concrete = model.infosByCode[row.entityCode], info.includes(concrete) else {
                            throw StoreError.corruptRow(location: "\(info.rowTree)/\(key)", detail: "entity code \(row.entityCode) is not \(info.name) or a sub-entity")
                        }
                        let id = ObjectID(info: concrete, store: identifier, key: key)
                        if patchesRows {
                            // Attributes only: the row rewritten in its encoded form.
                            replacements.removeAll(keepingCapacity: true)
                            for assignment in assignments {
                                guard let value = assignment.newValue(old: row.columns, id: id, failures: &failures) else { continue }
                                if value != row.columns[assignment.slot] { replacements.append((assignment.slot, value)) }
                            }
                            if !replacements.isEmpty && failures.isEmpty {
                                try writer.patchRow(id, old: row, replacements: replacements, changed: changedSlots)
                                changed.insert(store: identifier, info: concrete, key: key)
                            }
                            return failures.count < BatchRequestLimits.failures
                        }
                        var columns = row.columns.values
                        var differs = false
                        for assignment in assignments {
                            assignment.apply(to: &columns, old: row.columns, id: id, failures: &failures)
                            if assignment.slot < columns.count && columns[assignment.slot] != row.columns[assignment.slot] { differs = true }
                        }
                        if differs { rows.append((id, row, columns)) }
                        return failures.count < BatchRequestLimits.failures
                    }
                    if !failures.isEmpty { throw ValidationError(failures: failures) }
                    // Written after the chunk was read: writing moves the cursor's pages.
                    for (id, old, columns) in rows {
                        try writer.writeRow(id, columns: columns, old: old, changed: changedSlots)
                        changed.insert(store: identifier, info: id.info, key: id.primaryKey)
                    }
                    // Rows go chunk by chunk (in key order, they append to the row tree's pages
                    // as they come); index changes fall anywhere in their indexes, so they are
                    // gathered over many chunks and each index is rewritten once per few million.
                    try writer.flushRows()
                    if checksUniqueness {
                        try writer.flushIndexes()
                        try writer.checkUniqueness()
                        if !writer.failures.isEmpty { throw ValidationError(failures: writer.failures) }
                    } else if writer.indexChangesAreDue {
                        try writer.flushIndexes()
                    }
                }
                try writer.flushIndexes()
                try tx.commit()
                rowCache.applyBatch(changed: changed, snapshot: tx.transactionID)
            } catch {
                tx.abort()
                throw error
            }
        } catch { throw storeError(error, path: path) }
        let ids = request.resultType == .objectIDs ? try objectIDs(of: info, keys: matched) : nil
        return BatchUpdateResult(count: matched.count, objectIDs: ids, changes: ObjectChanges(updated: changed))
    }

    /// The primary keys of the rows of `info` (and its sub-entities when asked) that match
    /// `predicate`, ascending, read in `tx`: every row's key from its header when there is no
    /// predicate, else through the planner as a fetch.
    func matchingRowKeys(_ info: EntityInfo, predicate: ObjectPredicate?, includesSubentities: Bool, _ tx: Transaction) throws -> [Int64] {
        var keys: [Int64] = []
        if predicate == nil {
            try tx.tree(info.rowTree).forEachUnsafe { key, value in
                guard let (pk, end) = TupleKey.integer(in: key, at: 0), end == key.count, let code = RowCodec.entityCode(ofRow: value) else {
                    throw StoreError.corruptRow(location: info.rowTree, detail: "malformed row key or header")
                }
                if code == info.code || (includesSubentities && info.descendantCodes.contains(code)) { keys.append(pk) }
                return true
            }
            return keys
        }
        keys = try matchingKeys(info, predicate: predicate, includesSubentities: includesSubentities, in: tx).map(\.key)
        keys.sort()
        return keys
    }

    /// The IDs of rows `keys` of `info`'s hierarchy, each with its row's own entity.
    func objectIDs(of info: EntityInfo, keys: [Int64]) throws -> [ObjectID] {
        do {
            return try reading { tx in
                var ids: [ObjectID] = []
                ids.reserveCapacity(keys.count)
                try visitRows(tx, tree: info.rowTree, keys: keys) { key, bytes in
                    guard let code = RowCodec.entityCode(ofRow: bytes) else {
                        throw StoreError.corruptRow(location: "\(info.rowTree)/\(key)", detail: "malformed row header")
                    }
                    ids.append(try objectID(code: code, key: key, location: info.rowTree))
                    return true
                }
                return ids
            }
        } catch { throw storeError(error, path: path) }
    }
}

extension AttributeValue {
    /// The value as an attribute of `type` stores it, when it can without losing it: numbers
    /// convert between widths and kinds when exact (a double into an integer attribute only
    /// when it is a whole number in range; into a float, rounded), everything else only into
    /// its own type (URLs also from strings). Nil when the value does not fit.
    func coerced(to type: AttributeType) -> AttributeValue? {
        switch (self, type) {
        case (.null, _): return .null
        case (.int(let v), .int16): return Int16(exactly: v).map { _ in self }
        case (.int(let v), .int32): return Int32(exactly: v).map { _ in self }
        case (.int, .int64): return self
        case (.int(let v), .double): return Double(exactly: v).map(AttributeValue.double)
        case (.int(let v), .float): return Float(exactly: v).map(AttributeValue.float)
        case (.int(let v), .decimal): return .decimal(Decimal(v))
        case (.double(let v), .int16), (.double(let v), .int32), (.double(let v), .int64):
            return Int64(exactly: v).flatMap { AttributeValue.int($0).coerced(to: type) }
        case (.double, .double): return self
        case (.double(let v), .float): return .float(Float(v))
        case (.double(let v), .decimal): return v.isFinite ? .decimal(Decimal(v)) : nil
        case (.float(let v), .double): return .double(Double(v))
        case (.float, .float): return self
        case (.float(let v), .int16), (.float(let v), .int32), (.float(let v), .int64):
            return Int64(exactly: v).flatMap { AttributeValue.int($0).coerced(to: type) }
        case (.decimal, .decimal): return self
        case (.decimal(let v), .double): return Double(v.description).map(AttributeValue.double)
        case (.string(let v), .url): return URL(string: v).map(AttributeValue.url)
        default: return fits(type) ? self : nil
        }
    }
}
