import ArborMacroExpansions
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

enum EntityMacro: EntityExpansion {}
enum PersistedPropertyMacro: PersistedPropertyExpansion {}
enum KeyedPropertyMacro: KeyedPropertyExpansion {}
enum MarkerMacro: MarkerExpansion {}
/// `@Index` and `#Index`, `@Unique` and `#Unique`: one name each, so one type for both roles.
enum MarkerOrCompoundMacro: MarkerExpansion, CompoundDeclarationExpansion {}

/// The macros as an `@Entity` class sees them: the markers expand to nothing.
let entityMacros: [String: MacroSpec] = [
    "Entity": MacroSpec(type: EntityMacro.self),
    "_PersistedProperty": MacroSpec(type: PersistedPropertyMacro.self),
    "Index": MacroSpec(type: MarkerOrCompoundMacro.self),
    "Unique": MacroSpec(type: MarkerOrCompoundMacro.self),
    "Transient": MacroSpec(type: MarkerMacro.self),
    "Relationship": MacroSpec(type: MarkerMacro.self),
    "Attribute": MacroSpec(type: MarkerMacro.self),
]

/// The hand-written forms, `@Attribute("key")` and `@Relationship("key")`.
let keyedMacros: [String: MacroSpec] = [
    "Attribute": MacroSpec(type: KeyedPropertyMacro.self),
    "Relationship": MacroSpec(type: KeyedPropertyMacro.self),
]

/// `assertMacroExpansion` reporting to Swift Testing.
func expect(_ source: String, expandsTo expanded: String, diagnostics: [DiagnosticSpec] = [],
            macros: [String: MacroSpec] = entityMacros, sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros,
                         failureHandler: { Issue.record(Comment(rawValue: $0.message), sourceLocation: sourceLocation) })
}
