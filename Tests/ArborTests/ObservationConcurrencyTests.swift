@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Observation key paths: made once per entity, on first use, from any thread")
struct ObservationConcurrencyTests {
    @Test("threads asking a fresh entity for its key paths at once all get the same ones")
    func keyPathsMadeOnceFromManyThreads() throws {
        // A fresh model: no key path is made yet. ThreadSanitizer runs this suite.
        let model = try ManagedObjectModel(types: DeclaredModel.types)
        guard let info = model.info(named: "DeclaredLibrary") else {
            Issue.record("the model has no DeclaredLibrary")
            return
        }
        let expected = info.columnCount + info.toManyCount + info.transientAttributes.count
        final class Results: @unchecked Sendable {  // each thread writes its own slot
            var paths = [[KeyPath<ManagedObject, Int>]](repeating: [], count: 8)
        }
        let results = Results()
        results.paths.withUnsafeMutableBufferPointer { slots in
            nonisolated(unsafe) let slots = slots
            DispatchQueue.concurrentPerform(iterations: 8) { thread in slots[thread] = info.observationKeyPaths.all }
        }
        #expect(results.paths.allSatisfy { $0.count == expected && $0 == results.paths[0] })
        #expect(results.paths[0] == (0..<expected).map { \ManagedObject.[observationKey: $0] })
    }
}
