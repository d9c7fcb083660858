import Arbor
import ArborTransit
import Testing

/// The transit model is declared with `@Entity`; stores written when it was described by hand
/// must open as the same model, so both forms must give one stored hash.
@Suite("The transit model declared with @Entity")
struct TransitModelDeclarationTests {
    /// The model as it was written by hand before `@Entity`.
    static func handWritten() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                "Stop", class: Stop.self,
                attributes: [
                    AttributeDescription("identifier", .int64, indexed: true),
                    AttributeDescription("stopID", .string),
                    AttributeDescription("name", .string, defaultValue: .string("")),
                    AttributeDescription("normalizedName", .string, defaultValue: .string(""), indexed: true),
                    AttributeDescription("latitude", .double, optional: true),
                    AttributeDescription("longitude", .double, optional: true),
                    AttributeDescription("locationType", .int16, defaultValue: .int(0)),
                    AttributeDescription("timetableDigest", .int64, optional: true),
                ],
                relationships: [.toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .cascade)],
                indexes: [IndexDescription(["longitude", "latitude"]), IndexDescription(["name"], normalized: true),
                          IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)],
                uniquenessConstraints: [["stopID"]]),
            EntityDescription(
                "StopTime", class: StopTime.self,
                attributes: [
                    AttributeDescription("arrivalTime", .date, optional: true),
                    AttributeDescription("departureTime", .date, optional: true),
                    AttributeDescription("pickupType", .int16, defaultValue: .int(0)),
                    AttributeDescription("dropOffType", .int16, defaultValue: .int(0)),
                ],
                relationships: [.toOne("stop", "Stop", inverse: "stopTimes", optional: false)],
                indexes: [IndexDescription(["stop", "departureTime"])]),
        ])
    }

    @Test("one model written both ways has one hash, the one stores written before @Entity carry")
    func sameHash() throws {
        let declared = try TransitModel.make()
        let written = try Self.handWritten()
        #expect(declared.schema == written.schema)
        #expect(declared.versionHash == written.versionHash)
        #expect(declared.versionHash == "0633c6e792c615e3")  // the hand-written model's, before @Entity
    }
}
