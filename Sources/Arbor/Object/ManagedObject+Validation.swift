import Foundation

// The default validation of `ManagedObject` (its overridable entry points are in the class):
// every property through `validateValue(_:forKey:)`, the model's rules per key, deny rules.
extension ManagedObject {
    /// Validates, through `validateValue(_:forKey:)`, every attribute and to-one relationship
    /// (with `changedOnly`, those that changed), and each to-many relationship with member-count
    /// bounds whose members changed (or of an inserted object); throws the failures of all of
    /// them. Values a setter could not take (a wrong type) are reported by the save itself and
    /// skipped here.
    ///
    /// Only bounded lists are passed, and only when they changed: passing every changed list's
    /// members would read each owner's stored members and make an object for each (it doubled
    /// the time of an import through a context).
    func validateProperties(changedOnly: Bool) throws {
        guard let context = managedObjectContext else { return }
        var failures: [ValidationFailure] = []
        let calls = info.callsValidateValue
        func check(_ value: @autoclosure () -> Any?, _ key: String) {
            do { try validateValue(value(), forKey: key) } catch { failures += ValidationFailure.normalized(error, object: self, key: key) }
        }
        func fail(_ key: String, _ kinds: [ValidationFailureKind]) {
            for kind in kinds { failures.append(ValidationFailure(objectID: objectID, entity: info.name, key: key, kind: kind)) }
        }
        func checkAttributes(_ attributes: [EntityInfo.Attribute]) {
            for attribute in attributes where !changedOnly || changes[attribute.slot] != nil {
                guard case .value(let value) = context.currentValue(self, slot: attribute.slot), value.fits(attribute.type) else { continue }
                guard calls else {
                    fail(attribute.name, attribute.ruleFailures(of: value))
                    continue
                }
                // The default `validateValue` takes the value from here, without a lookup by key
                // or a conversion back from `Any`.
                pendingRuleCheck = PendingRuleCheck(attribute: attribute, value: value)
                check(value.anyValue, attribute.name)
            }
        }
        checkAttributes(info.attributes)
        checkAttributes(info.transientAttributes)
        pendingRuleCheck = nil
        for relationship in info.relationships {
            let description = relationship.description
            if relationship.kind == .toOne {
                guard !changedOnly || changes[relationship.slot] != nil else { continue }
                let target = context.toOneTarget(self, relationship)
                if calls {
                    check(target.map { context.object(with: $0) }, description.name)
                } else if target == nil && !description.isOptional {
                    fail(description.name, [.missingValue])
                }
            } else if description.minCount > 0 || description.maxCount != nil,
                      insertedFlag || toMany[relationship.slot]?.isChanged == true {
                check(context.members(self, relationship).map { context.object(with: $0) }, description.name)
            }
        }
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
    }

    /// The model's rules for `key` applied to `value`.
    func validateModelRules(_ value: Any?, forKey key: String) throws {
        var kinds: [ValidationFailureKind] = []
        if let pending = pendingRuleCheck, pending.attribute.name == key {
            kinds = pending.attribute.ruleFailures(of: pending.value)
        } else {
            switch info.propertiesByName[key] {
            case .attribute(let index)?: kinds = Self.ruleFailures(of: value, for: info.attributes[index])
            case .transient(let index)?: kinds = Self.ruleFailures(of: value, for: info.transientAttributes[index])
            case .relationship(let index)?:
                let description = info.relationships[index].description
                if !description.isToMany {
                    if value == nil && !description.isOptional { kinds.append(.missingValue) }
                } else if description.minCount > 0 || description.maxCount != nil {
                    let members = (value as? [ManagedObject]) ?? []
                    let count = members.filter { !$0.isDeleted }.count
                    if count < description.minCount { kinds.append(.tooFewMembers(minimum: description.minCount, count: count)) }
                    if let maximum = description.maxCount, count > maximum { kinds.append(.tooManyMembers(maximum: maximum, count: count)) }
                }
            case nil: kinds.append(.invalidValue("no such property"))
            }
        }
        guard kinds.isEmpty else {
            throw ValidationError(failures: kinds.map { ValidationFailure(objectID: objectID, entity: info.name, key: key, kind: $0) })
        }
    }

    private static func ruleFailures(of value: Any?, for attribute: EntityInfo.Attribute) -> [ValidationFailureKind] {
        let type = attribute.description.type
        guard let converted = AttributeValue.converting(value, to: type) else {
            return [.typeMismatch(expected: type, found: value.map { String(describing: Swift.type(of: $0)) } ?? "nil")]
        }
        return attribute.ruleFailures(of: converted)
    }

    /// Refuses the deletion while a relationship with the deny rule has members not deleted.
    func validateDeleteRules() throws {
        guard let context = managedObjectContext else { return }
        var failures: [ValidationFailure] = []
        for relationship in info.relationships where relationship.description.deleteRule == .deny {
            let targets = relationship.kind == .toOne ? context.toOneTarget(self, relationship).map { [$0] } ?? []
                                                      : context.members(self, relationship)
            let remaining = targets.filter { context.registeredObject(for: $0)?.deletedFlag != true }
            if !remaining.isEmpty {
                failures.append(ValidationFailure(objectID: objectID, entity: info.name, key: relationship.description.name,
                                                  kind: .deleteDenied(count: remaining.count)))
            }
        }
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
    }
}

/// The attribute a save's validation is passing to `validateValue(_:forKey:)`, with its value
/// as stored: what the default implementation checks when called for that key.
struct PendingRuleCheck {
    let attribute: EntityInfo.Attribute
    let value: AttributeValue
}

extension ValidationFailure {
    /// The failures an error thrown by `object`'s validation stands for, each naming the object
    /// (and `key`, when the failure names none).
    static func normalized(_ error: any Error, object: ManagedObject, key: String = "") -> [ValidationFailure] {
        ValidationError.failures(of: error).map { failure in
            var failure = failure
            if failure.objectID == nil {
                failure.objectID = object.objectID
                failure.entity = object.entityName
            }
            if failure.key.isEmpty { failure.key = key }
            return failure
        }
    }
}
