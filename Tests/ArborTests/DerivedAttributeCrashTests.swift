@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("A crash in the middle of a save with derived values leaves the previous state")
struct DerivedAttributeCrashTests {
    static func open(_ file: SimulatedFile, _ model: ManagedObjectModel) throws -> ManagedObjectContext {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(try PersistentStore(file: file, model: model, options: PersistentStore.Options()))
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    /// Every station and departure as text, derived values included.
    static func describe(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait {
            let stations = try context.fetch(FetchRequest(entityName: "RuledStation", sortDescriptors: [ObjectSortDescriptor("name")]),
                                             as: RuledStation.self)
            return stations.map { station in
                let departures = station.departures.map { "\($0.minutes)/\($0.stationName ?? "-")" }.sorted()
                return "\(station.name) \(station.departureCount) \(station.totalMinutes) \(departures)"
            }
        }
    }

    /// A rename that every departure of the station follows, and departures moved and deleted.
    static func change(_ context: ManagedObjectContext) throws {
        try context.performAndWait {
            let stations = try context.fetch(FetchRequest(entityName: "RuledStation", sortDescriptors: [ObjectSortDescriptor("name")]),
                                             as: RuledStation.self)
            stations[0].name = "Renamed"
            let moving = stations[1].departures
            for departure in moving.prefix(5) { departure.station = stations[2] }
            context.delete(moving[moving.count - 1])
            try context.save()
        }
    }

    @Test("every write and sync point of a save that fans derived values out, three crash models")
    func crashAtEveryPoint() throws {
        let model = try RuledModel.make()
        let baseFile = SimulatedFile()
        let seedContext = try Self.open(baseFile, model)
        try seedContext.performAndWait {
            for (index, name) in ["Alpha", "Beta", "Gamma"].enumerated() {
                let station = RuledStation(context: seedContext)
                station.name = name
                for minute in 0..<(40 * (index + 1)) {
                    let departure = RuledDeparture(context: seedContext)
                    departure.minutes = minute
                    departure.station = station
                }
            }
            try seedContext.save()
        }
        let baseImage = baseFile.currentBytes
        let before = try Self.describe(try Self.open(SimulatedFile(bytes: baseImage), model))
        let probe = SimulatedFile(bytes: baseImage)
        let probeContext = try Self.open(probe, model)
        try Self.change(probeContext)
        let after = try Self.describe(probeContext)
        #expect(after != before)
        #expect(try DerivedAttributeDifferentialTests.mismatches(probeContext) == [])
        var sawBefore = 0, sawAfter = 0
        for point in 0..<probe.operationCount {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            let context = try Self.open(file, model)
            #expect(throws: (any Error).self) { try Self.change(context) }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 7 + modeIndex))
                let reopened = try Self.open(SimulatedFile(bytes: image), model)
                let state = try Self.describe(reopened)
                #expect(state == before || state == after, "crash point \(point), \(mode)")
                if state == before { sawBefore += 1 } else if state == after { sawAfter += 1 }
                #expect(try DerivedAttributeDifferentialTests.mismatches(reopened) == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawBefore > 0)
        #expect(sawAfter > 0)
    }
}
