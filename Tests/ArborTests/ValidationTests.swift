import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Validation: every failure listed, nothing written")
struct ValidationTests {
    /// Row counts of every tree, to show a refused save wrote nothing.
    func treeCounts(_ stack: TestStack) throws -> [String: Int] {
        let database = try Database.open(path: stack.url.path, options: Database.Options(readOnly: true))
        return try database.view { tx in
            var counts: [String: Int] = [:]
            for name in try tx.treeNames() { counts[name] = try tx.tree(name).count }
            return counts
        }
    }

    @Test("missing values, type mismatches, counts and unique constraints are reported together")
    func allFailuresTogether() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let stop = makeStop(context, 1)
            _ = stop
            try context.save()
        }
        let before = try treeCounts(stack)
        try context.performAndWait {
            let time = StopTime(context: context)  // no stop (required), no times
            time.arrivalTime = Date()
            let route = Route(context: context)
            route.code = "R"
            route.vehicles = (0..<4).map { index -> Vehicle in
                let bus = Bus(context: context)
                bus.name = "b\(index)"
                bus.capacity = 1
                return bus
            }
            let sample = Sample(context: context)
            sample.setValue("not a number", forKey: "int64")
            let error = try #require(throws: ValidationError.self) { try context.save() }
            let summary = error.failures.map { "\($0.entity).\($0.key)" }
            #expect(summary.contains("StopTime.stop"))
            #expect(summary.contains("StopTime.departureTime"))
            #expect(summary.contains("Route.vehicles"))
            #expect(summary.contains("Sample.int64"))
            #expect(summary.contains("Sample.string"))
            #expect(error.failures.contains { $0.kind == .tooManyMembers(maximum: 3, count: 4) })
            #expect(error.description.contains("StopTime.stop"))
        }
        #expect(try treeCounts(stack) == before)
    }

    @Test("unique constraints: against stored rows and within one save; nothing written")
    func uniqueness() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            _ = makeStop(context, 1)
            try context.save()
        }
        let before = try treeCounts(stack)
        try context.performAndWait {
            let duplicate = makeStop(context, 1)
            let twinA = makeStop(context, 5), twinB = makeStop(context, 6)
            twinB.stopID = twinA.stopID
            let error = try #require(throws: ValidationError.self) { try context.save() }
            let byObject = Dictionary(grouping: error.failures) { $0.objectID }
            #expect(byObject[duplicate.objectID]?.count == 2)  // identifier and stopID
            #expect(error.failures.contains { $0.objectID == twinB.objectID && $0.key == "stopID" })
            #expect(error.failures.allSatisfy {
                if case .uniqueConstraint = $0.kind { return true } else { return false }
            })
            // Objects keep their temporary IDs and changes: fix and save again.
            #expect(duplicate.objectID.isTemporaryID)
            duplicate.identifier = 2
            duplicate.stopID = "S2"
            twinB.stopID = "S6"
            try context.save()
        }
        #expect(try treeCounts(stack)["rows.Stop"] == (before["rows.Stop"] ?? 0) + 3)
    }

    @Test("a model whose relationship has no inverse, or an index on an unknown key, is rejected")
    func modelErrors() throws {
        #expect(throws: ModelError.missingInverse(entity: "A", relationship: "b", inverse: "a")) {
            try ManagedObjectModel(entities: [
                EntityDescription("A", relationships: [.toOne("b", "B", inverse: "a")]),
                EntityDescription("B"),
            ])
        }
        #expect(throws: ModelError.unknownIndexProperty(entity: "A", index: "by_x", property: "x")) {
            try ManagedObjectModel(entities: [EntityDescription("A", indexes: [IndexDescription(["x"])])])
        }
        #expect(throws: ModelError.unknownSuperentity(entity: "A", superentity: "Z")) {
            try ManagedObjectModel(entities: [EntityDescription("A", superentity: "Z")])
        }
        #expect(throws: ModelError.invalidDefault(entity: "A", attribute: "x", detail: "string does not fit int16")) {
            try ManagedObjectModel(entities: [EntityDescription("A", attributes: [AttributeDescription("x", .int16, defaultValue: .string("s"))])])
        }
    }
}
