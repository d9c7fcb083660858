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
