extension ManagedObjectContext {
    /// Calls `willSave` on every changed object, then validates the changes (and what the
    /// non-throwing setters reported); both a save to the stores and a save into a parent start so.
    /// - Throws: `ValidationError` listing every failure.
    func prepareChangesForSave() throws {
        for object in Array(changed.values) where object.hasChanges { object.willSave() }
        let failures = pendingFailures + validate()
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
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
}
