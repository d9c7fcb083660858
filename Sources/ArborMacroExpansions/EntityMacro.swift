import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Entity`: declares the entity of a `ManagedObject` subclass from its stored properties.
///
/// - member: the entity's name, its persisted property names and count, and a class function
///   that builds its `EntityDescription` (types come from the Swift types through overloads
///   the compiler picks: `AttributeConvertible` values are attributes, `T?` and `[T]` of a
///   `ManagedObject` subclass are relationships).
/// - member attribute: `@_PersistedProperty(n)` on the n-th persisted property, whose
///   accessors read and write the object's slot for it.
///
/// A protocol, implemented here, so the plugin (`ArborMacros`) and the tests each conform a
/// type of their own: the compiler finds a macro by its plugin module's name.
public protocol EntityExpansion: MemberMacro, MemberAttributeMacro {}

extension EntityExpansion {
    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard var entity = EntityClass(declaration, attribute: node, diagnose: context.diagnose) else { return [] }
        entity.readCompoundDeclarations(declaration.memberBlock.members, diagnose: context.diagnose)
        let members = MemberReader.persisted(declaration.memberBlock.members, diagnose: context.diagnose)
        entity.dropCompounds(namingOtherThan: Set(members.map(\.name)), diagnose: context.diagnose)
        let access = entity.isPublic ? "public " : ""
        let names = members.map { "\"\($0.name)\"" }.joined(separator: ", ")
        var body: [String] = []
        body.append("var entity = EntityDescription(\(entity.entityName), class: \(entity.className).self, "
                    + "superentity: ManagedObject._$superentityName(of: \(entity.superclass).self), "
                    + "isAbstract: \(entity.isAbstract), renamingIdentifier: \(entity.originalName ?? "nil"))")
        for member in members { body.append("entity._$add(\(declareCall(of: member)))") }
        let indexes = entity.compoundIndexes.map { "IndexDescription([\($0.names.map { "\"\($0)\"" }.joined(separator: ", "))])" }
            + members.flatMap { member in member.indexKinds.filter { $0 != "values" }.map { index(member.name, kind: $0) } }
            + entity.compoundUniques.map { "IndexDescription([\($0.names.map { "\"\($0)\"" }.joined(separator: ", "))], unique: true)" }
            + members.filter(\.isUnique).map { "IndexDescription([\"\($0.name)\"], unique: true)" }
        if !indexes.isEmpty { body.append("entity.indexes = [\(indexes.joined(separator: ", "))]") }
        if body.count == 1 {  // nothing to add: a `var` would draw a warning in the user's build
            body = ["return " + body[0].dropFirst("var entity = ".count)]
        } else {
            body.append("return entity")
        }
        // A class that overrides `validateValue(_:forKey:)` says so: a save then calls it per
        // property (otherwise it checks the model's rules without the call).
        let validates = declaration.memberBlock.members.contains { item in
            guard let function = item.decl.as(FunctionDeclSyntax.self) else { return false }
            return function.name.text == "validateValue" && function.modifiers.contains { $0.name.text == "override" }
        }
        let validation: [DeclSyntax] = validates ? ["\(raw: access)override class var _$overridesValidateValue: Bool { true }"] : []
        return [
            "\(raw: access)override class var _$entityName: String { \(raw: entity.entityName) }",
            "\(raw: access)override class var _$propertyNames: [String] { super._$propertyNames + [\(raw: names)] }",
            "\(raw: access)override class var _$propertyCount: Int { super._$propertyCount + \(raw: members.count) }",
            """
            \(raw: access)override class func _$entityDescription() -> EntityDescription? {
                \(raw: body.joined(separator: "\n    "))
            }
            """,
        ] + validation
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingAttributesFor member: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AttributeSyntax] {
        guard let variable = member.as(VariableDeclSyntax.self), MemberReader.isPersisted(variable),
              let entity = EntityClass(declaration, attribute: node, diagnose: { _ in }) else { return [] }
        // The property's position among the persisted ones (the same walk as the member role).
        let persisted = MemberReader.persisted(declaration.memberBlock.members, diagnose: { _ in })
        guard let name = variable.bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.text,
              let position = persisted.firstIndex(where: { $0.name == name }) else { return [] }
        if entity.superclass == "ManagedObject" { return ["@_PersistedProperty(\(raw: position))"] }
        return ["@_PersistedProperty(\(raw: position), after: \(raw: entity.superclass).self)"]
    }

    /// The `_$declare` call that describes `member` (its overload is chosen by the type).
    static func declareCall(of member: DeclaredMember) -> String {
        var options: [String: String] = [:]
        if member.indexKinds.contains("values") { options["indexed"] = "true" }
        if let originalName = member.originalName { options["originalName"] = originalName.trimmedDescription }
        if !member.attributeOptions.isEmpty {
            options["options"] = "[" + member.attributeOptions.map(\.trimmedDescription).joined(separator: ", ") + "]"
        }
        for argument in member.relationship ?? [] {
            guard let label = argument.label?.text, label != "originalName" else { continue }
            options[label] = label == "inverse" ? inverseName(argument.expression) : argument.expression.trimmedDescription
        }
        // In the order of `_$declare`'s parameters; a label it lacks is left for the compiler to name.
        let order = ["indexed", "inverse", "deleteRule", "ordered", "optional", "minCount", "maxCount", "originalName", "options"]
        let labels = order.filter { options[$0] != nil } + options.keys.filter { !order.contains($0) }.sorted()
        let optionList = labels.map { ", \($0): \(options[$0] ?? "")" }.joined()
        let initial = member.initializer.map { ", initialValue: \($0.trimmedDescription)" } ?? ""
        return "ManagedObject._$declare(\"\(member.name)\", \(member.type.trimmedDescription).self\(optionList)\(initial))"
    }

    /// `\StopTime.stop` → `"stop"`; a string literal stays as written.
    static func inverseName(_ expression: ExprSyntax) -> String {
        if let keyPath = expression.as(KeyPathExprSyntax.self), let last = keyPath.components.last,
           let property = last.component.as(KeyPathPropertyComponentSyntax.self) {
            return "\"\(property.declName.baseName.text)\""
        }
        return expression.trimmedDescription
    }

    static func index(_ name: String, kind: String) -> String {
        switch kind {
        case "normalized": return "IndexDescription([\"\(name)\"], normalized: true)"
        default: return "IndexDescription([\"\(name)\"], kind: .\(kind))"
        }
    }
}

/// The class `@Entity` is attached to, and the macro's arguments.
struct EntityClass {
    var className: String
    var superclass: String
    var entityName: String
    var isPublic: Bool
    var isAbstract = "false"
    var originalName: String?
    var compoundIndexes: [Compound] = []
    var compoundUniques: [Compound] = []

    /// One argument of `#Index` or `#Unique`: the properties, and where each was written.
    struct Compound {
        var names: [String] = []
        var nodes: [Syntax] = []
    }

    init?(_ declaration: some DeclGroupSyntax, attribute: AttributeSyntax, diagnose: (Diagnostic) -> Void) {
        guard let type = declaration.as(ClassDeclSyntax.self) else {
            diagnose(Diagnostic(node: Syntax(attribute), message: EntityDiagnostic.notAClass))
            return nil
        }
        className = type.name.text
        guard let inherited = type.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription else {
            diagnose(Diagnostic(node: Syntax(type.name), message: EntityDiagnostic.notAManagedObject(className)))
            return nil
        }
        superclass = inherited
        entityName = "\"\(className)\""
        isPublic = type.modifiers.contains { ["public", "open"].contains($0.name.text) }
        guard case .argumentList(let arguments) = attribute.arguments else { return }
        for argument in arguments {
            switch argument.label?.text {
            case nil: entityName = argument.expression.trimmedDescription
            case "abstract": isAbstract = argument.expression.trimmedDescription
            case "originalName": originalName = argument.expression.trimmedDescription
            default: break
            }
        }
    }

    /// Reads `#Index<Root>([\.a, \.b], …)` and `#Unique<Root>(…)` among the class's members:
    /// each argument, an array of key paths to the class's own properties, is one index.
    mutating func readCompoundDeclarations(_ members: MemberBlockItemListSyntax, diagnose: (Diagnostic) -> Void) {
        for item in members {
            guard let expansion = item.decl.as(MacroExpansionDeclSyntax.self) else { continue }
            let macro = expansion.macroName.text
            guard macro == "Index" || macro == "Unique" else { continue }
            for argument in expansion.arguments {
                guard let list = argument.expression.as(ArrayExprSyntax.self) else {
                    diagnose(Diagnostic(node: Syntax(argument.expression), message: EntityDiagnostic.compoundNotAList(macro)))
                    continue
                }
                var compound = Compound()
                for element in list.elements {
                    guard let keyPath = element.expression.as(KeyPathExprSyntax.self), keyPath.components.count == 1,
                          let property = keyPath.components.first?.component.as(KeyPathPropertyComponentSyntax.self) else {
                        diagnose(Diagnostic(node: Syntax(element.expression), message: EntityDiagnostic.compoundNotAProperty(macro)))
                        continue
                    }
                    compound.names.append(property.declName.baseName.text)
                    compound.nodes.append(Syntax(keyPath))
                }
                // An argument with a mistake is diagnosed and left out whole.
                guard compound.names.count == list.elements.count, !compound.names.isEmpty else { continue }
                if macro == "Index" { compoundIndexes.append(compound) } else { compoundUniques.append(compound) }
            }
        }
    }

    /// Leaves out, with a diagnostic at the key path, each compound that names a property the
    /// entity does not persist here.
    mutating func dropCompounds(namingOtherThan persisted: Set<String>, diagnose: (Diagnostic) -> Void) {
        func keep(_ compound: Compound) -> Bool {
            var keep = true
            for (name, node) in zip(compound.names, compound.nodes) where !persisted.contains(name) {
                diagnose(Diagnostic(node: node, message: EntityDiagnostic.compoundNotPersisted(name)))
                keep = false
            }
            return keep
        }
        compoundIndexes = compoundIndexes.filter(keep)
        compoundUniques = compoundUniques.filter(keep)
    }
}
