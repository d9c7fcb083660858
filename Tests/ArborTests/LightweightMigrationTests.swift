@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Lightweight migration when a store is opened with a changed model")
struct LightweightMigrationTests {
    typealias Fixture = MigrationFixture

    /// A version-1 store in a fresh directory; returns the directory, the file and its lines.
    static func original() throws -> (TemporaryDirectory, URL, [String]) {
        let directory = TemporaryDirectory("arbor-migration")
        let url = directory.file("store.arbor")
        let model = try Fixture.version1()
        try Fixture.makeStore(url, model)
        let lines = try Fixture.describe(try PersistentStore(url: url, model: model), model: model)
        return (directory, url, lines)
    }

    @Test("attributes added (with a default, optional) and removed; the stored rows follow")
    func addAndRemoveAttributes() throws {
        let (directory, url, before) = try Self.original()
        defer { directory.remove() }
        #expect(before.count == 4)
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.attributes.removeAll { $0.name == "code" }
                entity.attributes.append(AttributeDescription("wheelchair", .bool, defaultValue: .bool(false)))
                entity.attributes.append(AttributeDescription("note", .string, optional: true))
            },
            Fixture.departure(), Fixture.tag(), Fixture.station(),
        ])
        let store = try PersistentStore(url: url, model: model)
        let after = try Fixture.describe(store, model: model)
        #expect(after == [
            "Stop name=Alexanderplatz latitude=52.5 zone=zone 0 wheelchair=false note=nil departures=[\"30\", \"10\", \"20\"] tags=[\"night\"]",
            "Stop name=Bernauer Straße latitude=53.5 zone=nil wheelchair=false note=nil departures=[\"31\", \"11\", \"21\"] tags=[\"accessible\"]",
            "Stop name=Görlitzer Bahnhof latitude=54.5 zone=zone 2 wheelchair=false note=nil departures=[\"32\", \"12\", \"22\"] tags=[\"accessible\"]",
            "Station name=Hauptbahnhof latitude=0.0 zone=nil wheelchair=false note=nil platforms=14 departures=[\"33\", \"13\", \"23\"] tags=[\"accessible\", \"night\"]",
        ])
        try Fixture.expectConsistent(store)
        let history = try store.modelHistory()
        #expect(history.count == 1)
        #expect(history.first?.changes.contains("Stop.code removed") == true)
        #expect(history.first?.changes.contains("Stop.wheelchair added") == true)
        #expect(history.first?.toVersionHash == model.versionHash)
    }

    @Test("renaming an attribute and an entity by renaming identifier keeps values, relationships and order")
    func renames() throws {
        let (directory, url, before) = try Self.original()
        defer { directory.remove() }
        // "Tag" → "Label" moves it first in name order: every entity code changes.
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.attributes[0] = AttributeDescription("title", .string, renamingIdentifier: "name")
                entity.indexes = [IndexDescription(["title"], normalized: true)]
                entity.relationships[1] = .toMany("labels", "Label", inverse: "stops", renamingIdentifier: "tags")
            },
            Fixture.departure(),
            EntityDescription("Label", attributes: [AttributeDescription("text", .string, renamingIdentifier: "label")],
                              relationships: [.toMany("stops", "Stop", inverse: "labels")], renamingIdentifier: "Tag"),
            Fixture.station(),
        ])
        let store = try PersistentStore(url: url, model: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let lines = try context.performAndWait { () throws -> [String] in
            let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("title")])
            return try context.fetch(request).map { stop in
                let departures = (stop.value(forKey: "departures") as? [ManagedObject] ?? []).map { "\($0.value(forKey: "minute") ?? "?")" }
                let labels = (stop.value(forKey: "labels") as? [ManagedObject] ?? []).compactMap { $0.value(forKey: "text") as? String }.sorted()
                return "\(stop.value(forKey: "title") ?? "nil") \(departures) \(labels)"
            }
        }
        #expect(lines == [
            "Alexanderplatz [\"30\", \"10\", \"20\"] [\"night\"]",
            "Bernauer Straße [\"31\", \"11\", \"21\"] [\"accessible\"]",
            "Görlitzer Bahnhof [\"32\", \"12\", \"22\"] [\"accessible\"]",
            "Hauptbahnhof [\"33\", \"13\", \"23\"] [\"accessible\", \"night\"]",
        ])
        #expect(before.count == lines.count)
        // The rebuilt normalized index answers a [cd] prefix search on the renamed attribute.
        let found = try context.performAndWait { () throws -> [String] in
            var request = FetchRequest(entityName: "Stop")
            request.predicate = try ObjectPredicate(format: "title BEGINSWITH[cd] %@", "gorli")
            let plan = try context.explain(request).map(\.plan).joined()
            #expect(plan.contains("folded_title"))
            return try context.fetch(request).compactMap { $0.value(forKey: "title") as? String }
        }
        #expect(found == ["Görlitzer Bahnhof"])
        try Fixture.expectConsistent(store)
        let changes = try store.modelHistory().last?.changes ?? []
        #expect(changes.contains("entity Tag renamed to Label") && changes.contains("Stop.name renamed to title"))
        // Inserting after the migration continues the primary keys (no reuse).
        try context.performAndWait {
            let label = try context.insertNewObject(forEntityName: "Label")
            label.setValue("new", forKey: "text")
            try context.save()
            #expect(label.objectID.primaryKey == 3)
        }
    }

    @Test("entities added and removed; a removed sub-entity's rows go and references to them become nil")
    func addAndRemoveEntities() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { $0.relationships.removeAll { $0.name == "tags" } },
            Fixture.departure(),
            EntityDescription("Operator", attributes: [AttributeDescription("name", .string)]),
        ])
        let store = try PersistentStore(url: url, model: model)
        let lines = try Fixture.describe(store, model: model)
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { !$0.contains("Hauptbahnhof") })
        try Fixture.expectConsistent(store)
        // The station's departures stay (their entity stays), with no stop.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            var orphans = FetchRequest(entityName: "Departure")
            orphans.predicate = try ObjectPredicate(format: "stop == nil")
            #expect(try context.fetch(orphans).compactMap { $0.value(forKey: "minute") as? Int64 }.sorted() == [13, 23, 33])
            #expect(try context.count(for: FetchRequest(entityName: "Operator")) == 0)
        }
        #expect(try store.btree().database.view { try $0.hasTree("rows.Tag") } == false)
        #expect(try store.btree().database.view { try $0.hasTree("join.Stop.tags") } == false)
    }

    @Test("relationships added and removed: new ones start empty and work, removed ones leave no trees")
    func addAndRemoveRelationships() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.relationships.removeAll { $0.name == "departures" }
                entity.relationships.append(.toOne("operatedBy", "Operator", inverse: "stops"))
            },
            Fixture.departure { $0.relationships = [] },
            Fixture.tag(), Fixture.station(),
            EntityDescription("Operator", attributes: [AttributeDescription("name", .string)],
                              relationships: [.toMany("stops", "Stop", inverse: "operatedBy")]),
        ])
        let store = try PersistentStore(url: url, model: model)
        try Fixture.expectConsistent(store)
        #expect(try store.btree().database.view { try !$0.hasTree("fk.Departure.stop") && $0.hasTree("fk.Stop.operatedBy") })
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            #expect(try context.count(for: FetchRequest(entityName: "Departure")) == 12)
            let stops = try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]))
            #expect(stops.allSatisfy { $0.value(forKey: "operatedBy") == nil })
            let bvg = try context.insertNewObject(forEntityName: "Operator")
            bvg.setValue("BVG", forKey: "name")
            bvg.setValue(Array(stops.prefix(2)), forKey: "stops")
            try context.save()
            var operated = FetchRequest(entityName: "Stop")
            operated.predicate = try ObjectPredicate(format: "operatedBy.name == %@", "BVG")
            #expect(try context.count(for: operated) == 2)
        }
        try Fixture.expectConsistent(store)
    }

    @Test("an optional attribute made non-optional with a default: nils take the default")
    func optionalToRequired() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { $0.attributes[3] = AttributeDescription("zone", .string, defaultValue: .string("unzoned"), indexed: true) },
            Fixture.departure(), Fixture.tag(), Fixture.station(),
        ])
        let store = try PersistentStore(url: url, model: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let zones = try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]))
                .map { $0.value(forKey: "zone") as? String ?? "nil" }
        }
        #expect(zones == ["zone 0", "unzoned", "zone 2", "unzoned"])
        try Fixture.expectConsistent(store)
    }

    @Test("indexes added and removed; a new unique index over equal values refuses and leaves the file as it was")
    func indexes() throws {
        let (directory, url, before) = try Self.original()
        defer { directory.remove() }
        let indexed = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.indexes = [IndexDescription(["latitude", "name"])]
                entity.attributes[3].isIndexed = false
            },
            Fixture.departure { $0.attributes[0].isIndexed = true }, Fixture.tag(), Fixture.station(),
        ])
        let store = try PersistentStore(url: url, model: indexed)
        try Fixture.expectConsistent(store)
        #expect(try store.btree().database.view { try $0.hasTree("index.Stop.by_latitude_name") && !$0.hasTree("index.Stop.zone") })

        // Departure minutes are distinct so far; a second departure at minute 30 makes a new
        // unique index over minutes impossible.
        let bytes = try Data(contentsOf: url)
        let clash = try ManagedObjectModel(entities: [
            Fixture.stop(), Fixture.departure { $0.indexes = [IndexDescription(["minute"], unique: true)] }, Fixture.tag(), Fixture.station(),
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: indexed)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let extra = try context.insertNewObject(forEntityName: "Departure")
            extra.setValue(Int64(30), forKey: "minute")
            try context.save()
        }
        let saved = try Data(contentsOf: url)
        #expect(saved != bytes)
        let error = try #require(throws: StoreError.self) { try PersistentStore(url: url, model: clash) }
        guard case .migrationFailed(_, let detail) = error else {
            Issue.record("expected migrationFailed, got \(error)")
            return
        }
        #expect(detail.contains("unique index unique_minute"))
        #expect(try Data(contentsOf: url) == saved)
        #expect(try Fixture.describe(try PersistentStore(url: url, model: indexed), model: indexed).count == before.count)
        // Over distinct values a unique index builds.
        let uniqueLabels = try ManagedObjectModel(entities: [
            Fixture.stop(), Fixture.departure(), Fixture.tag { $0.indexes = [IndexDescription(["label"], unique: true)] }, Fixture.station(),
        ])
        try Fixture.expectConsistent(try PersistentStore(url: url, model: uniqueLabels))
    }

    @Test("changes that are not lightweight are refused, each named, and the file is untouched")
    func refusals() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let bytes = try Data(contentsOf: url)
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.attributes[2] = AttributeDescription("latitude", .string)
                entity.attributes.append(AttributeDescription("platform", .int64))
            },
            Fixture.departure { $0.relationships[0] = .toOne("stop", "Stop", inverse: "departures", optional: false) },
            Fixture.tag(), Fixture.station(),
        ])
        let error = try #require(throws: StoreError.self) { try PersistentStore(url: url, model: model) }
        guard case .migrationNotLightweight(_, let changes) = error else {
            Issue.record("expected migrationNotLightweight, got \(error)")
            return
        }
        #expect(changes == [
            "Departure.stop: a to-one relationship made non-optional (relationships have no default)",
            "Stop.latitude: type changed from double to string",
            "Stop.platform: added as non-optional without a default value",
        ])
        #expect(try Data(contentsOf: url) == bytes)

        let kinds = try ManagedObjectModel(entities: [
            Fixture.stop { $0.relationships[0] = .toMany("departures", "Departure", inverse: "stop", ordered: false, deleteRule: .cascade) },
            Fixture.departure(), Fixture.tag(),
            EntityDescription("Station", attributes: [AttributeDescription("platforms", .int64, defaultValue: .int(1))]),
        ])
        let kindError = try #require(throws: StoreError.self) { try PersistentStore(url: url, model: kinds) }
        #expect(kindError.description.contains("Stop.departures: ordering changed"))
        #expect(kindError.description.contains("Station: superentity changed from Stop to none"))
        #expect(try Data(contentsOf: url) == bytes)
    }

    @Test("without automatic migration, or read-only, a changed model is a mismatch")
    func migrationOff() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let model = try ManagedObjectModel(entities: [
            Fixture.stop { $0.attributes.append(AttributeDescription("note", .string, optional: true)) },
            Fixture.departure(), Fixture.tag(), Fixture.station(),
        ])
        var options = PersistentStore.Options()
        options.migratesAutomatically = false
        #expect(throws: StoreError.self) { try PersistentStore(url: url, model: model, options: options) }
        let readOnly = PersistentStore.Options(readOnly: true)
        let error = try #require(throws: StoreError.self) { try PersistentStore(url: url, model: model, options: readOnly) }
        #expect(error.description.contains("Stop: attribute note added"))
    }

    @Test("two migrations in turn: the history lists both")
    func history() throws {
        let (directory, url, _) = try Self.original()
        defer { directory.remove() }
        let second = try ManagedObjectModel(entities: [
            Fixture.stop { $0.attributes.append(AttributeDescription("note", .string, optional: true)) },
            Fixture.departure(), Fixture.tag(), Fixture.station(),
        ])
        _ = try PersistentStore(url: url, model: second)
        let third = try ManagedObjectModel(entities: [
            Fixture.stop { $0.attributes.append(AttributeDescription("remark", .string, optional: true, renamingIdentifier: "note")) },
            Fixture.departure(), Fixture.tag(), Fixture.station(),
        ])
        let store = try PersistentStore(url: url, model: third)
        let history = try store.modelHistory()
        #expect(history.map(\.toVersionHash) == [second.versionHash, third.versionHash])
        #expect(history.map(\.fromVersionHash) == [try Fixture.version1().versionHash, second.versionHash])
        #expect(history[1].changes == ["Stop.note renamed to remark"])
        // Opening again with the same model migrates nothing more.
        #expect(try PersistentStore(url: url, model: third).modelHistory().count == 2)
    }
}
