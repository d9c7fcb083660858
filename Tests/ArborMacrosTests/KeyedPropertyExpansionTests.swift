import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite("@Attribute(\"key\") and @Relationship(\"key\") expansion")
struct KeyedPropertyExpansionTests {
    @Test("an attribute caches its slot by the property's key path; a relationship reads by key")
    func keyed() {
        expect("""
            final class Stop: ManagedObject {
                @Attribute("stop_name") var name: String
                @Relationship("stopTimes") var stopTimes: [StopTime]
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name: String {
                    get {
                        _$keyedAttribute(\\Stop.name, "stop_name")
                    }
                    set {
                        _$setKeyedAttribute("stop_name", newValue)
                    }
                }
                var stopTimes: [StopTime] {
                    get {
                        _$keyedRelationship("stopTimes")
                    }
                    set {
                        _$setKeyedRelationship("stopTimes", newValue)
                    }
                }
            }
            """, macros: keyedMacros)
    }
}

@Suite("@Attribute(\"key\") diagnostics")
struct KeyedPropertyDiagnosticTests {
    @Test("an initial value")
    func initialValue() {
        expect("""
            final class Stop: ManagedObject {
                @Attribute("code") var code: Int = 0
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var code: Int = 0
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Attribute(\"key\") property 'code' cannot have an initial value: give the attribute a default in its AttributeDescription, or declare the class with @Entity, where an initial value is the default", line: 2, column: 28),
            ], macros: keyedMacros)
    }

    @Test("a property outside a class")
    func outsideAClass() {
        expect("""
            struct Row {
                @Attribute("name") var name: String
            }
            """, expandsTo: """
            struct Row {
                var name: String
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Attribute(\"key\") applies to a 'var' of a ManagedObject subclass", line: 2, column: 5),
            ], macros: keyedMacros)
    }
}
