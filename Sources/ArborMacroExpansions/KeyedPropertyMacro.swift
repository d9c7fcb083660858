import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Attribute("key")` and `@Relationship("key")`, the hand-written forms: accessors that read
/// and write the property named `key` through the object's context. An attribute's slot is
/// cached by the property's own key path, so a read does no name lookup.
public protocol KeyedPropertyExpansion: AccessorMacro {}

extension KeyedPropertyExpansion {
    public static func expansion(of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AccessorDeclSyntax] {
        let form = node.attributeName.trimmedDescription
        guard let variable = declaration.as(VariableDeclSyntax.self), variable.bindingSpecifier.tokenKind == .keyword(.var),
              let binding = variable.bindings.first, let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text,
              let owner = context.lexicalContext.first?.as(ClassDeclSyntax.self)?.name.text else {
            context.diagnose(Diagnostic(node: Syntax(node), message: KeyedPropertyDiagnostic.notAProperty(form)))
            return []
        }
        guard case .argumentList(let arguments) = node.arguments, let key = arguments.first?.expression.trimmed else { return [] }
        if binding.initializer != nil {
            context.diagnose(Diagnostic(node: Syntax(binding), message: KeyedPropertyDiagnostic.initialValue(form, name)))
            return []
        }
        if form == "Relationship" {
            return ["get { _$keyedRelationship(\(key)) }", "set { _$setKeyedRelationship(\(key), newValue) }"]
        }
        return ["get { _$keyedAttribute(\\\(raw: owner).\(raw: name), \(key)) }", "set { _$setKeyedAttribute(\(key), newValue) }"]
    }
}

enum KeyedPropertyDiagnostic: DiagnosticMessage {
    case notAProperty(String)
    case initialValue(String, String)

    var message: String {
        switch self {
        case .notAProperty(let form):
            return "@\(form)(\"key\") applies to a 'var' of a ManagedObject subclass"
        case .initialValue(let form, let property):
            return "@\(form)(\"key\") property '\(property)' cannot have an initial value: give the attribute a default in its "
                + "AttributeDescription, or declare the class with @Entity, where an initial value is the default"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "ArborMacros", id: "\(self)".prefix { $0 != "(" }.description) }
    var severity: DiagnosticSeverity { .error }
}
