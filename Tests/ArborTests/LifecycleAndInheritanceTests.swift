import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Lifecycle hooks, object IDs, inheritance and the container's view context")
struct LifecycleAndInheritanceTests {
    @Test("awakeFromInsert, willSave, prepareForDeletion and awakeFromFetch run when Core Data runs them")
    func hooks() throws {
        let stack = try TestStack()
        let context = stack.context()
        let id: ObjectID = try context.performAndWait {
            let stop = makeStop(context, 1)
            #expect(stop.awakeFromInsertCount == 1)
            #expect(stop.isInserted && stop.hasChanges)
            try context.save()
            #expect(stop.willSaveCount == 1)
            #expect(!stop.isInserted && !stop.hasChanges)
            stop.name = "changed"
            #expect(stop.isUpdated)
            try context.save()
            #expect(stop.willSaveCount == 2)
            context.delete(stop)
            #expect(stop.prepareForDeletionCount == 1)
            context.rollback()
            return stop.objectID
        }
        let other = stack.context()
        try other.performAndWait {
            let stop = try #require(other.object(with: id) as? Stop)
            #expect(stop.awakeFromFetchCount == 0)
            _ = stop.name
            #expect(stop.awakeFromFetchCount == 1)
            #expect(stop.awakeFromInsertCount == 0)
        }
    }

    @Test("temporary IDs become permanent; URIs resolve only for this coordinator's stores")
    func objectIDs() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let stop = makeStop(context, 1)
            let temporary = stop.objectID
            #expect(temporary.isTemporaryID)
            #expect(temporary.uriRepresentation.absoluteString.hasPrefix("arbor://temporary/Stop/t"))
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: temporary.uriRepresentation) == nil)
            try context.save()
            let permanent = stop.objectID
            #expect(!permanent.isTemporaryID)
            #expect(permanent.storeIdentifier == stack.store.identifier)
            #expect(permanent.uriRepresentation.absoluteString == "arbor://\(stack.store.identifier.uuidString)/Stop/p1")
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: permanent.uriRepresentation) == permanent)
            #expect(context.registeredObject(for: permanent) === stop)
            #expect(context.registeredObject(for: temporary) == nil)
            let foreign = try #require(URL(string: "arbor://\(UUID().uuidString)/Stop/p1"))
            #expect(stack.coordinator.managedObjectID(forURIRepresentation: foreign) == nil)
        }
    }

    @Test("sub-entities share the hierarchy's keys and come back as their own class")
    func inheritance() throws {
        let stack = try TestStack()
        let context = stack.context()
        let (busID, tramID): (ObjectID, ObjectID) = try context.performAndWait {
            let bus = Bus(context: context)
            bus.name = "M29"
            bus.capacity = 100
            let tram = Tram(context: context)
            tram.name = "M10"
            tram.length = 40.5
            try context.save()
            #expect(bus.objectID.primaryKey == 1 && tram.objectID.primaryKey == 2)
            return (bus.objectID, tram.objectID)
        }
        try stack.reopen()
        let fresh = stack.context()
        try fresh.performAndWait {
            let bus = try #require(try fresh.existingObject(with: try stack.id(busID)) as? Bus)
            let tram = try #require(try fresh.existingObject(with: try stack.id(tramID)) as? Tram)
            #expect(bus.name == "M29" && bus.capacity == 100)
            #expect(tram.name == "M10" && tram.length == 40.5)
            #expect(bus.entityName == "Bus")
            // An abstract entity has no instances of its own.
            let vehicle = Vehicle(context: fresh)
            vehicle.name = "ghost"
            let error = try #require(throws: ValidationError.self) { try fresh.save() }
            #expect(error.failures.map(\.kind) == [.abstractEntity])
        }
    }

    @Test("the container's view context runs on the main queue")
    @MainActor
    func viewContext() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let container = try PersistentContainer(name: "transit", model: try Fixtures.fullModel(), url: directory.file("t.arbor"))
        let id = try await container.performBackgroundTask { context -> ObjectID in
            let stop = makeStop(context, 1)
            try context.save()
            return stop.objectID
        }
        let stop = try #require(container.viewContext.object(with: id) as? Stop)
        #expect(stop.name == "Stop 1")
        let name = try await container.viewContext.perform { [viewContext = container.viewContext] in
            (viewContext.object(with: id) as? Stop)?.name ?? ""
        }
        #expect(name == "Stop 1")
    }
}
