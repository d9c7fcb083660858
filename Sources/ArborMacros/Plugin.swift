import ArborMacroExpansions
import SwiftCompilerPlugin
import SwiftSyntaxMacros

// The macros `Arbor` declares. The compiler resolves `#externalMacro(module: "ArborMacros",
// type: …)` by this module's name, so the types live here; their expansions are in
// `ArborMacroExpansions`, a library the tests use directly.
public enum EntityMacro: EntityExpansion {}
public enum PersistedPropertyMacro: PersistedPropertyExpansion {}
public enum KeyedPropertyMacro: KeyedPropertyExpansion {}
public enum MarkerMacro: MarkerExpansion {}
public enum CompoundDeclarationMacro: CompoundDeclarationExpansion {}

@main
struct ArborMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [EntityMacro.self, PersistedPropertyMacro.self, KeyedPropertyMacro.self, MarkerMacro.self,
                                          CompoundDeclarationMacro.self]
}
