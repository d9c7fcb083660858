import Arbor
import ArborTestSupport
import Foundation
import Testing

/// A shipped read-only seed store of stops beside a writable store of the user's notes.
final class SeedNote: ManagedObject {
    @Attribute("text") var text: String
    @Attribute("stopID") var stopID: String
}

@Suite("Several stores: configurations, read-only seed data, destroy, replace, migrate")
struct MultiStoreTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("Stop", class: Stop.self, attributes: [
                AttributeDescription("identifier", .int64), AttributeDescription("stopID", .string), AttributeDescription("name", .string),
                AttributeDescription("latitude", .double), AttributeDescription("longitude", .double),
                AttributeDescription("normalizedName", .string, optional: true),
            ]),
            EntityDescription("Note", class: SeedNote.self, attributes: [AttributeDescription("text", .string), AttributeDescription("stopID", .string)]),
        ], configurations: ["Seed": ["Stop"], "User": ["Note"]])
    }

    static func writeSeed(_ url: URL, model: ManagedObjectModel, names: [String]) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(with: PersistentStoreDescription(url: url, configuration: "Seed"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for (index, name) in names.enumerated() {
                let stop = Stop(context: context)
                stop.identifier = Int64(index); stop.stopID = name; stop.name = name; stop.latitude = 52; stop.longitude = 13
            }
            try context.save()
        }
    }

    @Test("entities live in their configuration's store; the read-only seed store refuses writes")
    func seedAndUserStores() throws {
        let directory = TemporaryDirectory("arbor-multistore")
        defer { directory.remove() }
        let model = try Self.model()
        try Self.writeSeed(directory.file("seed.arbor"), model: model, names: ["Alexanderplatz", "Hermannplatz"])
        let container = try PersistentContainer(name: "app", model: model, descriptions: [
            PersistentStoreDescription(url: directory.file("seed.arbor"), configuration: "Seed", readOnly: true),
            PersistentStoreDescription(url: directory.file("user.arbor"), configuration: "User"),
        ])
        let context = container.newBackgroundContext()
        try context.performAndWait { () throws in
            let stops = try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]), as: Stop.self)
            #expect(stops.map(\.name) == ["Alexanderplatz", "Hermannplatz"])
            let note = SeedNote(context: context)
            note.text = "meet here"
            note.stopID = stops[0].stopID
            try context.save()
            let user = try #require(container.persistentStoreCoordinator.persistentStore(for: directory.file("user.arbor")))
            #expect(note.objectID.storeIdentifier == user.identifier)

            let extra = Stop(context: context)
            extra.identifier = 9; extra.stopID = "x"; extra.name = "x"; extra.latitude = 0; extra.longitude = 0
            #expect(throws: StoreError.self) { try context.save() }
            context.rollback()
            #expect(try context.count(for: FetchRequest(entityName: "Note")) == 1)
        }
    }

    @Test("destroy removes the file and the store; replace swaps in another store's contents; migrate moves a store to a new file")
    func manageFiles() throws {
        let directory = TemporaryDirectory("arbor-multistore")
        defer { directory.remove() }
        let model = try Self.model()
        try Self.writeSeed(directory.file("a.arbor"), model: model, names: ["A1"])
        try Self.writeSeed(directory.file("b.arbor"), model: model, names: ["B1", "B2"])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let a = try coordinator.addPersistentStore(with: PersistentStoreDescription(url: directory.file("a.arbor"), configuration: "Seed"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        func names() throws -> [String] {
            try context.performAndWait {
                context.reset()
                return try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]), as: Stop.self).map(\.name)
            }
        }
        #expect(try names() == ["A1"])
        let a1 = try context.performAndWait { try context.fetch(FetchRequest(entityName: "Stop"))[0].objectID }

        // Migrate: a new file, the same objects under the same IDs; the old file stays.
        let moved = try coordinator.migratePersistentStore(a, to: directory.file("moved.arbor"))
        #expect(coordinator.persistentStores.count == 1 && coordinator.persistentStores[0] === moved)
        #expect(moved.identifier == a.identifier)
        #expect(try names() == ["A1"])
        #expect(try context.performAndWait { (try context.existingObject(with: a1) as? Stop)?.name } == "A1")
        #expect(FileManager.default.fileExists(atPath: directory.file("a.arbor").path))
        #expect(throws: StoreError.self) { try coordinator.migratePersistentStore(moved, to: directory.file("b.arbor")) }

        // Replace: the added store now shows b's contents.
        try coordinator.replacePersistentStore(at: directory.file("moved.arbor"), withStoreAt: directory.file("b.arbor"))
        #expect(try names() == ["B1", "B2"])

        // Destroy: gone from the coordinator and the disk; destroying again is fine.
        try coordinator.destroyPersistentStore(at: directory.file("moved.arbor"))
        #expect(coordinator.persistentStores.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.file("moved.arbor").path))
        try coordinator.destroyPersistentStore(at: directory.file("moved.arbor"))

        // A foreign file cannot be the source of a replace.
        try Data(String(repeating: "not a store ", count: 1000).utf8).write(to: directory.file("foreign.arbor"))
        #expect(throws: StoreError.self) { try coordinator.replacePersistentStore(at: directory.file("a.arbor"), withStoreAt: directory.file("foreign.arbor")) }
        #expect(try PersistentStore.storedSchema(at: directory.file("a.arbor")).entities.count == 2)  // untouched
    }
}
