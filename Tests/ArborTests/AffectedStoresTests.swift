import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("FetchRequest.affectedStores")
struct AffectedStoresTests {
    @Test("a fetch reads only the stores it names; without them, every store holding the entity")
    func narrowsStores() throws {
        let directory = TemporaryDirectory("arbor-affected")
        defer { directory.remove() }
        let model = try Fixtures.fullModel()
        // Two files, one stop each, written separately.
        for (index, (file, name)) in [("a.arbor", "Alpha"), ("b.arbor", "Beta")].enumerated() {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            _ = try coordinator.addPersistentStore(at: directory.file(file))
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let stop = Stop(context: context)
                stop.stopID = name
                stop.name = name
                stop.identifier = Int64(index)
                stop.latitude = 52.5
                stop.longitude = 13.4
                try context.save()
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(at: directory.file("a.arbor"))
        let second = try coordinator.addPersistentStore(at: directory.file("b.arbor"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { () throws in
            var request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")])
            #expect(try context.fetch(request, as: Stop.self).map(\.name) == ["Alpha", "Beta"])
            request.affectedStores = [second]
            #expect(try context.fetch(request, as: Stop.self).map(\.name) == ["Beta"])
            #expect(try context.count(for: request) == 1)
            #expect(try context.fetchResults(request, as: Stop.self).map(\.name) == ["Beta"])
            #expect(try context.estimatedCount(for: request) == 1)
            request.affectedStores = []
            #expect(try context.fetch(request).isEmpty)
        }
    }
}
