import Foundation

/// Checks a predicate against an entity before it runs: every key exists, to-many keys are
/// quantified or aggregated, constants fit the attributes they are compared with.
struct PredicateChecker {
    let model: ManagedObjectModel
    /// Whether `$variables` other than a SUBQUERY's may appear (a template's): a predicate
    /// that runs must have them all replaced.
    var allowsFreeVariables = false

    func check(_ predicate: ObjectPredicate, entity: EntityInfo, variables: [String: EntityInfo] = [:]) throws {
        switch predicate {
        case .true, .false: return
        case .and(let parts), .or(let parts): for part in parts { try check(part, entity: entity, variables: variables) }
        case .not(let part): try check(part, entity: entity, variables: variables)
        case .comparison(let comparison):
            let left = try check(comparison.left, entity: entity, variables: variables)
            let right = try check(comparison.right, entity: entity, variables: variables)
            if case .toMany(let name) = left, comparison.modifier == .direct, comparison.op != .contains {
                throw ObjectPredicateError.unsupported("to-many key \(name) needs ANY, ALL, NONE or an aggregate such as \(name).@count")
            }
            if case .attribute(let name, let type) = left, case .constant(let value) = comparison.right {
                try checkType(name, type, value, comparison.op)
            }
            if case .attribute(let name, let type) = right, case .constant(let value) = comparison.left {
                try checkType(name, type, value, comparison.op)
            }
            if case .attribute(let name, let type) = left, case .list(let items) = comparison.right {
                for case .constant(let value) in items { try checkType(name, type, value, .equal) }
            }
        }
    }

    enum Kind {
        case attribute(String, AttributeType)
        case toOne(String)
        case toMany(String)
        case value
    }

    @discardableResult
    func check(_ expression: PredicateExpression, entity: EntityInfo, variables: [String: EntityInfo]) throws -> Kind {
        switch expression {
        case .variable(let name):
            guard allowsFreeVariables || variables[name] != nil else { throw ObjectPredicateError.unboundVariable(name) }
            return .value
        case .constant, .object, .evaluatedObject: return .value
        case .list(let items):
            for item in items { try check(item, entity: entity, variables: variables) }
            return .value
        case .keyPath(let path): return try checkPath(path, from: entity, allowToMany: true)
        case .variablePath(let name, let path):
            guard let start = variables[name] else { throw ObjectPredicateError.unboundVariable(name) }
            return try checkPath(path, from: start, allowToMany: true)
        case .aggregate(_, let collection, let key):
            guard case .toMany(let name) = try check(collection, entity: entity, variables: variables) else {
                throw ObjectPredicateError.unsupported("an aggregate needs a to-many key path")
            }
            if let key, let destination = destination(of: collection, entity: entity, variables: variables) {
                guard destination.attribute(named: key) != nil else { throw ObjectPredicateError.unknownKey(entity: destination.name, key: key) }
            }
            _ = name
            return .value
        case .subquery(let collection, let variable, let predicate):
            guard case .toMany = try check(collection, entity: entity, variables: variables),
                  let destination = destination(of: collection, entity: entity, variables: variables) else {
                throw ObjectPredicateError.unsupported("SUBQUERY needs a to-many key path")
            }
            var inner = variables
            inner[variable] = destination
            try check(predicate, entity: entity, variables: inner)
            return .toMany("SUBQUERY")
        }
    }

    /// The entity a to-many expression's members belong to.
    func destination(of expression: PredicateExpression, entity: EntityInfo, variables: [String: EntityInfo]) -> EntityInfo? {
        var current: EntityInfo?
        var path: [String]
        switch expression {
        case .keyPath(let keys): current = entity; path = keys
        case .variablePath(let name, let keys): current = variables[name]; path = keys
        case .subquery(let collection, _, _): return destination(of: collection, entity: entity, variables: variables)
        default: return nil
        }
        for key in path {
            guard let relationship = current?.relationship(named: key) else { return nil }
            current = model.info(named: relationship.destinationName)
        }
        return current
    }

    @discardableResult
    func checkPath(_ path: [String], from entity: EntityInfo, allowToMany: Bool) throws -> Kind {
        var current = entity
        var sawToMany: String?
        for (position, key) in path.enumerated() {
            let isLast = position == path.count - 1
            if let attribute = current.attribute(named: key) {
                guard isLast else { throw ObjectPredicateError.unknownKey(entity: current.name, key: path[position...].joined(separator: ".")) }
                return sawToMany.map { .toMany($0) } ?? .attribute(path.count == 1 ? key : path.concatenated(separator: "."), attribute.description.type)
            }
            guard let relationship = current.relationship(named: key), let destination = model.info(named: relationship.destinationName) else {
                throw ObjectPredicateError.unknownKey(entity: current.name, key: key)
            }
            if relationship.kind != .toOne {
                guard allowToMany else { throw ObjectPredicateError.unsupported("sorting by to-many key \(key)") }
                sawToMany = path.concatenated(separator: ".")
            }
            current = destination
            if isLast { return sawToMany.map { .toMany($0) } ?? .toOne(key) }
        }
        return .value
    }

    func checkType(_ key: String, _ type: AttributeType, _ value: AttributeValue, _ op: Comparison.Operator) throws {
        if value.isNull { return }
        if !Self.compares(value, with: type) { throw ObjectPredicateError.typeMismatch(key: key, expected: type.rawValue, found: "\(value.kindName) \(value)") }
        if op.isStringOperator, type != .string, type != .url {
            throw ObjectPredicateError.typeMismatch(key: key, expected: type.rawValue, found: "the string operator \(op.rawValue)")
        }
    }

    /// Whether a predicate may compare `value` with an attribute of `type` (nil with any).
    static func compares(_ value: AttributeValue, with type: AttributeType) -> Bool {
        switch value {
        case .int, .double, .float, .decimal, .bool: return type.isNumeric
        case .string: return type == .string || type == .url || type == .uuid
        case .date: return type == .date
        case .data: return type == .data || type == .transformable
        case .uuid: return type == .uuid
        case .url: return type == .url || type == .string
        case .null: return true
        }
    }
}

extension ObjectPredicate {
    /// Whether evaluating the predicate on an object reads other objects (key paths through
    /// relationships, to-many aggregates, subqueries).
    func followsRelationships(_ info: EntityInfo) -> Bool {
        switch self {
        case .true, .false: return false
        case .and(let parts), .or(let parts): return parts.contains { $0.followsRelationships(info) }
        case .not(let part): return part.followsRelationships(info)
        case .comparison(let comparison):
            return comparison.left.followsRelationships(info) || comparison.right.followsRelationships(info)
        }
    }

    /// The top-level conjuncts that read only the object's own attributes (nil: none).
    func ownColumnConjuncts(_ info: EntityInfo) -> ObjectPredicate? {
        let own = QueryPlanner.conjuncts(self).filter { !$0.followsRelationships(info) }
        return own.isEmpty ? nil : .and(own)
    }
}

extension PredicateExpression {
    func followsRelationships(_ info: EntityInfo) -> Bool {
        switch self {
        // SELF is the object's identity, which no unsaved change alters (`SELF IN %@`).
        case .constant, .object, .variable, .evaluatedObject: return false
        case .aggregate, .subquery, .variablePath: return true
        case .list(let items): return items.contains { $0.followsRelationships(info) }
        case .keyPath(let path): return path.count > 1 || info.relationship(named: path.first ?? "") != nil
        }
    }
}
