extension ManagedObjectContext {
    /// Calls `willSave` on every changed object, computes derived attributes (a save to the
    /// stores), then validates the changes (and what the non-throwing setters reported); both a
    /// save to the stores and a save into a parent start so.
    /// - Throws: `ValidationError` listing every failure.
    func prepareChangesForSave() throws {
        for object in Array(changed.values) where object.hasChanges { object.willSave() }
        var failures = pendingFailures
        if parent == nil, let model, !model.derivations.isEmpty {
            failures += DerivedValueUpdater(context: self, table: model.derivations).update()
        }
        failures += validate()
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
    }

    /// Every validation failure of the pending changes: first what the store could not take
    /// (an object outside the model, an abstract entity, a value of the wrong type, a reference
    /// to a deleted object), then each object's own validation — `validateForInsert()`,
    /// `validateForUpdate()` or `validateForDelete()`, which apply the model's rules unless a
    /// subclass decides otherwise.
    func validate() -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        for object in changed.values {
            let info = object.info
            let id = object.objectID
            func fail(_ key: String, _ kind: ValidationFailureKind) {
                failures.append(ValidationFailure(objectID: id, entity: info.name, key: key, kind: kind))
            }
            if object.deletedFlag {
                // An object inserted and deleted before any save is simply forgotten.
                guard !object.objectID.isTemporaryID else { continue }
                do { try object.validateForDelete() } catch { failures += ValidationFailure.normalized(error, object: object) }
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
            // A value a setter could not take is recorded as invalid in `changes` (every other
            // value there fits its attribute: setters, undo, merges and derived values check it).
            object.changes.forEach { slot, value in
                if case .invalid(let detail) = value { fail(info.anyAttribute(slot: slot)?.description.name ?? "", .invalidValue(detail)) }
            }
            for relationship in info.relationships where relationship.kind == .toOne && (object.insertedFlag || object.changes[relationship.slot] != nil) {
                if let target = toOneTarget(object, relationship), let related = registeredObject(for: target), related.deletedFlag {
                    fail(relationship.description.name, .danglingReference(target))
                }
            }
            do {
                if object.insertedFlag { try object.validateForInsert() } else if object.hasChanges { try object.validateForUpdate() }
            } catch {
                failures += ValidationFailure.normalized(error, object: object)
            }
        }
        return failures.sorted { ($0.entity, $0.key, $0.objectID?.primaryKey ?? 0) < ($1.entity, $1.key, $1.objectID?.primaryKey ?? 0) }
    }
}
