@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("A crash in the middle of a migration leaves the old store")
struct MigrationCrashTests {
    typealias Fixture = MigrationFixture

    static func open(_ bytes: [UInt8], _ model: ManagedObjectModel, migrate: Bool) throws -> PersistentStore {
        var options = PersistentStore.Options()
        options.migratesAutomatically = migrate
        return try PersistentStore(file: SimulatedFile(bytes: bytes), model: model, options: options)
    }

    @Test("every write and sync point of a migration, three crash models")
    func crashAtEveryPoint() throws {
        let old = try Fixture.version1()
        // Renames (every entity code moves), an added attribute with a default, a removed index,
        // an added words index: rows rewritten in place and into a new tree, indexes and a join
        // tree rebuilt.
        let new = try ManagedObjectModel(entities: [
            Fixture.stop { entity in
                entity.attributes.append(AttributeDescription("wheelchair", .bool, defaultValue: .bool(true)))
                entity.attributes[3].isIndexed = false
                entity.indexes.append(IndexDescription(["name"], kind: .words))
                entity.relationships[1] = .toMany("labels", "Label", inverse: "stops", renamingIdentifier: "tags")
            },
            Fixture.departure { $0.attributes[0].isIndexed = true },
            EntityDescription("Label", attributes: [AttributeDescription("label", .string)],
                              relationships: [.toMany("stops", "Stop", inverse: "labels")], renamingIdentifier: "Tag"),
            Fixture.station(),
        ])
        let baseFile = SimulatedFile()
        let baseStore = try PersistentStore(file: baseFile, model: old)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: old)
        try coordinator.add(baseStore)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            try Fixture.populate(context)
            // Enough departures for the row and index trees to span several pages.
            let stops = try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]))
            for minute in 100..<700 {
                let departure = try context.insertNewObject(forEntityName: "Departure")
                departure.setValue(Int64(minute), forKey: "minute")
                departure.setValue(stops[minute % stops.count], forKey: "stop")
            }
            try context.save()
        }
        let baseImage = baseFile.currentBytes
        let before = try Fixture.describe(try Self.open(baseImage, old, migrate: false), model: old)

        let probe = SimulatedFile(bytes: baseImage)
        let migrated = try PersistentStore(file: probe, model: new)
        let after = try Fixture.describe(migrated, model: new, tagKey: "labels")
        try Fixture.expectConsistent(migrated)
        #expect(after.count == before.count)
        let points = probe.operationCount
        #expect(points >= 4)

        var sawOld = 0, sawNew = 0
        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            #expect(throws: (any Error).self) { try PersistentStore(file: file, model: new) }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 5 + modeIndex))
                // Either the old store, whole, or the migrated one, whole.
                if let store = try? Self.open(image, old, migrate: false) {
                    #expect(try Fixture.describe(store, model: old) == before, "crash point \(point), \(mode)")
                    sawOld += 1
                } else {
                    let store = try Self.open(image, new, migrate: false)
                    #expect(try Fixture.describe(store, model: new, tagKey: "labels") == after, "crash point \(point), \(mode)")
                    sawNew += 1
                }
                // Opening with the new model finishes the job either way.
                let reopened = try Self.open(image, new, migrate: true)
                #expect(try Fixture.describe(reopened, model: new, tagKey: "labels") == after, "crash point \(point), \(mode)")
                #expect(reopened.checkIntegrity().isSound, "crash point \(point), \(mode)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawOld > 0)
        #expect(sawNew > 0)
    }
}
