/// Edits the relationships of a context's objects and keeps both sides in step, as Core Data
/// maintains inverses: setting a to-one moves the object between its old and new partners'
/// to-many lists (or clears their to-one), adding to a to-many sets the member's inverse, and
/// deleting an object applies each relationship's delete rule to its partners.
///
/// Every edit goes through the context's current values (faults load as needed) and marks each
/// object it changes. Objects of another context are refused and reported by the next save
/// (`ValidationFailureKind.objectFromAnotherContext`).
struct ObjectGraphEditor {
    let context: ManagedObjectContext

    // MARK: Deleting

    /// Marks `object` deleted and applies its relationships' delete rules: nullify removes it
    /// from each partner's inverse, cascade deletes the partners too (iteratively, so long
    /// chains cannot exhaust the stack), deny is checked by `save`, no action leaves partners
    /// as they are. An object inserted since the last save is simply forgotten.
    func delete(_ object: ManagedObject) {
        var work = [object]
        while let next = work.popLast() {
            guard !next.deletedFlag else { continue }
            context.willChange(next)
            next.prepareForDeletion()
            next.deletedFlag = true
            context.markChanged(next)
            for relationship in next.info.relationships {
                let rule = relationship.description.deleteRule
                guard rule == .nullify || rule == .cascade else { continue }
                let targets: [ObjectID]
                if relationship.kind == .toOne {
                    targets = context.toOneTarget(next, relationship).map { [$0] } ?? []
                } else {
                    targets = context.members(next, relationship)
                }
                let inverse = relationship.description.inverse
                for target in targets {
                    let related = context.object(with: target)
                    detach(related, inverse, next.objectID, known: relationship.kind == .oneToMany)
                    if rule == .cascade { work.append(related) }
                }
            }
            if next.insertedFlag {
                next.insertedFlag = false
                context.unregister(next)
            }
        }
    }

    // MARK: Raw edits of one side (no inverse maintenance)

    private func rawSetToOne(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ target: ObjectID?) {
        context.willChange(object)
        object.changes[relationship.slot] = .reference(target)
        context.markChanged(object)
        object.observeChange(relationship.slot)
    }

    private func rawAdd(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ObjectID) {
        rawEditMembers(object, relationship) { $0.append(member) }
    }

    private func rawRemove(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ObjectID) {
        rawEditMembers(object, relationship) { $0.remove(member) }
    }

    /// Edits one to-many list of `object`; its observers fire when the loaded list changed
    /// (adding a member or removing one changes its length).
    private func rawEditMembers(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ edit: (inout ToManyState) -> Void) {
        context.willChange(object)
        var state = object.toMany[relationship.slot] ?? ToManyState()
        let count = state.current?.count
        edit(&state)
        object.toMany[relationship.slot] = state
        context.markChanged(object)
        if state.current?.count != count { object.observeMembersChange(relationship.slot) }
    }

    /// Removes `member` from `owner`'s relationship `name`. `known`: the caller knows the stored
    /// to-one of `owner` points at `member` (it came from the foreign-key index), so a fault
    /// need not be loaded to check.
    func detach(_ owner: ManagedObject, _ name: String, _ member: ObjectID, known: Bool = false) {
        guard let relationship = owner.info.relationship(named: name) else { return }
        if relationship.kind == .toOne {
            if known && owner.changes[relationship.slot] == nil {
                rawSetToOne(owner, relationship, nil)
            } else if context.toOneTarget(owner, relationship) == member {
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
            let previous = context.toOneTarget(owner, relationship)
            guard previous != member else { return }
            rawSetToOne(owner, relationship, member)
            if let previous { detach(context.object(with: previous), relationship.description.inverse, owner.objectID) }
        } else {
            rawAdd(owner, relationship, member)
        }
    }

    private func checkOwnership(_ object: ManagedObject, of other: ManagedObject, key: String) -> Bool {
        guard context.owns(other) else {
            context.pendingFailures.append(ValidationFailure(objectID: object.objectID, entity: object.entityName, key: key,
                                                             kind: .objectFromAnotherContext(other.objectID)))
            return false
        }
        return true
    }

    // MARK: Edits with inverse maintenance

    /// Sets a to-one relationship; the old and new targets' inverses follow.
    func setToOne(_ object: ManagedObject, _ relationship: EntityInfo.Relationship, _ target: ManagedObject?) {
        if let target, !checkOwnership(object, of: target, key: relationship.description.name) { return }
        let old = context.toOneTarget(object, relationship)
        let new = target?.objectID
        guard old != new else { return }
        rawSetToOne(object, relationship, new)
        let inverse = relationship.description.inverse
        if let old { detach(context.object(with: old), inverse, object.objectID) }
        if let new { attach(context.object(with: new), inverse, object.objectID) }
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
            if context.toOneTarget(member, inverse) == owner.objectID { setToOne(member, inverse, nil) } else { rawRemove(owner, relationship, member.objectID) }
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
        let current = context.members(owner, relationship)
        for id in current where !seen.contains(id) { removeMember(owner, relationship, context.object(with: id)) }
        let currentSet = Set(current)
        for member in wanted where !currentSet.contains(member.objectID) { addMember(owner, relationship, member) }
        if relationship.description.isOrdered {
            setOrder(owner, relationship, wanted.map(\.objectID))
        }
    }

    /// Inserts `member` at `index` of an ordered relationship (appends when past the end).
    func insertMember(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ member: ManagedObject, at index: Int) {
        var list = context.members(owner, relationship).filter { $0 != member.objectID }
        addMember(owner, relationship, member)
        guard relationship.description.isOrdered, context.owns(member) else { return }
        list.insert(member.objectID, at: max(0, min(index, list.count)))
        setOrder(owner, relationship, list)
    }

    private func setOrder(_ owner: ManagedObject, _ relationship: EntityInfo.Relationship, _ order: [ObjectID]) {
        _ = context.members(owner, relationship)
        guard var state = owner.toMany[relationship.slot] else { return }
        if state.current != order {
            context.willChange(owner)
            state.current = order
            state.orderChanged = true
            state.isChanged = true
            owner.toMany[relationship.slot] = state
            context.markChanged(owner)
            owner.observeMembersChange(relationship.slot)
        }
    }
}

extension ManagedObjectContext {
    /// Relationship edits with inverse maintenance and delete rules.
    var graph: ObjectGraphEditor { ObjectGraphEditor(context: self) }
}
