import ArborEngine

/// Index entries and rows written in their encoded form, shared by saves and batch requests.
extension SaveWriter {
    /// Moves `id`'s entry in `index` from the key `old` columns give (nil: none) to the key `new`
    /// columns give, recording a uniqueness check for a new entry of a unique index (except the
    /// constraint an upsert resolved). Nothing when the keys are equal; both keys are built in
    /// buffers reused from row to row.
    func moveIndexEntry<Old: RandomAccessCollection<ColumnValue>, New: RandomAccessCollection<ColumnValue>>(
        _ index: EntityInfo.Index, of id: ObjectID, from old: Old?, to new: New
    ) where Old.Index == Int, New.Index == Int {
        if index.isText { return moveTextEntries(index, of: id, from: old, to: new) }
        let info = id.info, keys = store.keys
        oldKeyBuffer.removeAll(keepingCapacity: true)
        newKeyBuffer.removeAll(keepingCapacity: true)
        let hasOld = old.map { keys.appendIndexKey(index, columns: $0, key: id.primaryKey, to: &oldKeyBuffer) } ?? false
        let hasNew = keys.appendIndexKey(index, columns: new, key: id.primaryKey, to: &newKeyBuffer)
        guard hasOld != hasNew || (hasOld && oldKeyBuffer != newKeyBuffer) else { return }
        if hasOld { oldKeyBuffer.withUnsafeBytes { indexChanges[ObjectIdentifier(index), default: (index, TreeChanges())].changes.delete(key: $0) } }
        guard hasNew else { return }
        let value = keys.entryValue(info.code, root: info.rootCode)
        newKeyBuffer.withUnsafeBytes { key in
            value.withUnsafeBytes { indexChanges[ObjectIdentifier(index), default: (index, TreeChanges())].changes.put(key: key, value: $0) }
        }
        // Values that take a unique index's entry are checked (nil never conflicts).
        if index.isUnique, index !== resolvedUniqueIndex, index.slots.allSatisfy({ $0 < new.count && !new[$0].isNull }) {
            uniqueEntries[ObjectIdentifier(index), default: (index, [])].entries.append((newKeyBuffer, id))
        }
    }

    /// Moves `id`'s entries in text index `index` from the terms of `old` to those of `new`:
    /// the terms only one side has are removed or added (a renamed stop keeps its common words).
    private func moveTextEntries<Old: RandomAccessCollection<ColumnValue>, New: RandomAccessCollection<ColumnValue>>(
        _ index: EntityInfo.Index, of id: ObjectID, from old: Old?, to new: New
    ) where Old.Index == Int, New.Index == Int {
        let oldText = old.flatMap { IndexKeys.text(of: index, in: $0) }, newText = IndexKeys.text(of: index, in: new)
        guard oldText != newText else { return }
        let key = id.primaryKey
        if old == nil, let newText, let worker = textTermWorker {
            worker.add(newText, key: key, of: index)
            return
        }
        // Changed in place in the dictionary (no copy of the changes gathered so far).
        modifyTextChanges(of: index) { changes in
            guard let oldText else {
                // A new row (an import's every row): its terms as they come, repeats and all.
                if let newText { changes.add(newText, kind: index.kind, key: key) }
                return
            }
            let before = Self.sortedTerms(oldText, index.kind)
            let after = newText.map { Self.sortedTerms($0, index.kind) } ?? []
            // Both lists are in byte order: one merge finds what only one side has.
            var b = 0, a = 0
            while b < before.count || a < after.count {
                let order = b == before.count ? 1 : a == after.count ? -1 : compareBytes(before[b], after[a])
                if order < 0 {
                    before[b].withUnsafeBytes { changes.delete(term: $0, key: key) }
                    b += 1
                } else if order > 0 {
                    after[a].withUnsafeBytes { changes.put(term: $0, key: key) }
                    a += 1
                } else {
                    b += 1
                    a += 1
                }
            }
        }
    }

    /// Removes every entry of the row `columns` (of `id`) from text index `index`.
    func removeTextEntries<Columns: RandomAccessCollection<ColumnValue>>(_ index: EntityInfo.Index, of id: ObjectID, columns: Columns)
    where Columns.Index == Int {
        guard let text = IndexKeys.text(of: index, in: columns) else { return }
        modifyTextChanges(of: index) { $0.remove(text, kind: index.kind, key: id.primaryKey) }
    }

    /// `body` over the changes gathered for text index `index`, in place. Terms still made on
    /// the second thread are joined first, so that changes to one key stay in order.
    private func modifyTextChanges(of index: EntityInfo.Index, _ body: (inout PostingChanges) -> Void) {
        if textTermWorker?.hasPending == true { joinTextTerms() }
        body(&textChanges[ObjectIdentifier(index), default: (index, PostingChanges())].changes)
    }

    /// Joins to `textChanges` the terms the second thread made (`TextTermWorker`) for the rows
    /// written so far, waiting for those under way.
    func joinTextTerms() {
        guard let worker = textTermWorker else { return }
        for (index, changes) in worker.takeAll() {
            let id = ObjectIdentifier(index)
            if textChanges[id] == nil {
                textChanges[id] = (index, changes)
            } else {
                textChanges[id]?.changes.append(contentsOf: changes)
            }
        }
    }

    /// The distinct terms of `text`, in byte order.
    private static func sortedTerms(_ text: String, _ kind: IndexDescription.Kind) -> [[UInt8]] {
        var terms = TextTerms.terms(of: text, kind: kind)
        terms.sortUnique { compareBytes($0, $1) < 0 }
        return terms
    }

    /// Writes the stored row `old` of `id` with the columns of `replacements` changed (attributes
    /// only: no reference, so no order key moves), in its encoded form: the other columns are
    /// copied as they are stored. Index entries of indexes on the replaced slots move; the
    /// version goes up by one. The row write is deferred (`defersRowWrites` must be on).
    func patchRow(_ id: ObjectID, old: StoredRow, replacements: [(slot: Int, value: ColumnValue)], changed: SlotMask) throws {
        let info = id.info, keys = store.keys
        let new = PatchedColumns(base: old.columns, replacements: replacements)
        if patchedIndexes?.info !== info || patchedIndexes?.changed != changed {
            patchedIndexes = (info, changed, info.indexes.filter { index in
                index.slots.contains(where: changed.contains) || (index.orderSlot.map(changed.contains) ?? false)
            })
        }
        for index in patchedIndexes?.indexes ?? [] { moveIndexEntry(index, of: id, from: old.columns, to: new) }
        let (nextVersion, overflow) = old.version.addingReportingOverflow(1)
        oldKeyBuffer.removeAll(keepingCapacity: true)
        keys.appendRowKey(id.primaryKey, to: &oldKeyBuffer)
        newKeyBuffer.removeAll(keepingCapacity: true)
        newKeyBuffer.append(RowCodec.formatByte)
        RowCodec.appendVarint(overflow ? 1 : nextVersion, &newKeyBuffer)
        RowCodec.appendVarint(UInt64(old.entityCode), &newKeyBuffer)
        for position in 0..<old.columns.count {
            if let replacement = replacements.first(where: { $0.slot == position }) {
                RowCodec.append(replacement.value, &newKeyBuffer)
            } else {
                old.columns.appendEncoded(position, to: &newKeyBuffer)
            }
        }
        oldKeyBuffer.withUnsafeBytes { key in
            newKeyBuffer.withUnsafeBytes { rowWrites[info.rowTree, default: TreeChanges()].put(key: key, value: $0) }
        }
    }
}
