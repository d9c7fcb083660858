import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Attributes: every type round-trips across reopen")
struct AttributeRoundTripTests {
    @Test("all attribute types, optionals and defaults survive save and reopen")
    func everyType() throws {
        let stack = try TestStack()
        let date = Date(timeIntervalSince1970: 90600.25)
        let uuid = UUID()
        let url = URL(string: "https://example.org/a?b=c")
        let decimal = Decimal(string: "12345.678901234567890123")
        let payload = SamplePayload(tags: ["a", "b"], weight: 2.5)
        let id: ObjectID = try stack.context().performAndWait {
            let context = stack.context()
            let sample = Sample(context: context)
            #expect(sample.withDefault == 42)
            sample.int16 = -32768
            sample.int32 = 2_147_483_647
            sample.int64 = Int64.min
            sample.double = -0.0
            sample.float = 3.5
            sample.bool = true
            sample.string = "U Görlitzer Bahnhof 🚇"
            sample.date = date
            sample.data = Data([0, 1, 2, 255])
            sample.uuid = uuid
            sample.url = url ?? URL(fileURLWithPath: "/")
            sample.decimal = decimal ?? 0
            sample.payload = payload
            sample.optionalInt = nil
            #expect(sample.objectID.isTemporaryID)
            try context.save()
            #expect(!sample.objectID.isTemporaryID)
            return sample.objectID
        }
        try stack.reopen()
        let context = stack.context()
        try context.performAndWait {
            guard let uri = stack.coordinator.managedObjectID(forURIRepresentation: id.uriRepresentation) else {
                Issue.record("URI did not resolve")
                return
            }
            let sample = try #require(try context.existingObject(with: uri) as? Sample)
            #expect(sample.int16 == -32768)
            #expect(sample.int32 == 2_147_483_647)
            #expect(sample.int64 == Int64.min)
            #expect(sample.double == 0 && sample.double.sign == .minus)
            #expect(sample.float == 3.5)
            #expect(sample.bool)
            #expect(sample.string == "U Görlitzer Bahnhof 🚇")
            #expect(sample.date == date)
            #expect(sample.data == Data([0, 1, 2, 255]))
            #expect(sample.uuid == uuid)
            #expect(sample.url == url)
            #expect(sample.decimal == decimal)
            #expect(sample.payload == payload)
            #expect(sample.optionalString == nil)
            #expect(sample.optionalInt == nil)
            #expect(sample.withDefault == 42)
            #expect(sample.value(forKey: "int32") as? Int64 == 2_147_483_647)
        }
    }

    @Test("dynamic setValue converts Swift values and reports what does not fit")
    func dynamicValues() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let sample = try context.insertNewObject(forEntityName: "Sample")
            for (key, value) in [("int16", 7 as Any), ("int32", Int32(8)), ("int64", Int64(9)), ("double", 1.5), ("float", Float(2)),
                                 ("bool", false), ("string", "s"), ("date", Date()), ("data", Data()), ("uuid", UUID()),
                                 ("url", URL(fileURLWithPath: "/tmp")), ("decimal", Decimal(3))] as [(String, Any)] {
                sample.setValue(value, forKey: key)
            }
            try context.save()
            sample.setValue(70_000, forKey: "int16")
            sample.setValue("text", forKey: "double")
            sample.setValue(1, forKey: "noSuchKey")
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.count == 3)
            #expect(error.failures.map(\.key).sorted() == ["double", "int16", "noSuchKey"])
        }
    }
}
