import SwiftDiagnostics
import SwiftSyntax

/// One stored property of an `@Entity` class as written: what the macro needs to declare it
/// in the entity description and to give it accessors.
struct DeclaredMember {
    var name: String
    var type: TypeSyntax
    var initializer: ExprSyntax?
    /// `@Index` kinds: values, normalized, words, substrings (empty: not indexed).
    var indexKinds: [String] = []
    var isUnique = false
    /// The arguments of `@Relationship(...)`, if present.
    var relationship: LabeledExprListSyntax?
    /// `originalName:` of `@Attribute` or `@Relationship`.
    var originalName: ExprSyntax?
    /// The unlabeled arguments of `@Attribute(...)`: its options (`.range(0...9)`, `.ephemeral`, …).
    var attributeOptions: [ExprSyntax] = []
}

/// Reads an `@Entity` class's members.
enum MemberReader {
    /// Attribute names that mark a property for the macro (they expand to nothing).
    static let markers: Set<String> = ["Index", "Unique", "Transient", "Relationship", "Attribute"]

    /// Whether `variable` is a property the entity stores: an instance `var` without
    /// accessors, `@Transient` or a property wrapper of the hand-written API.
    static func isPersisted(_ variable: VariableDeclSyntax) -> Bool {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var),
              !variable.modifiers.contains(where: { ["static", "class", "lazy", "override"].contains($0.name.text) }),
              variable.bindings.count == 1, let binding = variable.bindings.first,
              binding.pattern.is(IdentifierPatternSyntax.self),
              binding.accessorBlock == nil  // a computed property, or one with observers
        else { return false }
        for attribute in variable.attributes {
            guard let attribute = attribute.as(AttributeSyntax.self) else { return false }
            let name = attribute.attributeName.trimmedDescription
            if name == "Transient" || name == "_PersistedProperty" { return false }
            // `@Attribute("key")` and `@Relationship("key")` are the hand-written forms.
            if isKeyedForm(attribute) { return false }
            if !markers.contains(name) { return false }  // another property wrapper
        }
        return true
    }

    /// `@Attribute("key")` or `@Relationship("key")`: the hand-written form, whose key is
    /// the first argument, an unlabeled string (`@Attribute(.ephemeral)` passes an option).
    static func isKeyedForm(_ attribute: AttributeSyntax) -> Bool {
        let name = attribute.attributeName.trimmedDescription
        guard name == "Attribute" || name == "Relationship", case .argumentList(let arguments) = attribute.arguments,
              let first = arguments.first else { return false }
        return first.label == nil && first.expression.is(StringLiteralExprSyntax.self)
    }

    /// The persisted properties of `members`, in declaration order; problems are diagnosed on
    /// `context` and the property skipped.
    static func persisted(_ members: MemberBlockItemListSyntax, diagnose: (Diagnostic) -> Void) -> [DeclaredMember] {
        var result: [DeclaredMember] = []
        for item in members {
            if let variable = item.decl.as(VariableDeclSyntax.self) {
                let name = variable.bindings.first?.pattern.trimmedDescription ?? "?"
                let attributes = variable.attributes.compactMap { $0.as(AttributeSyntax.self) }
                if let keyed = attributes.first(where: isKeyedForm) {
                    diagnose(Diagnostic(node: Syntax(keyed), message: EntityDiagnostic.keyedForm(name, keyed.attributeName.trimmedDescription)))
                    continue
                }
                if let wrapper = attributes.first(where: { $0.attributeName.trimmedDescription == "Transformable" }) {
                    diagnose(Diagnostic(node: Syntax(wrapper), message: EntityDiagnostic.transformable(name)))
                    continue
                }
            }
            guard let variable = item.decl.as(VariableDeclSyntax.self), isPersisted(variable),
                  let binding = variable.bindings.first, let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
            let name = pattern.identifier.text
            guard let written = binding.typeAnnotation?.type else {
                diagnose(Diagnostic(node: Syntax(binding), message: EntityDiagnostic.missingType(name)))
                continue
            }
            if let problem = unsupported(written) {
                diagnose(Diagnostic(node: Syntax(written), message: EntityDiagnostic.unsupportedType(name, written.trimmedDescription, problem)))
                continue
            }
            let type = written.trimmed
            var member = DeclaredMember(name: name, type: type, initializer: binding.initializer?.value.trimmed)
            for attribute in variable.attributes.compactMap({ $0.as(AttributeSyntax.self) }) {
                let arguments: LabeledExprListSyntax
                if case .argumentList(let list) = attribute.arguments { arguments = list } else { arguments = [] }
                switch attribute.attributeName.trimmedDescription {
                case "Index":
                    member.indexKinds += arguments.isEmpty ? ["values"] : arguments.map { $0.expression.trimmedDescription.trimmingPrefix(".") }
                case "Unique":
                    member.isUnique = true
                case "Relationship":
                    guard isRelationshipShaped(type) else {
                        diagnose(Diagnostic(node: Syntax(attribute), message: EntityDiagnostic.notARelationship(name, type.trimmedDescription)))
                        continue
                    }
                    member.relationship = arguments
                    member.originalName = arguments.first { $0.label?.text == "originalName" }?.expression.trimmed
                case "Attribute":
                    member.originalName = arguments.first { $0.label?.text == "originalName" }?.expression.trimmed
                    member.attributeOptions = arguments.filter { $0.label == nil }.map(\.expression.trimmed)
                default:
                    break
                }
            }
            result.append(member)
        }
        return result
    }

    /// Why `type` can never be stored, or nil when it may be (the compiler checks the rest:
    /// an attribute type must be `AttributeConvertible`, a relationship `T?` or `[T]` of a
    /// `ManagedObject` subclass).
    static func unsupported(_ type: TypeSyntax) -> String? {
        if type.is(TupleTypeSyntax.self) { return "a tuple" }
        if type.is(FunctionTypeSyntax.self) { return "a function" }
        if type.is(DictionaryTypeSyntax.self) { return "a dictionary" }
        if let optional = type.as(OptionalTypeSyntax.self) { return unsupported(optional.wrappedType) }
        if let array = type.as(ArrayTypeSyntax.self) {
            let element = array.element.trimmedDescription
            if valueTypes.contains(element) || array.element.is(OptionalTypeSyntax.self) || array.element.is(ArrayTypeSyntax.self) {
                return "an array of values; a to-many relationship is an array of a ManagedObject subclass"
            }
        }
        if let identifier = type.as(IdentifierTypeSyntax.self), ["Set", "Dictionary", "Array"].contains(identifier.name.text) {
            return "a collection"
        }
        return nil
    }

    static func isRelationshipShaped(_ type: TypeSyntax) -> Bool {
        type.is(OptionalTypeSyntax.self) || type.is(ArrayTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
    }

    /// The attribute types Arbor stores.
    static let valueTypes: Set<String> = [
        "String", "Int", "Int64", "Int32", "Int16", "Double", "Float", "Bool", "Date", "Data", "UUID", "URL", "Decimal",
    ]
}

extension String {
    func trimmingPrefix(_ prefix: String) -> String { hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self }
}
