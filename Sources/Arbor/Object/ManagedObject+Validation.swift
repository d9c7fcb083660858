import Foundation

// The default validation of `ManagedObject` (its overridable entry points are in the class):
// every property through `validateValue(_:forKey:)`, the model's rules per key, deny rules.
extension ManagedObject {
    /// Validates every attribute and to-one relationship, and each to-many relationship whose
    /// members changed (or of an inserted object), through `validateValue(_:forKey:)`; throws
    /// the failures of all of them. Values a setter could not take (a wrong type) are reported
    /// by the save itself and skipped here.
    func validateEveryProperty() throws {
        guard let context = managedObjectContext else { return }
        var failures: [ValidationFailure] = []
        func check(_ value: Any?, _ key: String) {
            do { try validateValue(value, forKey: key) } catch { failures += ValidationFailure.normalized(error, object: self, key: key) }
        }
        for attribute in info.attributes + info.transientAttributes {
            guard case .value(let value) = context.currentValue(self, slot: attribute.slot),
                  value.fits(attribute.description.type) else { continue }
            check(value.anyValue, attribute.description.name)
        }
        for relationship in info.relationships {
            let name = relationship.description.name
            if relationship.kind == .toOne {
                check(context.toOneTarget(self, relationship).map { context.object(with: $0) }, name)
            } else if insertedFlag || toMany[relationship.slot]?.isChanged == true {
                check(context.members(self, relationship).map { context.object(with: $0) }, name)
            }
        }
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
    }

    /// The model's rules for `key` applied to `value`.
    func validateModelRules(_ value: Any?, forKey key: String) throws {
        var kinds: [ValidationFailureKind] = []
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
