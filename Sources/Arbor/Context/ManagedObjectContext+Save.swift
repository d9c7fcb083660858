extension ManagedObjectContext {
    /// Saves every change to the stores, atomically per store.
    ///
    /// Calls `willSave` on each changed object, then validates everything (non-optional values,
    /// types, to-many counts, deny rules); if anything fails, nothing is written and the error
    /// lists every failure. The store then checks uniqueness constraints and optimistic locking
    /// under its write lock, assigns permanent IDs, bumps row versions and commits.
    ///
    /// With several stores, all are written and checked first (each under its write lock) and
    /// committed only if all succeeded; an I/O failure while committing a later store leaves
    /// earlier stores committed (the exact guarantee is in Spec/object-store.md).
    ///
    /// When a saved row changed in the store since this context read it (optimistic locking),
    /// `mergePolicy` decides: `.error` throws `StoreError.conflicts`; the other policies merge the
    /// row inside the save's transaction, under the write lock (no other writer can slip in),
    /// and the objects take the rows as stored. Unique-constraint conflicts of inserted objects
    /// are resolved by the policy too, and the save is tried again.
    /// - Throws: `ValidationError`, `StoreError.conflicts`, `StoreError` for I/O and read-only stores.
    public func save() throws {
        processPendingChanges()
        if let parent { return try saveIntoParent(parent) }
        var attempts = 0
        while true {
            do {
                return try saveOnce()
            } catch StoreError.conflicts(let conflicts) where mergePolicy != .error && attempts < 3 {
                // Another writer may commit between resolving and saving again: retry a few times.
                attempts += 1
                try resolve(conflicts)
            } catch let error as ValidationError where mergePolicy != .error && attempts < 3 && resolvesByPolicy(error) {
                attempts += 1
                try resolveUniqueness(error.failures)
            }
        }
    }

    private func saveOnce() throws {
        guard hasChanges else { return }
        for object in Array(changed.values) where object.hasChanges { object.willSave() }
        let failures = pendingFailures + validate()
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
        guard let coordinator = persistentStoreCoordinator else { throw ContextError.noPersistentStore }

        var requests: [ObjectIdentifier: SaveRequest] = [:]
        var stores: [ObjectIdentifier: PersistentStore] = [:]
        func add(_ id: ObjectID, _ edit: (inout SaveRequest) -> Void) throws {
            let store = try coordinator.store(for: id)
            let key = ObjectIdentifier(store)
            stores[key] = store
            if requests[key] == nil { requests[key] = SaveRequest(mergePolicy: mergePolicy) }
            edit(&requests[key, default: SaveRequest()])  // in place: no copy of the request
        }
        // Inserted objects in creation order, so primary keys follow it.
        let saved = changed.values.map { ($0.objectID.isTemporaryID ? 0 : 1, $0.objectID.primaryKey, $0) }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        for object in saved {
            let id = object.objectID
            if object.deletedFlag {
                if !object.insertedFlag && !id.isTemporaryID {
                    try add(id) { $0.deletes.append(SaveRequest.RowDelete(id: id, expectedVersion: object.committedVersion)) }
                }
                continue
            }
            if object.insertedFlag {
                let columns = writeColumns(object)
                try add(id) { $0.inserts.append(SaveRequest.RowWrite(id: id, columns: columns, expectedVersion: nil)) }
            } else if !object.changes.isEmpty {
                try fulfill(object)
                let columns = writeColumns(object)
                var write = SaveRequest.RowWrite(id: id, columns: columns, expectedVersion: object.committedVersion)
                if mergePolicy != .error {
                    // What the store needs to merge a conflict property by property.
                    write.changedSlots = (0..<object.info.columnCount).filter { object.changes[$0] != nil }
                    write.readColumns = object.committedValues.map { values in
                        values.all.map { value -> WriteColumn in
                            switch value {
                            case .value(let value): return .value(value)
                            case .reference(let target): return target.map(WriteColumn.reference) ?? .value(.null)
                            case .invalid: return .value(.null)
                            }
                        }
                    }
                }
                try add(id) { $0.updates.append(write) }
            }
            for relationship in object.info.relationships where relationship.kind != .toOne {
                guard let state = object.toMany[relationship.slot], state.isChanged else { continue }
                let name = relationship.description.name
                let ordered = relationship.description.isOrdered
                if relationship.kind == .oneToMany {
                    guard ordered else { continue }
                    if let appended = state.appendedMembers {
                        if !appended.isEmpty {
                            try add(id) { $0.orderedAppends.append(SaveRequest.OrderedAppend(owner: id, relationship: name, members: appended)) }
                        }
                    } else if let current = state.current {
                        try add(id) { $0.orderedLists.append(SaveRequest.OrderedList(owner: id, relationship: name, members: current)) }
                    }
                    continue
                }
                var change = SaveRequest.JoinChange(owner: id, relationship: name, members: nil)
                if let current = state.current {
                    if state.committed == nil || (ordered && state.appendedMembers == nil) {
                        change.members = current
                    } else {
                        let committed = state.committed ?? []
                        let currentSet = Set(current), committedSet = Set(committed)
                        change.added = current.filter { !committedSet.contains($0) }
                        change.removed = committed.filter { !currentSet.contains($0) }
                    }
                } else {
                    change.added = state.added
                    change.removed = Array(state.removed)
                }
                try add(id) { $0.joinChanges.append(change) }
            }
        }

        // Phase one: write and check every store; phase two: commit them all.
        let ordered = stores.values.sorted { $0.identifier.uuidString < $1.identifier.uuidString }
        var prepared: [(store: PersistentStore, save: any PreparedStoreSave)] = []
        do {
            for store in ordered {
                guard let request = requests[ObjectIdentifier(store)], !request.isEmpty else { continue }
                prepared.append((store, try store.storage.prepareSave(request)))
            }
        } catch {
            for (_, save) in prepared { save.abort() }
            throw error
        }
        var committed = 0
        do {
            for (_, save) in prepared {
                try save.commit()
                committed += 1
            }
        } catch {
            for (_, save) in prepared[committed...] { save.abort() }
            throw error
        }
        // Who was inserted, updated and deleted, for the did-save notification (before the
        // results clear the flags; inserted objects' IDs are read after they become permanent).
        var insertedObjects: [ManagedObject] = [], updatedObjects: [ManagedObject] = [], deletedIDs: [ObjectID] = []
        for object in saved {
            if object.deletedFlag {
                if !object.insertedFlag && !object.objectID.isTemporaryID { deletedIDs.append(object.objectID) }
            } else if object.insertedFlag {
                insertedObjects.append(object)
            } else if object.hasChanges {
                updatedObjects.append(object)
            }
        }
        let permanentIDs = try applySaveResults(prepared, saved: saved)
        // Objects another writer deleted under us were not saved: they left this context.
        let vanished = Set(prepared.flatMap(\.save.result.vanished))
        if noticed != nil {
            for object in saved where vanished.contains(object.objectID) { notice(object) }
            noticed?.permanentIDs.merge(permanentIDs) { _, new in new }
            processPendingChanges()
        }
        updatedObjects.removeAll { vanished.contains($0.objectID) }
        var notification = didSaveNotification(inserted: insertedObjects, updated: updatedObjects, deleted: deletedIDs)
        notification.permanentIDs = permanentIDs
        coordinator.saveObservers.post(notification)
        changeObservers.post(notification)
    }

    private func writeColumns(_ object: ManagedObject) -> [WriteColumn] {
        (0..<object.info.columnCount).map { slot in
            switch currentValue(object, slot: slot) {
            case .value(let value): return .value(value)
            case .reference(let target): return target.map(WriteColumn.reference) ?? .value(.null)
            case .invalid: return .value(.null)
            }
        }
    }

    /// Returns the permanent ID of each object inserted by the save, by its temporary ID.
    private func applySaveResults(_ prepared: [(store: PersistentStore, save: any PreparedStoreSave)],
                                  saved: [ManagedObject]) throws -> [ObjectID: ObjectID] {
        var permanent: [ObjectID: ObjectID] = [:]
        var rows: [ObjectID: (StoredRow, PersistentStore)] = [:]
        var vanished: Set<ObjectID> = []
        for (store, save) in prepared {
            permanent.merge(save.result.permanentIDs) { a, _ in a }
            for (id, row) in save.result.writtenRows { rows[id] = (row, store) }
            vanished.formUnion(save.result.vanished)
        }
        let remap: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        if hasChildren.withLock({ $0 }) { savedTemporaryIDs.merge(permanent) { _, new in new } }
        clearChanged()
        pendingFailures = []
        for object in saved {
            if object.deletedFlag || vanished.contains(object.objectID) {
                detach(object)
                continue
            }
            if let newID = permanent[object.objectID] {
                unregister(object)
                object.objectID = newID
                register(object)
            }
            if let (row, store) = rows[object.objectID] {
                object.changes = [:]
                try apply(row, to: object, from: store)
            } else {
                // Only to-many changes: the row itself is unchanged; committed references may
                // still name objects inserted by this save.
                object.committedValues = object.committedValues?.remapped(remap)
            }
            object.insertedFlag = false
            for slot in object.toMany.indices { object.toMany[slot]?.commit(remap: remap) }
        }
        // Only changed objects can hold temporary IDs (adding a member changes the owner), and
        // each of them was remapped above: the rest of the identity map needs no pass.
        return permanent
    }

    /// Every validation failure of the pending changes.
    func validate() -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        for object in changed.values {
            let info = object.info
            let id = object.objectID
            func fail(_ key: String, _ kind: ValidationFailureKind) {
                failures.append(ValidationFailure(objectID: id, entity: info.name, key: key, kind: kind))
            }
            if object.deletedFlag {
                for relationship in info.relationships where relationship.description.deleteRule == .deny {
                    let targets = relationship.kind == .toOne ? toOneTarget(object, relationship).map { [$0] } ?? []
                                                              : members(object, relationship)
                    let remaining = targets.filter { registeredObject(for: $0)?.deletedFlag != true }
                    if !remaining.isEmpty { fail(relationship.description.name, .deleteDenied(count: remaining.count)) }
                }
                continue
            }
            if info.code == 0 {
                fail("", .entityNotInModel)
                continue
            }
            if info.isAbstract && object.insertedFlag {
                fail("", .abstractEntity)
                continue
            }
            let checkAll = object.insertedFlag
            for attribute in info.attributes where checkAll || object.changes[attribute.slot] != nil {
                let description = attribute.description
                switch currentValue(object, slot: attribute.slot) {
                case .invalid(let detail): fail(description.name, .invalidValue(detail))
                case .reference: fail(description.name, .typeMismatch(expected: description.type, found: "object"))
                case .value(let value):
                    if value.isNull {
                        if !description.isOptional { fail(description.name, .missingValue) }
                    } else if !value.fits(description.type) {
                        fail(description.name, .typeMismatch(expected: description.type, found: value.kindName))
                    }
                }
            }
            for relationship in info.relationships {
                let description = relationship.description
                if relationship.kind == .toOne {
                    guard checkAll || object.changes[relationship.slot] != nil else { continue }
                    let target = toOneTarget(object, relationship)
                    if target == nil && !description.isOptional { fail(description.name, .missingValue) }
                    if let target, let related = registeredObject(for: target), related.deletedFlag {
                        fail(description.name, .danglingReference(target))
                    }
                    continue
                }
                guard description.minCount > 0 || description.maxCount != nil,
                      checkAll || object.toMany[relationship.slot]?.isChanged == true else { continue }
                let count = members(object, relationship).filter { registeredObject(for: $0)?.deletedFlag != true }.count
                if count < description.minCount { fail(description.name, .tooFewMembers(minimum: description.minCount, count: count)) }
                if let maximum = description.maxCount, count > maximum {
                    fail(description.name, .tooManyMembers(maximum: maximum, count: count))
                }
            }
        }
        return failures.sorted { ($0.entity, $0.key, $0.objectID?.primaryKey ?? 0) < ($1.entity, $1.key, $1.objectID?.primaryKey ?? 0) }
    }

    // MARK: Discarding changes

    /// Turns `object` back into a fault. With `mergeChanges`, its unsaved changes are kept and
    /// re-applied over the freshly read row; otherwise they are discarded. Loaded to-many lists
    /// are released, so objects reachable only through them can go away.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        guard owns(object), !object.insertedFlag else { return }
        notice(object)
        object.committedValues = nil
        object.committedVersion = nil
        object.isFaultState = true
        if mergeChanges {
            for slot in object.toMany.indices { rereadMembers(object, slot: slot) }
        } else {
            object.prefetched = []
            object.changes = [:]
            object.deletedFlag = false
            for slot in object.toMany.indices { object.toMany[slot] = nil }
            unmarkChanged(object)
        }
    }

    /// Makes the to-many relationship at `slot` be read from the store again when next used;
    /// unsaved changes to it stay, as the delta they are over the stored members (a list whose
    /// order the app rearranged stays as the app left it).
    func rereadMembers(_ object: ManagedObject, slot: Int) {
        guard var state = object.toMany[slot] else { return }
        if !state.isChanged {
            object.toMany[slot] = nil
            return
        }
        if state.current != nil, let appended = state.appendedMembers {
            let currentSet = Set(state.current ?? [])
            state.removed = Set((state.committed ?? []).filter { !currentSet.contains($0) })
            state.added = appended
            state.current = nil
            state.committed = nil
            object.toMany[slot] = state
        }
    }

    /// Refreshes every registered object, keeping unsaved changes.
    public func refreshAllObjects() {
        for object in registeredObjects { refresh(object, mergeChanges: true) }
    }

    /// Discards every unsaved change: inserted objects are forgotten, updated and deleted ones
    /// become faults of their stored state.
    public func rollback() {
        noticeEverything()
        for object in Array(changed.values) {
            if object.insertedFlag || (object.deletedFlag && object.objectID.isTemporaryID) {
                detach(object)
            } else {
                refresh(object, mergeChanges: false)
            }
        }
        clearChanged()
        pendingFailures = []
    }

    /// Forgets every object: registered objects are detached from the context (their
    /// `managedObjectContext` becomes nil) and unsaved changes are discarded.
    public func reset() {
        noticeEverything()
        for object in liveRegisteredObjects {
            object.managedObjectContext = nil
            object.changes = [:]
            object.prefetched = []
            object.isFaultState = true
        }
        for object in changed.values { object.managedObjectContext = nil }
        // A context reset between fetches refills the identity map to about the same size:
        // keeping a modest table spares it a rehash at every doubling.
        registered.removeAll(keepingCapacity: registered.capacity <= 4_096)
        clearChanged()
        pendingFailures = []
    }
}
