import Arbor
import ArborTestSupport
import Testing

@Suite("Context operations against a reference object graph")
struct ContextDifferentialTests {
    @Test("random insert, relate, reorder, delete, save, rollback, refresh and reset", arguments: 0..<16)
    func randomOperations(seed: UInt64) throws {
        let runner = try GraphDifferential()
        var source = ByteSource(seed: 0xA5B0 &+ seed)
        do {
            try runner.run(&source, steps: 400)
        } catch let mismatch as GraphDifferential.Mismatch {
            Issue.record("seed \(seed): \(mismatch.description)")
        }
    }
}
