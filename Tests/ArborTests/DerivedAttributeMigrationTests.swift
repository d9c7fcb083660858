@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Derived attributes added by a migration are computed for the stored objects")
struct DerivedAttributeMigrationTests {
    /// Lines and their stops; version 2 adds a count, a sum and a copied name, all derived.
    static func model(derived: Bool, countFrom: String = "stops.@count") throws -> ManagedObjectModel {
        var line = EntityDescription("Line", attributes: [AttributeDescription("name", .string)],
                                     relationships: [.toMany("stops", "Stop", inverse: "line")])
        var stop = EntityDescription("Stop", attributes: [AttributeDescription("minutes", .int64, defaultValue: .int(0))],
                                     relationships: [.toOne("line", "Line", inverse: "stops")])
        if derived {
            line.attributes += [AttributeDescription("stopCount", .int64, defaultValue: .int(0), derivedFrom: countFrom),
                                AttributeDescription("totalMinutes", .int64, defaultValue: .int(0), derivedFrom: "stops.@sum.minutes")]
            stop.attributes.append(AttributeDescription("lineName", .string, optional: true, derivedFrom: "line.name"))
        }
        return try ManagedObjectModel(entities: [line, stop])
    }

    /// Three lines with 0, 1 … stops (more than a batch of the pass for the last).
    static func populate(_ context: ManagedObjectContext, stopsPerLine: [Int]) throws {
        for (index, count) in stopsPerLine.enumerated() {
            let line = try context.insertNewObject(forEntityName: "Line")
            line.setValue("L\(index)", forKey: "name")
            for minute in 0..<count {
                let stop = try context.insertNewObject(forEntityName: "Stop")
                stop.setValue(minute, forKey: "minutes")
                stop.setValue(line, forKey: "line")
            }
        }
        try context.save()
    }

    /// Each line's stored count and sum, and each stop's line name, beside what they should be.
    static func problems(_ store: PersistentStore, model: ManagedObjectModel) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait {
            var problems: [String] = []
            for line in try context.fetch(FetchRequest(entityName: "Line")) {
                let stops = line.value(forKey: "stops") as? [ManagedObject] ?? []
                let minutes = stops.compactMap { $0.value(forKey: "minutes") as? Int64 }.reduce(0, +)
                if line.value(forKey: "stopCount") as? Int64 != Int64(stops.count) { problems.append("\(line.objectID) count") }
                if line.value(forKey: "totalMinutes") as? Int64 != minutes { problems.append("\(line.objectID) minutes") }
                for stop in stops where stop.value(forKey: "lineName") as? String != line.value(forKey: "name") as? String {
                    problems.append("\(stop.objectID) lineName")
                }
            }
            return problems
        }
    }

    @Test("a migration that adds derived attributes computes them before the store is used; a changed expression is computed again")
    func addedByMigration() throws {
        let directory = TemporaryDirectory("arbor-derived-migration")
        defer { directory.remove() }
        let url = directory.file("store.arbor")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model(derived: false))
            try coordinator.addPersistentStore(at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait { try Self.populate(context, stopsPerLine: [0, 1, 2_500]) }
        }
        let version2 = try Self.model(derived: true)
        let store = try PersistentStore(url: url, model: version2)
        #expect(try store.storage.pendingDerivations().sorted() == ["Line.stopCount", "Line.totalMinutes", "Stop.lineName"])
        #expect(try Self.problems(store, model: version2) == [])
        #expect(try store.storage.pendingDerivations() == [])
        let history = try store.modelHistory()
        #expect(history.last?.changes.contains("Line.stopCount added") == true)

        // Version 3 counts something else: the values are computed again.
        let version3 = try Self.model(derived: true, countFrom: "stops.@sum.minutes")
        let changed = try PersistentStore(url: url, model: version3)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: version3)
        try coordinator.add(changed)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let lines = try context.fetch(FetchRequest(entityName: "Line", sortDescriptors: [ObjectSortDescriptor("name")]))
            #expect(lines.map { $0.value(forKey: "stopCount") as? Int64 } == [0, 0, 3_123_750])
        }
    }

    @Test("every write and sync point of the migration and of the pass that computes the values, three crash models")
    func crashAtEveryPoint() throws {
        let old = try Self.model(derived: false), new = try Self.model(derived: true)
        let baseFile = SimulatedFile()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: old)
        try coordinator.add(try PersistentStore(file: baseFile, model: old))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { try Self.populate(context, stopsPerLine: [0, 3, 40]) }
        let baseImage = baseFile.currentBytes

        // The probe: migrate and compute, counting the file operations.
        let probe = SimulatedFile(bytes: baseImage)
        let probeCoordinator = PersistentStoreCoordinator(managedObjectModel: new)
        try probeCoordinator.add(try PersistentStore(file: probe, model: new))
        let points = probe.operationCount
        #expect(points >= 8)

        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            #expect(throws: (any Error).self) {
                let crashing = PersistentStoreCoordinator(managedObjectModel: new)
                try crashing.add(try PersistentStore(file: file, model: new))
            }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 3 + modeIndex))
                // Opening again with the new model finishes whatever the crash cut short.
                let reopened = try PersistentStore(file: SimulatedFile(bytes: image), model: new)
                #expect(try Self.problems(reopened, model: new) == [], "crash point \(point), \(mode)")
                #expect(try reopened.storage.pendingDerivations() == [], "crash point \(point), \(mode)")
                #expect(reopened.checkIntegrity().isSound, "crash point \(point), \(mode)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
    }
}
