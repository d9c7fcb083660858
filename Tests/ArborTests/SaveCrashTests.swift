@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("A crash in the middle of a save leaves the previous state")
struct SaveCrashTests {
    /// The whole transit graph as text: stops with their ordered stop times and children.
    static func snapshot(_ store: PersistentStore, model: ManagedObjectModel) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait {
            guard let info = model.info(named: "Stop"), let timeInfo = model.info(named: "StopTime") else { return [] }
            var lines: [String] = []
            for id in try store.btree().allObjectIDs(of: info) {
                let stop = try #require(try context.existingObject(with: id) as? Stop)
                let times = stop.stopTimes.map { "\(Int($0.departureTime.timeIntervalSince1970))" }.joined(separator: ",")
                let children = stop.children.map(\.identifier).sorted().map(String.init).joined(separator: ",")
                lines.append("\(stop.identifier) \(stop.name) parent=\(stop.parent?.identifier ?? -1) times=[\(times)] children=[\(children)]")
            }
            lines.append("stopTimes=\(try store.btree().allObjectIDs(of: timeInfo).count)")
            return lines
        }
    }

    static func seed(_ context: ManagedObjectContext) throws {
        let stops = (1...4).map { makeStop(context, Int64($0)) }
        stops[3].parent = stops[0]
        for (index, stop) in stops.enumerated() {
            for minute in 0..<(3 + index) {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(index * 100 + minute))
                time.arrivalTime = time.departureTime
                time.stop = stop
            }
        }
        try context.save()
    }

    /// The save that is interrupted: inserts, a cascading delete, a rename, a reorder.
    static func change(_ context: ManagedObjectContext, store: PersistentStore, model: ManagedObjectModel) throws {
        guard let info = model.info(named: "Stop") else { return }
        let stops = try store.btree().allObjectIDs(of: info).compactMap { try context.existingObject(with: $0) as? Stop }
        stops[0].name = "renamed"
        context.delete(stops[1])
        stops[2].stopTimes = stops[2].stopTimes.reversed()
        for minute in 0..<30 {
            let time = StopTime(context: context)
            time.departureTime = Date(timeIntervalSince1970: Double(1000 + minute))
            time.arrivalTime = time.departureTime
            time.stop = stops[3]
        }
        let extra = makeStop(context, 9)
        extra.parent = stops[0]
        try context.save()
    }

    /// The transit fixture with words and substrings indexes on the stop's name: a rename and
    /// a delete move their entries too.
    static func crashModel() throws -> ManagedObjectModel {
        var entities = Fixtures.transitEntities()
        entities[0].indexes += [IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)]
        return try ManagedObjectModel(entities: entities)
    }

    static func open(_ file: SimulatedFile, _ model: ManagedObjectModel) throws -> (PersistentStore, ManagedObjectContext) {
        let store = try PersistentStore(file: file, model: model, options: PersistentStore.Options())
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        return (store, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    @Test("every write and sync point of a save, three crash models")
    func crashAtEveryPoint() throws {
        let model = try Self.crashModel()
        let baseFile = SimulatedFile()
        let (baseStore, baseContext) = try Self.open(baseFile, model)
        try baseContext.performAndWait { try Self.seed(baseContext) }
        let before = try Self.snapshot(baseStore, model: model)
        let baseImage = baseFile.currentBytes

        let probe = SimulatedFile(bytes: baseImage)
        let (probeStore, probeContext) = try Self.open(probe, model)
        try probeContext.performAndWait { try Self.change(probeContext, store: probeStore, model: model) }
        let after = try Self.snapshot(probeStore, model: model)
        #expect(after != before)
        let points = probe.operationCount
        #expect(points >= 4)

        var sawBefore = 0, sawAfter = 0
        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            let (store, context) = try Self.open(file, model)
            _ = context.performAndWait {
                #expect(throws: (any Error).self) { try Self.change(context, store: store, model: model) }
            }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 7 + modeIndex))
                let (reopened, _) = try Self.open(SimulatedFile(bytes: image), model)
                let state = try Self.snapshot(reopened, model: model)
                #expect(state == before || state == after, "crash point \(point), \(mode): \(state) vs \(after)")
                if state == before { sawBefore += 1 } else if state == after { sawAfter += 1 }
                let report = reopened.checkIntegrity()
                #expect(report.isSound, "crash point \(point), \(mode): \(report.problems)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawBefore > 0)
        #expect(sawAfter > 0)
    }
}
