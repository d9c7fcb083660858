extension ManagedObjectContext {
    /// Marks `object` deleted and applies its relationships' delete rules at once: nullify
    /// removes it from each related object's inverse, cascade deletes the related objects too
    /// (iteratively, so long chains cannot exhaust the stack), deny is checked by `save`,
    /// no action leaves the related objects as they are. Deleting an object inserted since the
    /// last save simply forgets it.
    public func delete(_ object: ManagedObject) {
        guard owns(object) else {
            pendingFailures.append(ValidationFailure(objectID: object.objectID, entity: object.entityName, key: "",
                                                     kind: .objectFromAnotherContext(object.objectID)))
            return
        }
        var work = [object]
        while let next = work.popLast() {
            guard !next.deletedFlag else { continue }
            next.prepareForDeletion()
            next.deletedFlag = true
            markChanged(next)
            for relationship in next.info.relationships {
                let rule = relationship.description.deleteRule
                guard rule == .nullify || rule == .cascade else { continue }
                let targets: [ObjectID]
                if relationship.kind == .toOne {
                    targets = toOneTarget(next, relationship).map { [$0] } ?? []
                } else {
                    targets = members(next, relationship)
                }
                let inverse = relationship.description.inverse
                for target in targets {
                    let related = self.object(with: target)
                    detach(related, inverse, next.objectID, known: relationship.kind == .oneToMany)
                    if rule == .cascade { work.append(related) }
                }
            }
            if next.insertedFlag {
                next.insertedFlag = false
                unregister(next)
            }
        }
    }
}
