@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// A crash at any write or sync point of a batch request leaves the store as it was before
/// the request or as it is after it, never in between, with every index agreeing with the rows.
@Suite("A crash in the middle of a batch request leaves the previous state")
struct BatchCrashTests {
    enum Workload: String, CaseIterable, Sendable {
        case update, rename, delete, upsert
    }

    /// 60 stops with 8 stop times each: enough rows that a request writes many pages.
    static func seed(_ context: ManagedObjectContext) throws {
        var stops: [Stop] = []
        for number in 1...60 {
            let stop = makeStop(context, Int64(number))
            if number > 50, let parent = stops.first { stop.parent = parent }
            for minute in 0..<8 {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(number * 1000 + minute * 60))
                time.arrivalTime = time.departureTime
                time.pickupType = Int16(minute % 2)
                time.stop = stop
            }
            stops.append(stop)
        }
        try context.save()
    }

    static func run(_ workload: Workload, _ context: ManagedObjectContext) throws {
        switch workload {
        case .update:
            _ = try context.execute(BatchUpdateRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "pickupType == 0"),
                                                       propertiesToUpdate: ["departureTime": .expression(try ObjectExpression(format: "departureTime + 3600"))]))
        case .rename:
            // Moves words and substrings entries (the crash model indexes names).
            _ = try context.execute(BatchUpdateRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier > 20"),
                                                       propertiesToUpdate: ["name": .value(.string("Umbenannte Straße"))]))
        case .delete:
            _ = try context.execute(BatchDeleteRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier <= 30")))
        case .upsert:
            var request = BatchInsertRequest(entityName: "Stop", objects: (40...90).map {
                ["identifier": Int64($0), "stopID": "S\($0)", "name": "Edition 2 \($0)", "latitude": 52.5, "longitude": 13.4]
            })
            request.conflictRule = .update
            request.conflictConstraint = ["stopID"]
            _ = try context.execute(request)
        }
    }

    @Test("every write and sync point, three crash models", arguments: Workload.allCases)
    func crashAtEveryPoint(workload: Workload) throws {
        let model = try SaveCrashTests.crashModel()
        let baseFile = SimulatedFile()
        let (baseStore, baseContext) = try SaveCrashTests.open(baseFile, model)
        try baseContext.performAndWait { try Self.seed(baseContext) }
        let before = try SaveCrashTests.snapshot(baseStore, model: model)
        let baseImage = baseFile.currentBytes

        let probe = SimulatedFile(bytes: baseImage)
        let (probeStore, probeContext) = try SaveCrashTests.open(probe, model)
        try probeContext.performAndWait { try Self.run(workload, probeContext) }
        let after = try SaveCrashTests.snapshot(probeStore, model: model)
        #expect(try probeStore.btree().consistencyProblems() == [])
        #expect(after != before)
        let points = probe.operationCount
        #expect(points >= 4)

        var sawBefore = 0, sawAfter = 0
        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            let (_, context) = try SaveCrashTests.open(file, model)
            _ = context.performAndWait {
                #expect(throws: (any Error).self) { try Self.run(workload, context) }
            }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 7 + modeIndex))
                let (reopened, _) = try SaveCrashTests.open(SimulatedFile(bytes: image), model)
                let state = try SaveCrashTests.snapshot(reopened, model: model)
                #expect(state == before || state == after, "crash point \(point), \(mode)")
                if state == before { sawBefore += 1 } else if state == after { sawAfter += 1 }
                #expect(reopened.checkIntegrity().isSound, "crash point \(point), \(mode)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawBefore > 0)
        #expect(sawAfter > 0)
    }
}
