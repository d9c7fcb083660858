import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@_PersistedProperty(n)` (added by `@Entity`): accessors that read and write the object's
/// slot for its n-th persisted property through the entity's slot table, with no key-path or
/// name lookup. A property with an initial value keeps it legal with an `init` accessor (the
/// value is the attribute's default, applied when an object is inserted).
public protocol PersistedPropertyExpansion: AccessorMacro {}

extension PersistedPropertyExpansion {
    public static func expansion(of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), let binding = variable.bindings.first,
              case .argumentList(let arguments) = node.arguments, let position = arguments.first?.expression.trimmedDescription else {
            return []
        }
        let index: String
        if let base = arguments.first(where: { $0.label?.text == "after" })?.expression.trimmedDescription {
            index = "\(base.hasSuffix(".self") ? String(base.dropLast(5)) : base)._$propertyCount + \(position)"
        } else {
            index = position
        }
        var accessors: [AccessorDeclSyntax] = []
        if binding.initializer != nil { accessors.append("init(initialValue) {}") }
        accessors.append("get { _$get(\(raw: index)) }")
        accessors.append("set { _$set(\(raw: index), newValue) }")
        return accessors
    }
}

/// `@Index`, `@Unique`, `@Transient`, `@Relationship(...)`, `@Attribute(originalName:)`: read by
/// `@Entity`; they add nothing themselves.
public protocol MarkerExpansion: PeerMacro {}

extension MarkerExpansion {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] { [] }
}

/// `#Index<Root>(…)` and `#Unique<Root>(…)`: read by `@Entity` from the class's members; they
/// declare nothing themselves, and are an error outside an `@Entity` class.
public protocol CompoundDeclarationExpansion: DeclarationMacro {}

extension CompoundDeclarationExpansion {
    public static func expansion(of node: some FreestandingMacroExpansionSyntax,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        let isEntity = context.lexicalContext.first?.as(ClassDeclSyntax.self)?.attributes.contains {
            $0.as(AttributeSyntax.self)?.attributeName.trimmedDescription == "Entity"
        } ?? false
        if !isEntity {
            context.diagnose(Diagnostic(node: Syntax(node), message: EntityDiagnostic.compoundOutsideEntity(node.macroName.text)))
        }
        return []
    }
}
