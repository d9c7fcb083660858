@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("A crash in the middle of saving an undone deletion leaves the previous state")
struct UndoCrashTests {
    /// Deletes stop 2 (its stop times cascade) and saves, in a context with an undo manager.
    static func delete(_ context: ManagedObjectContext, store: PersistentStore, model: ManagedObjectModel) throws {
        guard let info = model.info(named: "Stop") else { return }
        context.undoManager = ContextUndoManager()
        let stops = try store.btree().allObjectIDs(of: info).compactMap { try context.existingObject(with: $0) as? Stop }
        context.delete(stops[1])
        context.processPendingChanges()
        try context.save()
    }

    /// The save interrupted: the deletion undone, the rows written back under their keys.
    static func undoAndSave(_ context: ManagedObjectContext) throws {
        context.undo()
        try context.save()
    }

    @Test("every write and sync point of the save that writes deleted rows back, three crash models")
    func crashAtEveryPoint() throws {
        let model = try SaveCrashTests.crashModel()
        let baseFile = SimulatedFile()
        let (baseStore, baseContext) = try SaveCrashTests.open(baseFile, model)
        try baseContext.performAndWait { try SaveCrashTests.seed(baseContext) }
        let seeded = try SaveCrashTests.snapshot(baseStore, model: model)
        let baseImage = baseFile.currentBytes

        let probe = SimulatedFile(bytes: baseImage)
        let (probeStore, probeContext) = try SaveCrashTests.open(probe, model)
        try probeContext.performAndWait { try Self.delete(probeContext, store: probeStore, model: model) }
        let deleted = try SaveCrashTests.snapshot(probeStore, model: model)
        let deletePoints = probe.operationCount
        try probeContext.performAndWait { try Self.undoAndSave(probeContext) }
        let restored = try SaveCrashTests.snapshot(probeStore, model: model)
        #expect(deleted != seeded)
        #expect(restored == seeded)
        let points = probe.operationCount - deletePoints
        #expect(points >= 4)

        var sawBefore = 0, sawAfter = 0
        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: deletePoints + point)
            let (store, context) = try SaveCrashTests.open(file, model)
            try context.performAndWait { try Self.delete(context, store: store, model: model) }
            _ = context.performAndWait {
                #expect(throws: (any Error).self) { try Self.undoAndSave(context) }
            }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 7 + modeIndex))
                let (reopened, _) = try SaveCrashTests.open(SimulatedFile(bytes: image), model)
                let state = try SaveCrashTests.snapshot(reopened, model: model)
                #expect(state == deleted || state == restored, "crash point \(point), \(mode): \(state)")
                if state == deleted { sawBefore += 1 } else if state == restored { sawAfter += 1 }
                let report = reopened.checkIntegrity()
                #expect(report.isSound, "crash point \(point), \(mode): \(report.problems)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawBefore > 0)
        #expect(sawAfter > 0)
    }
}
