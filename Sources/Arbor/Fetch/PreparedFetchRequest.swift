import Foundation

/// What a template's `$variable` must be bound to, found from what the predicate compares it with.
public enum TemplateVariableType: Hashable, Sendable, CustomStringConvertible {
    /// A value of an attribute of this type (`longitude BETWEEN {$west, $east}`: a double).
    case value(AttributeType)
    /// A list of such values (`stopID IN $ids`).
    case list(AttributeType)
    /// An object of this entity, its `ObjectID`, or nil (`stop == $stop`).
    case object(String)
    /// Anything a predicate takes (the variable is compared with no attribute).
    case any

    public var description: String {
        switch self {
        case .value(let type): return "a \(type.rawValue)"
        case .list(let type): return "a list of \(type.rawValue)"
        case .object(let entity): return "a \(entity) or its ObjectID"
        case .any: return "a value"
        }
    }
}

/// A fetch request template that cannot be bound or used.
public enum FetchTemplateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The model has no template of that name.
    case unknownTemplate(String)
    /// A variable of the template was given no value.
    case missingVariable(String)
    /// A variable's value is not what the predicate compares it with.
    case mistypedVariable(name: String, expected: TemplateVariableType, found: String)
    /// One variable is compared with properties of two different types.
    case conflictingVariable(name: String, TemplateVariableType, TemplateVariableType)
    /// Values bound by position: not one for each variable.
    case wrongValueCount(expected: Int, found: Int)

    public var description: String {
        switch self {
        case .unknownTemplate(let name): return "the model has no fetch request template named \(name)"
        case .missingVariable(let name): return "variable $\(name) of the template has no value"
        case .mistypedVariable(let name, let expected, let found): return "variable $\(name) must be \(expected), not \(found)"
        case .conflictingVariable(let name, let first, let second):
            return "variable $\(name) is compared with \(first) and with \(second)"
        case .wrongValueCount(let expected, let found):
            return "the template has \(expected) variable\(expected == 1 ? "" : "s") to bind by position, and \(found) value\(found == 1 ? " was" : "s were") given"
        }
    }
}

/// A fetch request checked once — its entity found, its predicate, sorts and key paths checked,
/// the type of each `$variable` worked out — and then bound to values for each execution, as
/// GRDB caches a statement: `context.fetch(prepared, ["prefix": "alex"], as: Stop.self)`, or
/// with the values in the order their variables first appear in the predicate, as SQL binds its
/// `?`s: `context.fetch(prepared, ["alex"], as: Stop.self)` (`variableOrder`).
///
/// Stores keep the plan they chose for it (which index, or a scan) and, for later bindings,
/// only work out the new bounds of that index's ranges; they choose again when the values make
/// the old choice impossible (an empty `IN` list, a nil bound). Binding checks each value and
/// keeps it beside the written predicate: the bound predicate is built only when something
/// reads it (`FetchRequest.predicate`, rows evaluating what the index leaves, unsaved changes),
/// so a fetch whose index answers every condition never builds it. Sendable: prepare once, use
/// from every context.
public final class PreparedFetchRequest: Sendable {
    /// The request as written, its variables unbound.
    public let template: FetchRequest
    /// Each variable of the predicate and what it must be bound to.
    public let variables: [String: TemplateVariableType]
    /// The variables in the order they first appear in the predicate as written (`{$west,
    /// $east}` before `$south`): the order in which `request(_:)` binds an array of values.
    public let variableOrder: [String]
    /// `variables` in `variableOrder`, as an array: what each binding walks (no dictionary iteration).
    private let variableList: [(name: String, type: TemplateVariableType)]
    /// The names of `variableList`, shared by every binding's `TemplateBindings`.
    private let variableNames: [String]
    let model: ManagedObjectModel
    let info: EntityInfo
    /// Identifies this request's plans in the stores' plan caches.
    let planKey: PreparedPlanKey

    /// Checks `request` against `model` and finds its variables.
    /// - Throws: `ContextError.unknownEntity`; `ObjectPredicateError` (an unknown key, a constant
    ///   of the wrong kind); `FetchTemplateError.conflictingVariable`.
    /// - Complexity: O(size of the predicate).
    public init(_ request: FetchRequest, model: ManagedObjectModel) throws {
        guard let info = model.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        var template = request
        template.resolveBindings()  // a request bound from another template: its values are part of this one
        let predicate = template.predicate
        let checker = PredicateChecker(model: model, allowsFreeVariables: true)
        if let predicate { try checker.check(predicate, entity: info) }
        for path in request.sortDescriptors.map(\.keyPath) {
            try checker.checkPath(path.split(separator: ".").map(String.init), from: info, allowToMany: false)
        }
        var typing = VariableTyping(checker: checker)
        if let predicate { try typing.visit(predicate, entity: info, variables: [:]) }
        self.template = template
        variables = typing.types
        var order: [String] = []
        if let predicate { Self.appendVariables(of: predicate, to: &order) }
        variableOrder = order.filter { typing.types[$0] != nil }  // a subquery's own variable is not one to bind
        variableList = variableOrder.compactMap { name in typing.types[name].map { (name, $0) } }
        variableNames = variableOrder
        self.model = model
        self.info = info
        planKey = PreparedPlanKey(model: model, info: info)
    }

    /// The request with every variable replaced by its value in `values` (extra values are
    /// ignored, as Core Data's `withSubstitutionVariables` ignores them).
    /// - Throws: `FetchTemplateError.missingVariable`, `.mistypedVariable`.
    /// - Complexity: O(size of the predicate + values of lists).
    public func request(_ values: [String: any FetchTemplateValue]) throws -> FetchRequest {
        guard template.hasPredicate, !variables.isEmpty else { return unbound() }
        // The values are walked once and their names compared with the variables' (a few short
        // strings): looking each variable up would hash its name (about 700 instructions each).
        // Names are unique on both sides, so every variable has a value when as many were found.
        var expressions: [PredicateExpression] = []
        expressions.reserveCapacity(variableList.count)
        for _ in variableList { expressions.append(.constant(.null)) }  // (`repeating:` cost 200 an element)
        var found = 0
        for (name, value) in values {
            guard let position = variableList.firstIndex(where: { $0.name == name }) else { continue }
            expressions[position] = value.templateExpression
            found += 1
        }
        if found < variableList.count, let missing = variableList.first(where: { values[$0.name] == nil }) {
            throw FetchTemplateError.missingVariable(missing.name)
        }
        return try bound(expressions)
    }

    /// The request with the variables bound to `values` by position: the first value to the
    /// first variable of `variableOrder` (the first to appear in the predicate), and so on.
    /// Cheaper than the dictionary form: no name is hashed or compared.
    /// - Throws: `FetchTemplateError.wrongValueCount` unless there is one value for each
    ///   variable; `.mistypedVariable`.
    /// - Complexity: O(size of the predicate + values of lists).
    public func request(_ values: [any FetchTemplateValue]) throws -> FetchRequest {
        guard values.count == variableList.count else {
            throw FetchTemplateError.wrongValueCount(expected: variableList.count, found: values.count)
        }
        guard template.hasPredicate, !variables.isEmpty else { return unbound() }
        var expressions: [PredicateExpression] = []
        expressions.reserveCapacity(values.count)
        for value in values { expressions.append(value.templateExpression) }
        return try bound(expressions)
    }

    /// The request with every variable replaced by its value in `values`, of any type a
    /// predicate's `%@` takes (Core Data's `[String: Any]`; each value is cast at run time, so
    /// `request(_:)` with `FetchTemplateValue`s costs less).
    /// - Throws: `FetchTemplateError.missingVariable`, `.mistypedVariable`.
    public func request(substitutionVariables values: [String: Any]) throws -> FetchRequest {
        guard template.hasPredicate, !variables.isEmpty else { return unbound() }
        let expressions = try variableList.map { name, type -> PredicateExpression in
            guard let value = values[name] else { throw FetchTemplateError.missingVariable(name) }
            if let typed = value as? any FetchTemplateValue { return typed.templateExpression }
            do {
                return try PredicateParser.expression(from: value, index: 0)
            } catch {
                throw FetchTemplateError.mistypedVariable(name: name, expected: type, found: "\(Swift.type(of: value))")
            }
        }
        return try bound(expressions)
    }

    /// The template as the request, for a template with no variable to bind.
    private func unbound() -> FetchRequest {
        var request = template
        request.prepared = planKey
        return request
    }

    /// The template with variable `variableList[i]` bound to `expressions[i]`, each checked
    /// against its type.
    private func bound(_ expressions: [PredicateExpression]) throws -> FetchRequest {
        for (position, (name, type)) in variableList.enumerated() where !fits(expressions[position], type) {
            throw FetchTemplateError.mistypedVariable(name: name, expected: type, found: Self.kind(of: expressions[position]))
        }
        var request = template
        // Substituted when first read: a store that kept its plan reads the values as they are.
        request.bind(TemplateBindings(names: variableNames, values: expressions), preparedBy: planKey)
        return request
    }

    private func fits(_ expression: PredicateExpression, _ type: TemplateVariableType) -> Bool {
        func fitsValue(_ value: AttributeValue, _ attribute: AttributeType) -> Bool { PredicateChecker.compares(value, with: attribute) }
        switch (type, expression) {
        case (.any, _): return true
        case (.value(let attribute), .constant(let value)): return fitsValue(value, attribute)
        case (.list(let attribute), .list(let items)):
            return items.allSatisfy { if case .constant(let value) = $0 { return fitsValue(value, attribute) } else { return false } }
        case (.object, .constant(.null)): return true
        case (.object(let entity), .object(let id)): return model.info(named: entity)?.includes(id.info) == true
        default: return false
        }
    }

    /// Appends the names of the `$variables` of `predicate` in the order they are written
    /// (left side before right, list items in order), each once.
    private static func appendVariables(of predicate: ObjectPredicate, to names: inout [String]) {
        switch predicate {
        case .true, .false: return
        case .and(let parts), .or(let parts): for part in parts { appendVariables(of: part, to: &names) }
        case .not(let part): appendVariables(of: part, to: &names)
        case .comparison(let comparison):
            appendVariables(of: comparison.left, to: &names)
            appendVariables(of: comparison.right, to: &names)
        }
    }

    private static func appendVariables(of expression: PredicateExpression, to names: inout [String]) {
        switch expression {
        case .variable(let name): if !names.contains(name) { names.append(name) }
        case .list(let items): for item in items { appendVariables(of: item, to: &names) }
        case .aggregate(_, let collection, _): appendVariables(of: collection, to: &names)
        case .subquery(let collection, _, let predicate):
            appendVariables(of: collection, to: &names)
            appendVariables(of: predicate, to: &names)
        case .constant, .object, .keyPath, .variablePath, .evaluatedObject: return
        }
    }

    private static func kind(of expression: PredicateExpression) -> String {
        switch expression {
        case .constant(let value): return "\(value.kindName) \(value)"
        case .list: return "a list"
        case .object(let id): return "an object of \(id.entityName)"
        default: return "an expression"
        }
    }
}

/// Identifies a prepared request's plans in the stores' caches (a class: its identity is the
/// key), and carries its fetched entity: a fetch of a bound request need not look it up by name.
final class PreparedPlanKey: Sendable, Hashable {
    let model: ManagedObjectModel
    let info: EntityInfo

    init(model: ManagedObjectModel, info: EntityInfo) {
        self.model = model
        self.info = info
    }

    static func == (a: PreparedPlanKey, b: PreparedPlanKey) -> Bool { a === b }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Works out what each free `$variable` of a predicate is compared with.
private struct VariableTyping {
    let checker: PredicateChecker
    var types: [String: TemplateVariableType] = [:]

    mutating func note(_ name: String, _ type: TemplateVariableType) throws {
        guard let known = types[name], known != type else {
            types[name] = type
            return
        }
        if known == .any { types[name] = type; return }
        if type == .any { return }
        throw FetchTemplateError.conflictingVariable(name: name, known, type)
    }

    mutating func visit(_ predicate: ObjectPredicate, entity: EntityInfo, variables: [String: EntityInfo]) throws {
        switch predicate {
        case .true, .false: return
        case .and(let parts), .or(let parts): for part in parts { try visit(part, entity: entity, variables: variables) }
        case .not(let part): try visit(part, entity: entity, variables: variables)
        case .comparison(let comparison):
            let leftType = try type(of: comparison.left, entity: entity, variables: variables, op: comparison.op)
            let rightType = try type(of: comparison.right, entity: entity, variables: variables, op: comparison.op)
            try bind(comparison.right, to: leftType, op: comparison.op)
            try bind(comparison.left, to: rightType, op: comparison.op)
            try visitSubqueries(comparison.left, entity: entity, variables: variables)
            try visitSubqueries(comparison.right, entity: entity, variables: variables)
        }
    }

    /// What a variable compared with `expression` must be (nil: the expression is not a property).
    func type(of expression: PredicateExpression, entity: EntityInfo, variables: [String: EntityInfo],
              op: Comparison.Operator) throws -> TemplateVariableType? {
        var start = entity, path: [String]
        switch expression {
        case .keyPath(let keys): path = keys
        case .variablePath(let name, let keys):
            guard let bound = variables[name] else { return nil }
            start = bound
            path = keys
        case .aggregate(.count, _, _): return .value(.int64)
        default: return nil
        }
        var current = start
        for (position, key) in path.enumerated() {
            if let attribute = current.attribute(named: key) {
                return position == path.count - 1 ? .value(attribute.description.type) : nil
            }
            guard let relationship = current.relationship(named: key),
                  let destination = checker.model.info(named: relationship.destinationName) else { return nil }
            if relationship.kind != .toOne { return nil }  // ANY/ALL over members: left to evaluation
            if position == path.count - 1 { return .object(destination.name) }
            current = destination
        }
        return nil
    }

    mutating func bind(_ expression: PredicateExpression, to type: TemplateVariableType?, op: Comparison.Operator) throws {
        switch expression {
        case .variable(let name):
            if case .value(let attribute)? = type, op == .in { try note(name, .list(attribute)) } else { try note(name, type ?? .any) }
        case .list(let items):
            for case .variable(let name) in items { try note(name, type ?? .any) }
        default: return
        }
    }

    mutating func visitSubqueries(_ expression: PredicateExpression, entity: EntityInfo, variables: [String: EntityInfo]) throws {
        switch expression {
        case .subquery(let collection, let variable, let predicate):
            guard let destination = checker.destination(of: collection, entity: entity, variables: variables) else { return }
            var inner = variables
            inner[variable] = destination
            try visit(predicate, entity: entity, variables: inner)
        case .aggregate(_, let collection, _):
            try visitSubqueries(collection, entity: entity, variables: variables)
        default: return
        }
    }
}

/// A value a template's variable can be bound to without a run-time cast: the attribute types,
/// `AttributeValue`, objects and their IDs, optionals and arrays of these.
public protocol FetchTemplateValue {
    /// The value as a predicate's constant, list or object.
    var templateExpression: PredicateExpression { get }
}

extension AttributeValue: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(self) } }
extension Int: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.int(Int64(self))) } }
extension Int64: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.int(self)) } }
extension Int32: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.int(Int64(self))) } }
extension Int16: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.int(Int64(self))) } }
extension Double: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.double(self)) } }
extension Float: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.double(Double(self))) } }
extension Bool: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.bool(self)) } }
extension String: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.string(self)) } }
extension Date: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.date(self)) } }
extension Data: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.data(self)) } }
extension UUID: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.uuid(self)) } }
extension URL: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.url(self)) } }
extension Decimal: FetchTemplateValue { public var templateExpression: PredicateExpression { .constant(.decimal(self)) } }
extension ObjectID: FetchTemplateValue { public var templateExpression: PredicateExpression { .object(self) } }
extension ManagedObject: FetchTemplateValue { public var templateExpression: PredicateExpression { .object(objectID) } }

extension Optional: FetchTemplateValue where Wrapped: FetchTemplateValue {
    public var templateExpression: PredicateExpression { self?.templateExpression ?? .constant(.null) }
}

extension Array: FetchTemplateValue where Element: FetchTemplateValue {
    public var templateExpression: PredicateExpression { .list(map(\.templateExpression)) }
}
