import Foundation

extension ManagedObject {
    // MARK: Dynamic access (Core Data's key-value coding)

    /// The current value of the property `key`: a Swift value for an attribute (`Int64`,
    /// `Double`, `String`, `Date`, `Data`, …; nil when unset), a `ManagedObject?` for a to-one
    /// relationship, a `[ManagedObject]` for a to-many. Reading a fault loads it; a failure to
    /// load reads as nil and is recorded in the context's `lastFaultError`. Unknown keys read as nil.
    public func value(forKey key: String) -> Any? {
        let property = info.property(named: key)
        // The common case, as an `@Attribute` read has it: a loaded, unchanged object read
        // without its context (the load of a weak reference, a retain and a release).
        if case .attribute(let index)? = property, let link = contextLink, link.isAlive {
            let slot = info.attributes[index].slot
            observeRead(slot)
            if let value = storedAttribute(slot) { return value.anyValue }
        }
        guard let context = managedObjectContext, let property else { return nil }
        switch property {
        case .attribute(let index):
            observeRead(info.attributes[index].slot)
            return context.currentAttribute(self, slot: info.attributes[index].slot).anyValue
        case .transient(let index):
            observeRead(info.transientAttributes[index].slot)
            return context.currentAttribute(self, slot: info.transientAttributes[index].slot).anyValue
        case .relationship(let index):
            let relationship = info.relationships[index]
            observeRead(relationship)
            if relationship.kind == .toOne {
                return context.toOneTarget(self, relationship).map { context.object(with: $0) }
            }
            return context.members(self, relationship).map { context.object(with: $0) }
        }
    }

    /// Sets the property `key`. Attributes accept any Swift value convertible to their type
    /// (integers of any width, `Double`, `String`, `Date`, `Data`, `UUID`, `URL`, `Decimal`,
    /// an `AttributeValue`, or nil); to-one relationships a `ManagedObject` of this context or
    /// nil; to-many relationships an array of them. A key or value that does not fit is recorded
    /// and makes the next `save()` fail with a validation error naming it (Core Data would trap).
    public func setValue(_ value: Any?, forKey key: String) {
        guard let context = managedObjectContext else { return }
        guard let property = info.property(named: key) else {
            context.pendingFailures.append(ValidationFailure(objectID: objectID, entity: info.name, key: key,
                                                             kind: .invalidValue("no such property")))
            return
        }
        switch property {
        case .attribute(let index), .transient(let index):
            let attribute = property.isTransient ? info.transientAttributes[index] : info.attributes[index]
            if let derivation = attribute.description.derivation {
                context.pendingFailures.append(ValidationFailure(objectID: objectID, entity: info.name, key: key,
                                                                 kind: .derivedAttributeSet(derivation: derivation)))
            } else if let converted = AttributeValue.converting(value, to: attribute.description.type) {
                setAttribute(converted, slot: attribute.slot)
            } else {
                context.willChange(self)
                changes[attribute.slot] = .invalid("\(type(of: value as Any)) is not \(attribute.description.type.rawValue)")
                context.markChanged(self)
                observeChange(attribute.slot)
            }
        case .relationship(let index):
            let relationship = info.relationships[index]
            if relationship.kind == .toOne {
                if value == nil {
                    context.graph.setToOne(self, relationship, nil)
                } else if let target = value as? ManagedObject, relationship.accepts(target) {
                    context.graph.setToOne(self, relationship, target)
                } else {
                    context.pendingFailures.append(ValidationFailure(objectID: objectID, entity: info.name, key: key,
                                                                     kind: .invalidValue("expected a \(relationship.destinationName) or nil")))
                }
            } else if let members = value as? [ManagedObject], members.allSatisfy({ relationship.accepts($0) }) {
                context.graph.setMembers(self, relationship, members)
            } else {
                context.pendingFailures.append(ValidationFailure(objectID: objectID, entity: info.name, key: key,
                                                                 kind: .invalidValue("expected an array of \(relationship.destinationName)")))
            }
        }
    }

    func setAttribute(_ value: AttributeValue, slot: Int) {
        guard let context = managedObjectContext else { return }
        context.willChange(self)
        // Setting a value equal to the stored one leaves the object unchanged, as Core Data does.
        if !insertedFlag, !isFaultState, let committed = committedValues, slot < committed.count,
           committed[slot] == .value(value) {
            changes[slot] = nil
        } else if slot >= info.columnCount, let transient = info.transientAttribute(slot: slot),
                  committedTransientValue(transient) == value {
            changes[slot] = nil
        } else {
            changes[slot] = .value(value)
        }
        context.markChanged(self)
        observeChange(slot)
    }

    /// Adds `member` to the to-many relationship `key` (at the end, when ordered).
    public func add(_ member: ManagedObject, toRelationship key: String) {
        guard let context = managedObjectContext, let relationship = toManyRelationship(key, member) else { return }
        context.graph.addMember(self, relationship, member)
    }

    /// Removes `member` from the to-many relationship `key`.
    public func remove(_ member: ManagedObject, fromRelationship key: String) {
        guard let context = managedObjectContext, let relationship = toManyRelationship(key, member) else { return }
        context.graph.removeMember(self, relationship, member)
    }

    /// Inserts `member` at `index` of the ordered relationship `key`.
    public func insert(_ member: ManagedObject, at index: Int, inRelationship key: String) {
        guard let context = managedObjectContext, let relationship = toManyRelationship(key, member) else { return }
        context.graph.insertMember(self, relationship, member, at: index)
    }

    private func toManyRelationship(_ key: String, _ member: ManagedObject) -> EntityInfo.Relationship? {
        guard let relationship = info.relationship(named: key), relationship.kind != .toOne,
              relationship.accepts(member) else {
            managedObjectContext?.pendingFailures.append(ValidationFailure(
                objectID: objectID, entity: info.name, key: key, kind: .invalidValue("not a to-many relationship to \(member.entityName)")))
            return nil
        }
        return relationship
    }

    /// The object IDs of a relationship's targets without instantiating the objects.
    public func objectIDs(forRelationshipNamed key: String) -> [ObjectID] {
        guard let context = managedObjectContext, let relationship = info.relationship(named: key) else { return [] }
        observeRead(relationship)
        if relationship.kind == .toOne { return context.toOneTarget(self, relationship).map { [$0] } ?? [] }
        return context.members(self, relationship)
    }

    // MARK: Changes

    /// The attributes and to-one relationships changed since the last save, by name (to-one
    /// values as `ObjectID?`), plus changed to-many relationships as `[ObjectID]`.
    public func changedValues() -> [String: Any?] {
        var result: [String: Any?] = [:]
        guard let context = managedObjectContext else { return result }
        for attribute in info.attributes + info.transientAttributes where changes[attribute.slot] != nil {
            result.updateValue(context.currentAttribute(self, slot: attribute.slot).anyValue, forKey: attribute.description.name)
        }
        for relationship in info.relationships {
            if relationship.kind == .toOne {
                if changes[relationship.slot] != nil {
                    result.updateValue(context.toOneTarget(self, relationship), forKey: relationship.description.name)
                }
            } else if toMany[relationship.slot]?.isChanged == true {
                result.updateValue(context.members(self, relationship), forKey: relationship.description.name)
            }
        }
        return result
    }

    /// The stored values of `keys` (all properties when nil), ignoring unsaved changes; to-one
    /// relationships as `ObjectID?`, to-many as `[ObjectID]`. Empty for an inserted object.
    public func committedValues(forKeys keys: [String]?) -> [String: Any?] {
        var result: [String: Any?] = [:]
        guard let context = managedObjectContext, !insertedFlag else { return result }
        let names = keys ?? ((info.attributes + info.transientAttributes).map(\.description.name) + info.relationships.map(\.description.name))
        for name in names {
            switch info.propertiesByName[name] {
            case .attribute(let index)?:
                result.updateValue(context.committedValue(self, slot: info.attributes[index].slot).attributeValue.anyValue, forKey: name)
            case .transient(let index)?:
                result.updateValue(context.committedValue(self, slot: info.transientAttributes[index].slot).attributeValue.anyValue,
                                   forKey: name)
            case .relationship(let index)?:
                let relationship = info.relationships[index]
                if relationship.kind == .toOne {
                    result.updateValue(context.committedValue(self, slot: relationship.slot).reference, forKey: name)
                } else {
                    result.updateValue(context.committedMembers(self, relationship), forKey: name)
                }
            case nil: continue
            }
        }
        return result
    }

    /// Loads the object's data now if it is a fault.
    /// - Throws: `ContextError.objectNotFound` when its row is gone; store errors.
    public func fulfillFault() throws {
        guard let context = managedObjectContext else { return }
        try context.fulfill(self)
    }
}

extension EntityInfo.Relationship {
    /// Whether `object` can be a target of this relationship (its entity is the destination or
    /// a sub-entity of it).
    func accepts(_ object: ManagedObject) -> Bool {
        destinationCodes.contains(object.info.code)
    }
}
