import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Each diagnostic names the property and the fix; the property is left out of the entity.
@Suite("@Entity diagnostics")
struct EntityDiagnosticTests {
    @Test("a property without a type annotation")
    func missingType() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                var name = ""
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name = ""

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + []
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 0
                }

                override class func _$entityDescription() -> EntityDescription? {
                    return EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "persisted property 'name' needs a type annotation (for example 'var name: String'), or mark it @Transient", line: 3, column: 9),
            ])
    }

    @Test("types that cannot be stored: a dictionary, an array of values, a tuple, a function")
    func unsupportedTypes() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                var extras: [String: String]
                var codes: [Int]
                var position: (Double, Double)
                var callback: () -> Void
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var extras: [String: String]
                var codes: [Int]
                var position: (Double, Double)
                var callback: () -> Void

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + []
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 0
                }

                override class func _$entityDescription() -> EntityDescription? {
                    return EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "property 'extras' of type '[String: String]' cannot be stored (a dictionary): use String, Int, Int64, Int32, Int16, Double, Float, Bool, Date, Data, UUID, URL, Decimal or an AttributeConvertible type, optional or not; 'T?' or '[T]' of a ManagedObject subclass for a relationship; or mark it @Transient to keep it in memory only", line: 3, column: 17),
                DiagnosticSpec(message: "property 'codes' of type '[Int]' cannot be stored (an array of values; a to-many relationship is an array of a ManagedObject subclass): use String, Int, Int64, Int32, Int16, Double, Float, Bool, Date, Data, UUID, URL, Decimal or an AttributeConvertible type, optional or not; 'T?' or '[T]' of a ManagedObject subclass for a relationship; or mark it @Transient to keep it in memory only", line: 4, column: 16),
                DiagnosticSpec(message: "property 'position' of type '(Double, Double)' cannot be stored (a tuple): use String, Int, Int64, Int32, Int16, Double, Float, Bool, Date, Data, UUID, URL, Decimal or an AttributeConvertible type, optional or not; 'T?' or '[T]' of a ManagedObject subclass for a relationship; or mark it @Transient to keep it in memory only", line: 5, column: 19),
                DiagnosticSpec(message: "property 'callback' of type '() -> Void' cannot be stored (a function): use String, Int, Int64, Int32, Int16, Double, Float, Bool, Date, Data, UUID, URL, Decimal or an AttributeConvertible type, optional or not; 'T?' or '[T]' of a ManagedObject subclass for a relationship; or mark it @Transient to keep it in memory only", line: 6, column: 19),
            ])
    }

    @Test("@Relationship on a value type")
    func relationshipOnValue() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                @Relationship(deleteRule: .cascade) var name: String
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name: String {
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["name"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 1
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("name", String.self))
                    return entity
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Relationship on 'name' needs a relationship type: 'Destination?' (to-one) or '[Destination]' (to-many), not 'String'", line: 3, column: 5),
            ])
    }

    @Test("the hand-written form inside an @Entity class")
    func keyedFormInEntity() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                @Attribute("stop_name") var name: String
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name: String

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + []
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 0
                }

                override class func _$entityDescription() -> EntityDescription? {
                    return EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "in an @Entity class the property's name is the attribute's name: write 'var name' without @Attribute(\"key\"), and use @Attribute(originalName:) when it was renamed", line: 3, column: 5),
            ])
    }

    @Test("@Entity on a struct")
    func notAClass() {
        expect("""
            @Entity
            struct Stop {
                var name: String
            }
            """, expandsTo: """
            struct Stop {
                var name: String
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Entity applies to a class: declare 'final class Name: ManagedObject'", line: 1, column: 1),
            ])
    }

    @Test("@Entity on a class without a superclass")
    func notAManagedObject() {
        expect("""
            @Entity
            final class Route {
                var name: String
            }
            """, expandsTo: """
            final class Route {
                var name: String
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Entity class 'Route' must subclass ManagedObject (or another @Entity class)", line: 2, column: 13),
            ])
    }

    @Test("#Index naming a transient property or a path, and an argument that is not a list")
    func compoundMistakes() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                #Index<Stop>([\\.name, \\.visits], [\\.route.name])
                #Unique<Stop>(\\.name)
                var name: String
                var route: Route?
                @Transient var visits = 0
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name: String {
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }
                var route: Route? {
                    get {
                        _$get(1)
                    }
                    set {
                        _$set(1, newValue)
                    }
                }
                var visits = 0

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["name", "route"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 2
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("name", String.self))
                    entity._$add(ManagedObject._$declare("route", Route?.self))
                    return entity
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "#Index names properties of the class itself, one key path component each: '\\.name'", line: 3, column: 39),
                DiagnosticSpec(message: "each argument of #Unique is one constraint, a list of properties: #Unique<Stop>([\\.longitude, \\.latitude])", line: 4, column: 19),
                DiagnosticSpec(message: "'visits' in #Index or #Unique is not a persisted property of this class (a transient, computed or inherited one cannot be indexed here)", line: 3, column: 27),
            ])
    }

    @Test("#Index outside an @Entity class")
    func compoundOutsideEntity() {
        expect("""
            final class Stop: ManagedObject {
                #Index<Stop>([\\.name])
                @Attribute("name") var name: String
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var name: String {
                    get {
                        _$keyedAttribute(\\Stop.name, "name")
                    }
                    set {
                        _$setKeyedAttribute("name", newValue)
                    }
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "#Index belongs in the body of an @Entity class; for a hand-written model, list the index in its EntityDescription", line: 2, column: 5),
            ], macros: entityMacros.merging(keyedMacros) { $1 })
    }

    @Test("@Transformable(\"key\") inside an @Entity class")
    func transformableInEntity() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                @Transformable("tags") var tags: [String]?
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                @Transformable("tags") var tags: [String]?

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + []
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 0
                }

                override class func _$entityDescription() -> EntityDescription? {
                    return EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                }
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Transformable(\"key\") belongs to hand-written models: in an @Entity class, give 'tags' a type that conforms to AttributeConvertible (for example by encoding it as Data), or mark it @Transient", line: 3, column: 5),
            ])
    }
}
