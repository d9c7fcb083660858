import Arbor
import Foundation

// Entities used by the tests and the fuzz targets. Each class only declares its properties;
// the model below says how they are stored.

public final class Stop: ManagedObject {
    @Attribute("identifier") public var identifier: Int64
    @Attribute("stopID") public var stopID: String
    @Attribute("name") public var name: String
    @Attribute("latitude") public var latitude: Double
    @Attribute("longitude") public var longitude: Double
    @Attribute("normalizedName") public var normalizedName: String?
    @Relationship("stopTimes") public var stopTimes: [StopTime]
    @Relationship("parent") public var parent: Stop?
    @Relationship("children") public var children: [Stop]

    public var awakeFromInsertCount = 0
    public var awakeFromFetchCount = 0
    public var willSaveCount = 0
    public var prepareForDeletionCount = 0
    public override func awakeFromInsert() { awakeFromInsertCount += 1 }
    public override func awakeFromFetch() { awakeFromFetchCount += 1 }
    public override func willSave() { willSaveCount += 1 }
    public override func prepareForDeletion() { prepareForDeletionCount += 1 }
}

public final class StopTime: ManagedObject {
    @Attribute("arrivalTime") public var arrivalTime: Date
    @Attribute("departureTime") public var departureTime: Date
    @Attribute("pickupType") public var pickupType: Int16
    @Attribute("dropOffType") public var dropOffType: Int16
    @Relationship("stop") public var stop: Stop?
}

public final class Sample: ManagedObject {
    @Attribute("int16") public var int16: Int16
    @Attribute("int32") public var int32: Int32
    @Attribute("int64") public var int64: Int64
    @Attribute("double") public var double: Double
    @Attribute("float") public var float: Float
    @Attribute("bool") public var bool: Bool
    @Attribute("string") public var string: String
    @Attribute("date") public var date: Date
    @Attribute("data") public var data: Data
    @Attribute("uuid") public var uuid: UUID
    @Attribute("url") public var url: URL
    @Attribute("decimal") public var decimal: Decimal
    @Transformable("payload") public var payload: SamplePayload?
    @Attribute("optionalString") public var optionalString: String?
    @Attribute("optionalInt") public var optionalInt: Int64?
    @Attribute("withDefault") public var withDefault: Int32
}

public struct SamplePayload: Codable, Equatable, Sendable {
    public var tags: [String]
    public var weight: Double
    public init(tags: [String], weight: Double) {
        self.tags = tags
        self.weight = weight
    }
}

public class Vehicle: ManagedObject {
    @Attribute("name") public var name: String
    @Relationship("routes") public var routes: [Route]
}

public final class Bus: Vehicle {
    @Attribute("capacity") public var capacity: Int32
}

public final class Tram: Vehicle {
    @Attribute("length") public var length: Double
}

public final class Route: ManagedObject {
    @Attribute("code") public var code: String
    @Relationship("vehicles") public var vehicles: [Vehicle]
    @Relationship("operator") public var routeOperator: Operator?
}

public final class Operator: ManagedObject {
    @Attribute("name") public var name: String
    @Relationship("routes") public var routes: [Route]
}

public final class Person: ManagedObject {
    @Attribute("name") public var name: String
    @Relationship("badge") public var badge: Badge?
}

public final class Badge: ManagedObject {
    @Attribute("number") public var number: Int64
    @Relationship("owner") public var owner: Person?
}

public enum Fixtures {
    /// The transit model of DEVELOPERS.md.
    public static func transitEntities() -> [EntityDescription] {
        [
            EntityDescription(
                "Stop", class: Stop.self,
                attributes: [
                    AttributeDescription("identifier", .int64),
                    AttributeDescription("stopID", .string),
                    AttributeDescription("name", .string, indexed: true),
                    AttributeDescription("latitude", .double),
                    AttributeDescription("longitude", .double),
                    AttributeDescription("normalizedName", .string, optional: true),
                ],
                relationships: [
                    .toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .cascade),
                    .toOne("parent", "Stop", inverse: "children"),
                    .toMany("children", "Stop", inverse: "parent"),
                ],
                indexes: [IndexDescription(["longitude", "latitude"]), IndexDescription(["name"], normalized: true)],
                uniquenessConstraints: [["identifier"], ["stopID"]]),
            EntityDescription(
                "StopTime", class: StopTime.self,
                attributes: [
                    AttributeDescription("arrivalTime", .date),
                    AttributeDescription("departureTime", .date),
                    AttributeDescription("pickupType", .int16, defaultValue: .int(0)),
                    AttributeDescription("dropOffType", .int16, defaultValue: .int(0)),
                ],
                relationships: [.toOne("stop", "Stop", inverse: "stopTimes", optional: false)],
                indexes: [IndexDescription(["stop", "departureTime"])]),
        ]
    }

    /// Every feature: all attribute types, inheritance, many-to-many, one-to-one, delete rules,
    /// counts, configurations.
    public static func fullModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: transitEntities() + [
            EntityDescription(
                "Sample", class: Sample.self,
                attributes: [
                    AttributeDescription("int16", .int16), AttributeDescription("int32", .int32),
                    AttributeDescription("int64", .int64), AttributeDescription("double", .double),
                    AttributeDescription("float", .float), AttributeDescription("bool", .bool),
                    AttributeDescription("string", .string), AttributeDescription("date", .date),
                    AttributeDescription("data", .data), AttributeDescription("uuid", .uuid),
                    AttributeDescription("url", .url), AttributeDescription("decimal", .decimal),
                    AttributeDescription("payload", .transformable, optional: true),
                    AttributeDescription("optionalString", .string, optional: true),
                    AttributeDescription("optionalInt", .int64, optional: true),
                    AttributeDescription("withDefault", .int32, defaultValue: .int(42)),
                ]),
            EntityDescription(
                "Vehicle", class: Vehicle.self, isAbstract: true,
                attributes: [AttributeDescription("name", .string, indexed: true)],
                relationships: [.toMany("routes", "Route", inverse: "vehicles")]),
            EntityDescription("Bus", class: Bus.self, superentity: "Vehicle", attributes: [AttributeDescription("capacity", .int32)]),
            EntityDescription("Tram", class: Tram.self, superentity: "Vehicle", attributes: [AttributeDescription("length", .double)]),
            EntityDescription(
                "Route", class: Route.self,
                attributes: [AttributeDescription("code", .string)],
                relationships: [
                    .toMany("vehicles", "Vehicle", inverse: "routes", ordered: true, maxCount: 3),
                    .toOne("operator", "Operator", inverse: "routes"),
                ]),
            EntityDescription(
                "Operator", class: Operator.self,
                attributes: [AttributeDescription("name", .string)],
                relationships: [.toMany("routes", "Route", inverse: "operator", deleteRule: .deny)]),
            EntityDescription(
                "Person", class: Person.self,
                attributes: [AttributeDescription("name", .string)],
                relationships: [.toOne("badge", "Badge", inverse: "owner", deleteRule: .cascade)]),
            EntityDescription(
                "Badge", class: Badge.self,
                attributes: [AttributeDescription("number", .int64)],
                relationships: [.toOne("owner", "Person", inverse: "badge", optional: false)]),
        ], configurations: ["Transit": ["Stop", "StopTime"], "Fleet": ["Vehicle", "Bus", "Tram", "Route", "Operator"]])
    }
}
