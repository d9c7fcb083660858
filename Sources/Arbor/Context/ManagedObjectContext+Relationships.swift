extension ManagedObjectContext {
    /// The current target of a to-one relationship.
    func toOneTarget(_ object: ManagedObject, _ relationship: EntityInfo.Relationship) -> ObjectID? {
        currentValue(object, slot: relationship.slot).reference
    }

    // MARK: Raw edits of one side (no inverse maintenance)

    private func rawSetToOne(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ target: ObjectID?) {
        object.changes[relationship.slot] = .reference(target)
        markChanged(object)
    }

    private func rawAdd(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ObjectID) {
        var state = object.toMany[relationship.slot] ?? ToManyState()
        state.append(member)
        object.toMany[relationship.slot] = state
        markChanged(object)
    }

    private func rawRemove(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ObjectID) {
        var state = object.toMany[relationship.slot] ?? ToManyState()
        state.remove(member)
        object.toMany[relationship.slot] = state
        markChanged(object)
    }

    /// Removes `member` from `owner`'s relationship `name`. `known`: the caller knows the stored
    /// to-one of `owner` points at `member` (it came from the foreign-key index), so a fault
    /// need not be loaded to check.
    func detach(_ owner: ManagedObject, _ name: String, _ member: ObjectID, known: Bool = false) {
        guard let relationship = owner.info.relationship(named: name) else { return }
        if relationship.kind == .toOne {
            if known && owner.changes[relationship.slot] == nil {
                rawSetToOne(owner, relationship, nil)
            } else if toOneTarget(owner, relationship) == member {
                rawSetToOne(owner, relationship, nil)
            }
        } else {
            rawRemove(owner, relationship, member)
        }
    }

    /// Adds `member` to `owner`'s relationship `name`; a to-one first releases its old partner.
    private func attach(_ owner: ManagedObject, _ name: String, _ member: ObjectID) {
        guard let relationship = owner.info.relationship(named: name) else { return }
        if relationship.kind == .toOne {
            let previous = toOneTarget(owner, relationship)
            guard previous != member else { return }
            rawSetToOne(owner, relationship, member)
            if let previous { detach(object(with: previous), relationship.description.inverse, owner.objectID) }
        } else {
            rawAdd(owner, relationship, member)
        }
    }

    private func checkOwnership(_ object: ManagedObject, of other: ManagedObject, key: String) -> Bool {
        guard owns(other) else {
            pendingFailures.append(ValidationFailure(objectID: object.objectID, entity: object.entityName, key: key,
                                                     kind: .objectFromAnotherContext(other.objectID)))
            return false
        }
        return true
    }

    // MARK: Edits with inverse maintenance

    /// Sets a to-one relationship; the old and new targets' inverses follow.
    func setToOne(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ target: ManagedObject?) {
        if let target, !checkOwnership(object, of: target, key: relationship.description.name) { return }
        let old = toOneTarget(object, relationship)
        let new = target?.objectID
        guard old != new else { return }
        rawSetToOne(object, relationship, new)
        let inverse = relationship.description.inverse
        if let old { detach(self.object(with: old), inverse, object.objectID) }
        if let new { attach(self.object(with: new), inverse, object.objectID) }
    }

    /// Adds `member` to a to-many relationship of `owner` (appended when ordered).
    func addMember(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ManagedObject) {
        guard checkOwnership(owner, of: member, key: relationship.description.name),
              let inverse = member.info.inverse(of: relationship) else { return }
        if inverse.kind == .toOne {
            setToOne(member, inverse, owner)
        } else {
            rawAdd(owner, relationship, member.objectID)
            rawAdd(member, inverse, owner.objectID)
        }
    }

    /// Removes `member` from a to-many relationship of `owner`.
    func removeMember(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ManagedObject) {
        guard checkOwnership(owner, of: member, key: relationship.description.name),
              let inverse = member.info.inverse(of: relationship) else { return }
        if inverse.kind == .toOne {
            if toOneTarget(member, inverse) == owner.objectID { setToOne(member, inverse, nil) } else { rawRemove(owner, relationship, member.objectID) }
        } else {
            rawRemove(owner, relationship, member.objectID)
            rawRemove(member, inverse, owner.objectID)
        }
    }

    /// Replaces the members of a to-many relationship (and their order, when ordered).
    func setMembers(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ newMembers: [ManagedObject]) {
        var seen: Set<ObjectID> = []
        var wanted: [ManagedObject] = []
        for member in newMembers where checkOwnership(owner, of: member, key: relationship.description.name) {
            if seen.insert(member.objectID).inserted { wanted.append(member) }
        }
        let current = members(owner, relationship)
        for id in current where !seen.contains(id) { removeMember(owner, relationship, object(with: id)) }
        let currentSet = Set(current)
        for member in wanted where !currentSet.contains(member.objectID) { addMember(owner, relationship, member) }
        if relationship.description.isOrdered {
            setOrder(owner, relationship, wanted.map(\.objectID))
        }
    }

    /// Inserts `member` at `index` of an ordered relationship (appends when past the end).
    func insertMember(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ManagedObject, at index: Int) {
        var list = members(owner, relationship).filter { $0 != member.objectID }
        addMember(owner, relationship, member)
        guard relationship.description.isOrdered, owns(member) else { return }
        list.insert(member.objectID, at: max(0, min(index, list.count)))
        setOrder(owner, relationship, list)
    }

    private func setOrder(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ order: [ObjectID]) {
        _ = members(owner, relationship)
        guard var state = owner.toMany[relationship.slot] else { return }
        if state.current != order {
            state.current = order
            state.orderChanged = true
            state.isChanged = true
            owner.toMany[relationship.slot] = state
            markChanged(owner)
        }
    }
}
