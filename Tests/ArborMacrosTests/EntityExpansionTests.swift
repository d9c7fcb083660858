import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite("@Entity expansion")
struct EntityExpansionTests {
    @Test("attributes: types, defaults, indexes (#Index too), uniqueness, a rename; transient, computed and static properties are left alone")
    func attributes() {
        expect("""
            @Entity
            final class Stop: ManagedObject {
                #Index<Stop>([\\.longitude, \\.latitude])
                @Unique var stopID: String
                @Index(.normalized, .words) var name: String = ""
                @Index var code: Int16 = 0
                var latitude: Double?
                @Attribute(originalName: "lon") var longitude: Double?
                @Transient var visits = 0
                var label: String { name }
                static var count = 0
            }
            """, expandsTo: """
            final class Stop: ManagedObject {
                var stopID: String {
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }
                var name: String {
                    init(initialValue) {
                    }
                    get {
                        _$get(1)
                    }
                    set {
                        _$set(1, newValue)
                    }
                }
                var code: Int16 {
                    init(initialValue) {
                    }
                    get {
                        _$get(2)
                    }
                    set {
                        _$set(2, newValue)
                    }
                }
                var latitude: Double? {
                    get {
                        _$get(3)
                    }
                    set {
                        _$set(3, newValue)
                    }
                }
                var longitude: Double? {
                    get {
                        _$get(4)
                    }
                    set {
                        _$set(4, newValue)
                    }
                }
                var visits = 0
                var label: String { name }
                static var count = 0

                override class var _$entityName: String {
                    "Stop"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["stopID", "name", "code", "latitude", "longitude"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 5
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Stop", class: Stop.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("stopID", String.self))
                    entity._$add(ManagedObject._$declare("name", String.self, initialValue: ""))
                    entity._$add(ManagedObject._$declare("code", Int16.self, indexed: true, initialValue: 0))
                    entity._$add(ManagedObject._$declare("latitude", Double?.self))
                    entity._$add(ManagedObject._$declare("longitude", Double?.self, originalName: "lon"))
                    entity.indexes = [IndexDescription(["longitude", "latitude"]), IndexDescription(["name"], normalized: true), IndexDescription(["name"], kind: .words), IndexDescription(["stopID"], unique: true)]
                    return entity
                }
            }
            """)
    }

    @Test("relationships: inverse by key path, delete rule, order, bounds, a required to-one")
    func relationships() {
        expect("""
            @Entity
            final class Trip: ManagedObject {
                @Relationship(inverse: \\StopTime.trip, deleteRule: .cascade, ordered: true, maxCount: 500) var stopTimes: [StopTime]
                @Relationship(optional: false, originalName: "line") var route: Route?
                var tags: [Tag] = []
            }
            """, expandsTo: """
            final class Trip: ManagedObject {
                var stopTimes: [StopTime] {
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
                var tags: [Tag] {
                    init(initialValue) {
                    }
                    get {
                        _$get(2)
                    }
                    set {
                        _$set(2, newValue)
                    }
                }

                override class var _$entityName: String {
                    "Trip"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["stopTimes", "route", "tags"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 3
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Trip", class: Trip.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("stopTimes", [StopTime].self, inverse: "trip", deleteRule: .cascade, ordered: true, maxCount: 500))
                    entity._$add(ManagedObject._$declare("route", Route?.self, optional: false, originalName: "line"))
                    entity._$add(ManagedObject._$declare("tags", [Tag].self, initialValue: []))
                    return entity
                }
            }
            """)
    }

    @Test("attribute options: rules, ephemeral and derived attributes reach the declaration")
    func attributeOptions() {
        expect("""
            @Entity
            final class Station: ManagedObject {
                @Attribute(.range(-90...90), originalName: "lat") var latitude: Double = 0
                @Attribute(.length(1...8), .pattern("[A-Z]+")) var code: String
                @Attribute(.ephemeral) var isSelected: Bool = false
                @Attribute(.derived("departures.@count")) var departureCount: Int = 0
            }
            """, expandsTo: """
            final class Station: ManagedObject {
                var latitude: Double {
                    init(initialValue) {
                    }
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }
                var code: String {
                    get {
                        _$get(1)
                    }
                    set {
                        _$set(1, newValue)
                    }
                }
                var isSelected: Bool {
                    init(initialValue) {
                    }
                    get {
                        _$get(2)
                    }
                    set {
                        _$set(2, newValue)
                    }
                }
                var departureCount: Int {
                    init(initialValue) {
                    }
                    get {
                        _$get(3)
                    }
                    set {
                        _$set(3, newValue)
                    }
                }

                override class var _$entityName: String {
                    "Station"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["latitude", "code", "isSelected", "departureCount"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 4
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Station", class: Station.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("latitude", Double.self, originalName: "lat", options: [.range(-90 ... 90)], initialValue: 0))
                    entity._$add(ManagedObject._$declare("code", String.self, options: [.length(1 ... 8), .pattern("[A-Z]+")]))
                    entity._$add(ManagedObject._$declare("isSelected", Bool.self, options: [.ephemeral], initialValue: false))
                    entity._$add(ManagedObject._$declare("departureCount", Int.self, options: [.derived("departures.@count")], initialValue: 0))
                    return entity
                }
            }
            """)
    }

    @Test("a class that overrides validateValue(_:forKey:) says so, for saves to call it")
    func overridesValidateValue() {
        expect("""
            @Entity
            final class Code: ManagedObject {
                var text: String
                override func validateValue(_ value: Any?, forKey key: String) throws {
                    try super.validateValue(value, forKey: key)
                }
            }
            """, expandsTo: """
            final class Code: ManagedObject {
                var text: String {
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }
                override func validateValue(_ value: Any?, forKey key: String) throws {
                    try super.validateValue(value, forKey: key)
                }

                override class var _$entityName: String {
                    "Code"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["text"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 1
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Code", class: Code.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("text", String.self))
                    return entity
                }

                override class var _$overridesValidateValue: Bool {
                    true
                }
            }
            """)
    }

    @Test("a sub-entity counts its properties after its superclass's; name, abstract and rename from the arguments, compound uniqueness from #Unique")
    func subEntity() {
        expect("""
            @Entity("Vehicle", abstract: true, originalName: "Car")
            public class Vehicle: ManagedObject {
                #Unique<Vehicle>([\\.fleet, \\.number])
                public var fleet: String
                public var number: Int
            }
            @Entity
            final class Bus: Vehicle {
                var seats: Int32 = 40
            }
            """, expandsTo: """
            public class Vehicle: ManagedObject {
                public var fleet: String {
                    get {
                        _$get(0)
                    }
                    set {
                        _$set(0, newValue)
                    }
                }
                public var number: Int {
                    get {
                        _$get(1)
                    }
                    set {
                        _$set(1, newValue)
                    }
                }

                public override class var _$entityName: String {
                    "Vehicle"
                }

                public override class var _$propertyNames: [String] {
                    super._$propertyNames + ["fleet", "number"]
                }

                public override class var _$propertyCount: Int {
                    super._$propertyCount + 2
                }

                public override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Vehicle", class: Vehicle.self, superentity: ManagedObject._$superentityName(of: ManagedObject.self), isAbstract: true, renamingIdentifier: "Car")
                    entity._$add(ManagedObject._$declare("fleet", String.self))
                    entity._$add(ManagedObject._$declare("number", Int.self))
                    entity.indexes = [IndexDescription(["fleet", "number"], unique: true)]
                    return entity
                }
            }
            final class Bus: Vehicle {
                var seats: Int32 {
                    init(initialValue) {
                    }
                    get {
                        _$get(Vehicle._$propertyCount + 0)
                    }
                    set {
                        _$set(Vehicle._$propertyCount + 0, newValue)
                    }
                }

                override class var _$entityName: String {
                    "Bus"
                }

                override class var _$propertyNames: [String] {
                    super._$propertyNames + ["seats"]
                }

                override class var _$propertyCount: Int {
                    super._$propertyCount + 1
                }

                override class func _$entityDescription() -> EntityDescription? {
                    var entity = EntityDescription("Bus", class: Bus.self, superentity: ManagedObject._$superentityName(of: Vehicle.self), isAbstract: false, renamingIdentifier: nil)
                    entity._$add(ManagedObject._$declare("seats", Int32.self, initialValue: 40))
                    return entity
                }
            }
            """)
    }
}
