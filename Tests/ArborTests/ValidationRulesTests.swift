@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Validation rules and methods: ranges, lengths, patterns, validateFor… hooks", .serialized)
struct ValidationRulesTests {
    func station(_ context: ManagedObjectContext, _ name: String, code: String = "A1") -> RuledStation {
        let station = RuledStation(context: context)
        station.name = name
        station.code = code
        return station
    }

    func rowCount(_ stack: TestStack, _ entity: String) throws -> Int {
        let context = stack.context()
        return try context.performAndWait { try context.count(for: FetchRequest(entityName: entity)) }
    }

    @Test("every rule's failure is reported with its object and key, together, and nothing is written")
    func everyRuleTogether() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            let bad = station(context, "bad", code: "lower case and far too long")
            bad.latitude = 91
            bad.opened = Date(timeIntervalSince1970: -1)
            bad.photo = Data([1, 2, 3, 4, 5])
            let late = station(context, "late", code: "")
            late.latitude = -90.5
            late.opened = Date(timeIntervalSince1970: 4_000_000_001)
            let good = station(context, "good", code: "ABC")
            good.latitude = 90  // bounds are included
            good.opened = Date(timeIntervalSince1970: 0)
            good.photo = Data([1, 2, 3, 4])
            let error = try #require(throws: ValidationError.self) { try context.save() }
            let found = Set(error.failures.map { "\($0.objectID == bad.objectID ? "bad" : $0.objectID == late.objectID ? "late" : "?").\($0.key) \($0.kind)" })
            #expect(found == [
                "bad.code tooLong(maximum: 8, length: 27)",
                "bad.code patternMismatch(pattern: \"[A-Z0-9]+\")",
                "bad.latitude numberTooLarge(maximum: 90.0)",
                "bad.opened dateTooSoon(minimum: date(0.0))",
                "bad.photo tooLong(maximum: 4, length: 5)",
                "late.code tooShort(minimum: 1, length: 0)",
                "late.code patternMismatch(pattern: \"[A-Z0-9]+\")",
                "late.latitude numberTooSmall(minimum: -90.0)",
                "late.opened dateTooLate(maximum: date(4000000000.0))",
            ])
            #expect(error.description.contains("RuledStation.latitude"))
            // Fixed, the save goes through.
            bad.code = "B"
            bad.latitude = 0
            bad.opened = nil
            bad.photo = nil
            late.code = "C"
            late.latitude = 0
            late.opened = nil
            try context.save()
        }
        #expect(try rowCount(stack, "RuledStation") == 3)
    }

    @Test("a refused save writes nothing")
    func refusedWritesNothing() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        context.performAndWait {
            _ = station(context, "one")
            let bad = station(context, "two")
            bad.latitude = 200
            #expect(throws: ValidationError.self) { try context.save() }
        }
        #expect(try rowCount(stack, "RuledStation") == 0)
    }

    @Test("validateValue(_:forKey:) is asked about every property; an app's rule is reported beside the model's")
    func perKeyHook() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            RuledStation.calls.record(context)
            let reserved = station(context, "reserved", code: "X9Y")
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.map(\.kind) == [.custom("codes starting with X9 are reserved")])
            #expect(error.failures.first?.objectID == reserved.objectID)
            #expect(error.failures.first?.key == "code")
            for key in ["name", "latitude", "code", "opened", "photo", "isSelected", "label", "departureCount"] {
                #expect(RuledStation.calls.validatedKeys.contains(key), "\(key) was not validated")
            }
            // A to-many relationship without member-count bounds is not passed (its members
            // would be read for nothing).
            #expect(!RuledStation.calls.validatedKeys.contains("departures"))
            // Called directly, as a form does before setting a value.
            #expect(throws: ValidationError.self) { try reserved.validateValue(95.0, forKey: "latitude") }
            #expect(throws: ValidationError.self) { try reserved.validateValue("not a number", forKey: "latitude") }
            #expect(throws: ValidationError.self) { try reserved.validateValue(nil, forKey: "name") }
            try reserved.validateValue(45, forKey: "latitude")
            reserved.code = "X8"
            try context.save()
        }
    }

    @Test("validateForInsert, validateForUpdate and validateForDelete run for their objects only; ValidationError.collect combines")
    func objectHooks() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            RuledStation.calls.record(context)
            let a = station(context, "a"), b = station(context, "b"), keep = station(context, "keep")
            _ = (a, b, keep)
            try context.save()
            #expect(RuledStation.calls.hookCalls.sorted() == ["insert a", "insert b", "insert keep"])

            RuledStation.calls.record(context)
            a.latitude = 1
            try context.save()
            #expect(RuledStation.calls.hookCalls == ["update a"])

            // Both the superclass's failure (the latitude) and the subclass's (the name) at once.
            RuledStation.calls.record(context)
            b.name = "A1"
            b.latitude = -100
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(Set(error.failures.map(\.key)) == ["latitude", "name"])
            #expect(error.failures.allSatisfy { $0.objectID == b.objectID })
            b.name = "b"
            b.latitude = 0

            RuledStation.calls.record(context)
            context.delete(keep)
            context.delete(a)
            let refused = try #require(throws: ValidationError.self) { try context.save() }
            #expect(refused.failures.map(\.kind) == [.custom("this station is kept")])
            #expect(refused.failures.first?.objectID == keep.objectID)
            #expect(RuledStation.calls.hookCalls.filter { $0.hasPrefix("delete") }.sorted() == ["delete a", "delete keep"])
            context.rollback()
        }
        #expect(try rowCount(stack, "RuledStation") == 3)
    }

    @Test("a validation method's other errors are reported as custom failures of its object")
    func otherErrors() throws {
        struct Refusal: Error, CustomStringConvertible { var description: String { "no, thanks" } }
        #expect(throws: ValidationError(failures: [ValidationFailure(objectID: nil, entity: "", key: "", kind: .custom("no, thanks"))])) {
            try ValidationError.collect({ throw Refusal() })
        }
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        context.performAndWait {
            let object = station(context, "x")
            let failures = ValidationFailure.normalized(Refusal(), object: object, key: "name")
            #expect(failures == [ValidationFailure(objectID: object.objectID, entity: "RuledStation", key: "name", kind: .custom("no, thanks"))])
        }
    }

    @Test("rules that cannot apply, and bad derivations, are refused when the model is built")
    func modelErrors() throws {
        func model(_ attribute: AttributeDescription, _ more: [AttributeDescription] = []) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [EntityDescription("A", attributes: [attribute] + more,
                                                                relationships: [.toMany("bs", "B", inverse: "a"), .toOne("one", "B", inverse: "other")]),
                                              EntityDescription("B", attributes: [AttributeDescription("n", .int64), AttributeDescription("s", .string)],
                                                                relationships: [.toOne("a", "A", inverse: "bs"), .toMany("other", "A", inverse: "one")])])
        }
        func rejects(_ attribute: AttributeDescription, containing text: String) {
            do {
                _ = try model(attribute)
                Issue.record("\(attribute.name) was accepted")
            } catch let error as ModelError {
                #expect(error.description.contains(text), "\(error)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        rejects(AttributeDescription("x", .string, validation: AttributeValidation(minimum: .int(1))), containing: "numbers and dates")
        rejects(AttributeDescription("x", .int64, validation: AttributeValidation(pattern: "a")), containing: "strings")
        rejects(AttributeDescription("x", .string, validation: AttributeValidation(pattern: "(")), containing: "regular expression")
        rejects(AttributeDescription("x", .int64, validation: AttributeValidation(minimum: .int(5), maximum: .int(1))), containing: "above the maximum")
        rejects(AttributeDescription("x", .date, validation: AttributeValidation(maximumLength: 3)), containing: "strings and data")
        rejects(AttributeDescription("x", .string, validation: AttributeValidation(minimumLength: 3, maximumLength: 2)), containing: "below the minimum")
        rejects(AttributeDescription("x", .int64, derivedFrom: "bs.@avg"), containing: "@avg takes the members' attribute")
        rejects(AttributeDescription("x", .int64, derivedFrom: "bs.@median.n"), containing: "unknown aggregate")
        rejects(AttributeDescription("x", .int64, derivedFrom: "nope.@count"), containing: "no relationship nope")
        rejects(AttributeDescription("x", .int64, derivedFrom: "one.@count"), containing: "to-one")
        rejects(AttributeDescription("x", .string, derivedFrom: "bs.n"), containing: "to-many")
        rejects(AttributeDescription("x", .string, derivedFrom: "bs.@count"), containing: "a number")
        rejects(AttributeDescription("x", .string, derivedFrom: "one.n"), containing: "int64; the attribute is string")
        rejects(AttributeDescription("x", .int64, derivedFrom: "lowercase:(one.s)"), containing: "takes and gives a string")
        rejects(AttributeDescription("x", .int64, derivedFrom: "shout:(one.s)"), containing: "unknown function")
        rejects(AttributeDescription("x", .int64, derivedFrom: "now()"), containing: "now() is a date")
        rejects(AttributeDescription("x", .int64, derivedFrom: "x"), containing: "derived itself")
        rejects(AttributeDescription("x", .int64, derivedFrom: "bs.@sum.s"), containing: "adds numbers")
        rejects(AttributeDescription("x", .date, transient: true, derivedFrom: "now()"), containing: "cannot be transient")
        #expect(throws: ModelError.self) { try model(AttributeDescription("x", .int64, derivedFrom: "bs.@count"), [AttributeDescription("y", .int64, derivedFrom: "x")]) }
        _ = try model(AttributeDescription("x", .double, derivedFrom: "bs.@avg.n"))
        _ = try model(AttributeDescription("x", .string, derivedFrom: "canonical:(one.s)"))
    }

    @Test("validation rules are not part of the stored model: adding one needs no migration")
    func rulesDoNotChangeTheHash() throws {
        let plain = try ManagedObjectModel(entities: [EntityDescription("A", attributes: [AttributeDescription("x", .int64)])])
        let ruled = try ManagedObjectModel(entities: [EntityDescription("A", attributes: [
            AttributeDescription("x", .int64, validation: AttributeValidation(minimum: .int(0), maximum: .int(9))),
            AttributeDescription("scratch", .string, optional: true, transient: true),
        ])])
        #expect(plain.versionHash == ruled.versionHash)
        let derived = try ManagedObjectModel(entities: [EntityDescription("A", attributes: [
            AttributeDescription("x", .int64), AttributeDescription("y", .int64, optional: true, derivedFrom: "x"),
        ])])
        #expect(derived.versionHash != plain.versionHash)
    }
}
