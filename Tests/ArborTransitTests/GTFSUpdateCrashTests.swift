@testable import Arbor
import ArborEngineTestSupport
@testable import ArborTransit
import Foundation
import Testing

/// `arbor import gtfs --update` writes a copy of the store through several batch requests and
/// renames it into place: a crash before the rename leaves the published store untouched, so
/// what must hold is that the working copy is sound after a crash at any write or sync point
/// (each request is atomic), and that once the writer returns every byte of the new edition is
/// on disk (the rename publishes nothing that a power loss could take back).
@Suite("A crash in the middle of arbor import gtfs --update")
struct GTFSUpdateCrashTests {
    static func open(_ file: SimulatedFile, _ model: ManagedObjectModel) throws -> (PersistentStore, ManagedObjectContext) {
        // As the importer opens an updated copy (GTFSImporter.importFeed): durable commits.
        var options = PersistentStore.Options()
        options.durability = .full
        let store = try PersistentStore(file: file, model: model, options: options)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        return (store, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    static func write(_ feed: URL, into context: ManagedObjectContext, update: Bool) throws {
        var options = GTFSImportOptions()
        options.update = update
        try context.performAndWait {
            _ = try TransitWriter(context: context, options: options)
                .run(stopsURL: feed.appendingPathComponent("stops.txt"), timesURL: feed.appendingPathComponent("stop_times.txt"), progress: { _ in })
        }
    }

    /// Every stop with its values and its stop times in order, by stop_id.
    static func contents(_ context: ManagedObjectContext) throws -> [String: String] {
        try context.performAndWait {
            var result: [String: String] = [:]
            for stop in try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self) {
                let times = stop.stopTimes.map { "\(Int($0.departureTime?.timeIntervalSince1970 ?? -1))/\($0.pickupType)" }
                result[stop.stopID] = "\(stop.name)|\(stop.latitude ?? 0)|\(stop.longitude ?? 0)|\(times.joined(separator: ","))"
            }
            result["#stopTimes"] = "\(try context.count(for: FetchRequest(entityName: "StopTime")))"
            return result
        }
    }

    @Test("a crash at every write and sync point leaves a sound copy; a finished update is all on disk")
    func crashAtEveryPoint() throws {
        let scratch = try ScratchDirectory()
        let first = GTFSUpdateTests.edition1()
        var second = first
        second.stops[1].name = "Umbenannt"
        second.stops.remove(at: 4)
        second.times.removeAll { $0.stop == first.stops[4].id }
        second.stops.append((id: "N1", name: "Neu", latitude: 52.6, longitude: 13.5))
        second.times.append((stop: "N1", seconds: 30_000, pickup: 0))
        second.times.append((stop: second.stops[5].id, seconds: 31_000, pickup: 1))
        let firstFeed = try first.write(scratch, "first"), secondFeed = try second.write(scratch, "second")
        let model = try TransitModel.make()

        let base = SimulatedFile()
        let (_, baseContext) = try Self.open(base, model)
        try Self.write(firstFeed, into: baseContext, update: false)
        let before = try Self.contents(baseContext)
        let baseImage = base.currentBytes

        let probe = SimulatedFile(bytes: baseImage)
        let (_, probeContext) = try Self.open(probe, model)
        try Self.write(secondFeed, into: probeContext, update: true)
        let after = try Self.contents(probeContext)
        #expect(after != before && after["N1"] != nil && after[first.stops[4].id] == nil)
        let points = probe.operationCount
        #expect(points >= 6)

        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            let (_, context) = try Self.open(file, model)
            do {
                try Self.write(secondFeed, into: context, update: true)
                // Fewer writes than the probe made (none is expected to be): nothing crashed.
                Issue.record("crash point \(point) of \(points) was not reached: the update wrote differently from the probe")
                continue
            } catch {
                // The simulated crash, as the store reports it.
            }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 5 + modeIndex))
                let (reopened, _) = try Self.open(SimulatedFile(bytes: image), model)
                #expect(reopened.checkIntegrity().isSound, "crash point \(point), \(mode)")
                #expect(try #require(reopened.fileStorage).consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        // The writer has returned: the importer renames the copy now. Whatever a power loss
        // keeps of it must be the whole new edition.
        for (modeIndex, mode) in CrashMode.allCases.enumerated() {
            let (_, context) = try Self.open(SimulatedFile(bytes: probe.crashImage(mode: mode, seed: UInt64(modeIndex))), model)
            #expect(try Self.contents(context) == after, "\(mode)")
        }
    }
}
