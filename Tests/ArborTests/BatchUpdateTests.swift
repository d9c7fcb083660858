@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

/// Batch updates: constants and expressions, indexes and foreign keys kept right, typed errors
/// that write nothing, and contexts told through the result's changes.
@Suite("Batch updates: planned like a fetch, every index kept, nothing half-written")
struct BatchUpdateTests {
    /// Stops 1…20 (every fourth named "Zoo …"), each with three stop times 60 s apart.
    static func seeded() throws -> (TestStack, [ObjectID]) {
        let stack = try TestStack()
        let context = stack.context()
        let ids = try context.performAndWait {
            let stops = (1...20).map { number -> Stop in
                let stop = makeStop(context, Int64(number))
                if number % 4 == 0 { stop.name = "Zoo \(number)" }
                for minute in 0..<3 {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: Double(number * 1000 + minute * 60))
                    time.arrivalTime = time.departureTime
                    time.pickupType = Int16(minute % 2)
                    time.stop = stop
                }
                return stop
            }
            try context.save()
            return stops.map(\.objectID)
        }
        return (stack, ids)
    }

    @Test("an expression of the row's own attributes, on every matching row; indexes follow")
    func expressionUpdate() throws {
        let (stack, _) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            var request = BatchUpdateRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "pickupType == 1"))
            request.propertiesToUpdate = ["departureTime": .expression(try ObjectExpression(format: "departureTime + 60 * 2")),
                                          "dropOffType": .value(.int(3))]
            request.resultType = .objectIDs
            let result = try context.execute(request)
            #expect(result.count == 20)
            #expect(result.objectIDs?.count == 20)
            #expect(result.changes.updated.count == 20)
            let times = try context.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self)
            for time in times {
                let number = Int(time.stop?.identifier ?? 0)
                let minute = (Int(time.arrivalTime.timeIntervalSince1970) - number * 1000) / 60
                #expect(time.departureTime.timeIntervalSince1970 == Double(number * 1000 + minute * 60 + (minute % 2 == 1 ? 120 : 0)))
                #expect(time.dropOffType == (minute % 2 == 1 ? 3 : 0))
            }
            // The (stop, departureTime) index holds the new times: a window finds them there.
            let stop = try #require(times.first?.stop)
            let moved = Date(timeIntervalSince1970: Double(stop.identifier * 1000 + 180))
            let window = try ObjectPredicate(format: "stop == %@ AND departureTime == %@", stop, moved)
            let found = try context.fetch(FetchRequest(entityName: "StopTime", predicate: window), as: StopTime.self)
            #expect(found.count == 1)
            #expect(try context.explain(FetchRequest(entityName: "StopTime", predicate: window)).first?.plan.contains("by_stop_departureTime") == true)
            #expect(stack.store.checkIntegrity().isSound)
        }
    }

    @Test("unique and folded indexes, a moved to-one relationship, and row versions")
    func indexesAndRelationships() throws {
        let (stack, ids) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            // Stop 4 is renamed and shifted: two writes.
            let before = ids[3]
            let version = try #require(try stack.store.storage.row(for: before, maxAge: 0)?.version)
            // Renamed stops are found by the folded name index under their new name only.
            var rename = BatchUpdateRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH 'Zoo'"))
            rename.propertiesToUpdate = ["name": .value(.string("Görlitzer Straße"))]
            #expect(try context.execute(rename).count == 5)
            #expect(try context.count(for: FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] 'gorlitzer'"))) == 5)
            #expect(try context.count(for: FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] 'zoo'"))) == 0)
            // Identifiers shifted by 100: the unique index follows, no conflict among the moved values.
            let shift = BatchUpdateRequest(entityName: "Stop", propertiesToUpdate: ["identifier": .expression(try ObjectExpression(format: "identifier + 100"))])
            #expect(try context.execute(shift).count == 20)
            #expect(try context.count(for: FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier IN {101, 120}"))) == 2)
            #expect(try stack.store.storage.row(for: before, maxAge: 0)?.version == version + 2)
            // Stop times of stop 1 move to stop 2: appended to its ordered list, the foreign key follows.
            let move = BatchUpdateRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == %@", ids[0]),
                                          propertiesToUpdate: ["stop": .object(ids[1])])
            let moved = try context.execute(move)
            #expect(moved.count == 3)
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: moved.changes, into: [context])
            let second = try #require(try context.existingObject(with: ids[1]) as? Stop)
            #expect(second.stopTimes.map { Int($0.departureTime.timeIntervalSince1970) } == [2000, 2060, 2120, 1000, 1060, 1120])
            #expect(try #require(try context.existingObject(with: ids[0]) as? Stop).stopTimes.isEmpty)
            #expect(stack.store.checkIntegrity().isSound)
        }
    }

    @Test("a uniqueness violation, a wrong type, a nil for a required value and an overflow write nothing and name the row")
    func failuresWriteNothing() throws {
        let (stack, ids) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            let snapshot = try SaveCrashTests.snapshot(stack.store, model: stack.model)
            // Every identifier becomes 7: a duplicate, reported for the rows that collide.
            let duplicate = BatchUpdateRequest(entityName: "Stop", propertiesToUpdate: ["identifier": .value(.int(7))])
            let unique = try #require(throws: ValidationError.self) { try context.execute(duplicate) }
            #expect(unique.failures.contains { if case .uniqueConstraint = $0.kind { return $0.objectID != nil } else { return false } })
            // A string into a double.
            let wrongType = BatchUpdateRequest(entityName: "Stop", propertiesToUpdate: ["latitude": .value(.string("north"))])
            let typed = try #require(throws: ValidationError.self) { try context.execute(wrongType) }
            #expect(typed.failures == [ValidationFailure(objectID: nil, entity: "Stop", key: "latitude", kind: .typeMismatch(expected: .double, found: "string"))])
            // An expression that gives a string for a number, on each row: named by row.
            let computed = BatchUpdateRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier == 3"),
                                              propertiesToUpdate: ["latitude": .expression(try ObjectExpression(format: "name"))])
            let perRow = try #require(throws: ValidationError.self) { try context.execute(computed) }
            #expect(perRow.failures.map(\.objectID) == [ids[2]] && perRow.failures.first?.key == "latitude")
            // nil for a required attribute; an Int16 overflow; an unknown key; a to-many.
            for properties: [String: BatchUpdateRequest.Value] in [
                ["name": .value(.null)],
                ["pickupType": .expression(try ObjectExpression(format: "pickupType + 40000"))],
                ["colour": .value(.string("red"))],
                ["stop": .value(.int(1))],
            ] {
                let entity = properties.keys.first == "name" ? "Stop" : "StopTime"
                #expect(throws: ValidationError.self) { try context.execute(BatchUpdateRequest(entityName: entity, propertiesToUpdate: properties)) }
            }
            #expect(throws: ValidationError.self) {
                try context.execute(BatchUpdateRequest(entityName: "Stop", propertiesToUpdate: ["stopTimes": .object(nil)]))
            }
            #expect(throws: ObjectPredicateError.self) {
                try context.execute(BatchUpdateRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "colour == 1"), propertiesToUpdate: ["name": .value(.string("x"))]))
            }
            #expect(try SaveCrashTests.snapshot(stack.store, model: stack.model) == snapshot)
        }
    }

    @Test("contexts merging the result: refreshed objects, unsaved changes kept on top, controllers told")
    func mergeIntoContexts() throws {
        let (stack, ids) = try Self.seeded()
        let view = stack.context()
        let (stop, other) = try view.performAndWait { () -> (Stop, Stop) in
            let stop = try #require(try view.existingObject(with: ids[3]) as? Stop)
            let other = try #require(try view.existingObject(with: ids[4]) as? Stop)
            other.latitude = 1  // an unsaved change the merge keeps
            return (stop, other)
        }
        let controller = try view.performAndWait {
            let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH 'Renamed'"),
                                       sortDescriptors: [ObjectSortDescriptor("identifier")])
            let controller = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: view)
            try controller.performFetch()
            return controller
        }
        let background = stack.context()
        let result = try background.performAndWait {
            try background.execute(BatchUpdateRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier <= 5"),
                                                      propertiesToUpdate: ["name": .value(.string("Renamed"))]))
        }
        #expect(view.performAndWait { stop.name } == "Zoo 4")  // stale until merged, as in Core Data
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [view])
        view.performAndWait {
            #expect(stop.name == "Renamed")
            #expect(other.name == "Renamed" && other.latitude == 1 && other.hasChanges)
            #expect(controller.fetchedObjects?.count == 5)
        }
    }
}
