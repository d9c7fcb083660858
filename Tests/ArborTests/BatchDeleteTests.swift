@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

/// Batch deletes follow the model's delete rules as a context's delete does.
@Suite("Batch deletes: cascade, nullify, deny and no action, in one transaction")
struct BatchDeleteTests {
    @Test("a predicate's stops go with their stop times (cascade); their children stay without a parent (nullify)")
    func cascadeAndNullify() throws {
        let (stack, ids) = try BatchUpdateTests.seeded()
        let context = stack.context()
        try context.performAndWait {
            let stops = ids.compactMap { try? context.existingObject(with: $0) as? Stop }
            stops[5].parent = stops[0]   // stop 6's parent is stop 1, which is deleted
            stops[0].parent = stops[9]   // stop 1's parent, stop 10, stays and loses a child
            try context.save()
            let held = stops[5]
            var request = BatchDeleteRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier <= 3"))
            request.resultType = .objectIDs
            let result = try context.execute(request)
            #expect(result.count == 3)
            #expect(Set(result.objectIDs ?? []) == Set(ids.prefix(3)))
            #expect(result.changes.deleted.count == 3 + 9)  // three stops, their nine stop times
            #expect(result.changes.updated.contains(ids[5]) && result.changes.updated.contains(ids[9]))
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [context])
            #expect(held.parent == nil)
            #expect(try #require(try context.existingObject(with: ids[9]) as? Stop).children.isEmpty)
            #expect(try context.count(for: FetchRequest(entityName: "Stop")) == 17)
            #expect(try context.count(for: FetchRequest(entityName: "StopTime")) == 51)
            #expect(stops[0].managedObjectContext == nil)
            #expect(throws: ContextError.self) { try context.existingObject(with: ids[0]) }
            #expect(stack.store.checkIntegrity().isSound)
            // The foreign-key and (stop, departureTime) entries of the deleted times are gone.
            let window = try ObjectPredicate(format: "SUBQUERY(stopTimes, $x, $x.departureTime >= %@).@count != 0", Date(timeIntervalSince1970: 0))
            #expect(try context.count(for: FetchRequest(entityName: "Stop", predicate: window)) == 17)
        }
    }

    @Test("by object IDs; missing and repeated IDs are skipped; IDs of another entity are refused")
    func byObjectIDs() throws {
        let (stack, ids) = try BatchUpdateTests.seeded()
        let context = stack.context()
        try context.performAndWait {
            let times = try context.fetchObjectIDs(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "pickupType == 1")))
            let result = try context.execute(BatchDeleteRequest(objectIDs: times + times.prefix(3)))
            #expect(result.count == times.count)
            #expect(try context.execute(BatchDeleteRequest(objectIDs: times)).count == 0)
            #expect(try context.count(for: FetchRequest(entityName: "StopTime")) == 40)
            let stop = try #require(try context.existingObject(with: ids[0]) as? Stop)
            #expect(stop.stopTimes.map { Int($0.departureTime.timeIntervalSince1970) } == [1000, 1120])
            #expect(throws: ValidationError.self) { try context.execute(BatchDeleteRequest(objectIDs: [times[0], ids[0]])) }
            #expect(try context.execute(BatchDeleteRequest(objectIDs: [])).count == 0)
        }
    }

    @Test("deny refuses while a related object stays, naming the object; nothing is deleted")
    func denyRule() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let owner = Operator(context: context)
            owner.name = "BVG"
            let idle = Operator(context: context)
            idle.name = "idle"
            let route = Route(context: context)
            route.code = "M10"
            route.routeOperator = owner
            try context.save()
            let refused = try #require(throws: ValidationError.self) { try context.execute(BatchDeleteRequest(entityName: "Operator")) }
            #expect(refused.failures == [ValidationFailure(objectID: owner.objectID, entity: "Operator", key: "routes", kind: .deleteDenied(count: 1))])
            #expect(try context.count(for: FetchRequest(entityName: "Operator")) == 2)
            // Without routes an operator may go; deleting the route first lets the other go too.
            #expect(try context.execute(BatchDeleteRequest(entityName: "Operator", predicate: try ObjectPredicate(format: "name == 'idle'"))).count == 1)
            _ = try context.execute(BatchDeleteRequest(entityName: "Route"))
            #expect(try context.execute(BatchDeleteRequest(entityName: "Operator")).count == 1)
            #expect(stack.store.checkIntegrity().isSound)
        }
    }

    @Test("nullify of a required inverse is refused; one-to-one and many-to-many inverses are cleared")
    func inverses() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            // Person.badge cascades; Badge.owner (required) nullifies the person's badge column.
            let person = Person(context: context)
            person.name = "Ada"
            let badge = Badge(context: context)
            badge.number = 7
            badge.owner = person
            var vehicles: [Vehicle] = []
            for index in 0..<3 {
                let bus = Bus(context: context)
                bus.name = "B\(index)"
                bus.capacity = 40
                vehicles.append(bus)
            }
            let route = Route(context: context)
            route.code = "100"
            route.vehicles = vehicles
            try context.save()
            let deleted = try context.execute(BatchDeleteRequest(objectIDs: [badge.objectID]))
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: deleted.changes, into: [context])
            #expect(person.badge == nil)
            let gone = try context.execute(BatchDeleteRequest(objectIDs: [vehicles[1].objectID]))
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: gone.changes, into: [context])
            #expect(route.vehicles.map(\.name) == ["B0", "B2"])
            #expect(gone.changes.updated.contains(route.objectID))
            // Stop.stopTimes cascades; deleting a stop's parent nullifies the optional parent.
            let stop = makeStop(context, 1)
            let time = StopTime(context: context)
            time.departureTime = Date()
            time.arrivalTime = Date()
            time.stop = stop
            try context.save()
            #expect(try context.execute(BatchDeleteRequest(objectIDs: [stop.objectID])).changes.deleted.count == 2)
            #expect(stack.store.checkIntegrity().isSound)
        }
        // A stop whose stop times nullify (not cascade) cannot go: each stop time requires a stop.
        var entities = Fixtures.transitEntities()
        entities[0].relationships[0] = .toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .nullify)
        let nullifying = try TestStack(model: try ManagedObjectModel(entities: entities))
        let other = nullifying.context()
        try other.performAndWait {
            let stop = makeStop(other, 1)
            let time = StopTime(context: other)
            time.departureTime = Date()
            time.arrivalTime = Date()
            time.stop = stop
            try other.save()
            let refused = try #require(throws: ValidationError.self) { try other.execute(BatchDeleteRequest(objectIDs: [stop.objectID])) }
            #expect(refused.failures == [ValidationFailure(objectID: time.objectID, entity: "StopTime", key: "stop", kind: .missingValue)])
            #expect(try other.count(for: FetchRequest(entityName: "Stop")) == 1)
        }
    }
}
