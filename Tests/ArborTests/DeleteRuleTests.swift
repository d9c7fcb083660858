import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Delete rules: nullify, cascade, deny, no action")
struct DeleteRuleTests {
    /// A saved stop with three stop times, a child stop; returns their IDs.
    func seed(_ stack: TestStack) throws -> (stop: ObjectID, times: [ObjectID], child: ObjectID) {
        let context = stack.context()
        return try context.performAndWait {
            let stop = makeStop(context, 1)
            let child = makeStop(context, 2)
            child.parent = stop
            let times = (0..<3).map { minute -> StopTime in
                let time = StopTime(context: context)
                time.arrivalTime = Date(timeIntervalSince1970: Double(minute))
                time.departureTime = time.arrivalTime
                time.stop = stop
                return time
            }
            try context.save()
            return (stop.objectID, times.map(\.objectID), child.objectID)
        }
    }

    @Test("cascade deletes the stop's stop times; nullify clears the child's parent")
    func cascadeAndNullify() throws {
        let stack = try TestStack()
        let ids = try seed(stack)
        let context = stack.context()
        try context.performAndWait {
            let stop = try context.existingObject(with: ids.stop)
            context.delete(stop)
            #expect(stop.isDeleted)
            #expect(context.deletedObjects.count == 4)
            let child = try #require(try context.existingObject(with: ids.child) as? Stop)
            #expect(child.parent == nil)
            try context.save()
        }
        try stack.reopen()
        let fresh = stack.context()
        try fresh.performAndWait {
            for id in ids.times + [ids.stop] {
                #expect(throws: ContextError.objectNotFound(try stack.id(id))) { try fresh.existingObject(with: try stack.id(id)) }
            }
            let child = try #require(try fresh.existingObject(with: try stack.id(ids.child)) as? Stop)
            #expect(child.parent == nil)
        }
        #expect(stack.store.statistics.rowsRead > 0)
    }

    @Test("deny refuses the save while related objects remain, and allows it once they are gone")
    func deny() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let company = Operator(context: context)
            company.name = "BVG"
            let route = Route(context: context)
            route.code = "U1"
            route.routeOperator = company
            try context.save()
            context.delete(company)
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.map(\.kind) == [.deleteDenied(count: 1)])
            #expect(error.failures.first?.key == "routes")
            context.rollback()
            #expect(!company.isDeleted)
            #expect(company.name == "BVG")
            context.delete(route)
            context.delete(company)
            try context.save()
        }
    }

    @Test("cascade through a to-one (a person's badge) and deleting an unsaved object forgets it")
    func cascadeToOne() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let person = Person(context: context)
            person.name = "p"
            let badge = Badge(context: context)
            badge.number = 1
            badge.owner = person
            try context.save()
            let badgeID = badge.objectID
            context.delete(person)
            #expect(badge.isDeleted)
            try context.save()
            #expect(throws: ContextError.objectNotFound(badgeID)) { try context.existingObject(with: badgeID) }

            let draft = Person(context: context)
            draft.name = "draft"
            context.delete(draft)
            #expect(!context.hasChanges)
            #expect(context.insertedObjects.isEmpty)
        }
    }

    @Test("no action leaves the inverse pointing at the deleted object")
    func noAction() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription("Owner", attributes: [AttributeDescription("n", .int64)],
                              relationships: [.toMany("items", "Item", inverse: "owner", deleteRule: .noAction)]),
            EntityDescription("Item", attributes: [AttributeDescription("n", .int64)],
                              relationships: [.toOne("owner", "Owner", inverse: "items")]),
        ])
        let stack = try TestStack(model: model)
        let context = stack.context()
        try context.performAndWait {
            let owner = try context.insertNewObject(forEntityName: "Owner")
            owner.setValue(1, forKey: "n")
            let item = try context.insertNewObject(forEntityName: "Item")
            item.setValue(2, forKey: "n")
            item.setValue(owner, forKey: "owner")
            try context.save()
            let ownerID = owner.objectID
            context.delete(owner)
            try context.save()
            context.refresh(item, mergeChanges: false)
            #expect(item.objectIDs(forRelationshipNamed: "owner") == [ownerID])
        }
    }
}
