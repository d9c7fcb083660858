@testable import Arbor
import ArborTestSupport
import Testing

@Suite("Context operations against a reference object graph")
struct ContextDifferentialTests {
    /// Seeds 12 and up run on a store of key format 1 (fixed int64 keys, as older versions wrote).
    @Test("random insert, relate, reorder, delete, save, rollback, refresh and reset", arguments: 0..<16)
    func randomOperations(seed: UInt64) throws {
        var options = PersistentStore.Options()
        if seed >= 12 { options.keyFormat = 1 }
        let runner = try GraphDifferential(options: options)
        var source = ByteSource(seed: 0xA5B0 &+ seed)
        do {
            try runner.run(&source, steps: 400)
        } catch let mismatch as GraphDifferential.Mismatch {
            Issue.record("seed \(seed): \(mismatch.description)")
        }
    }
}

@Suite("Context operations on an in-memory store against a reference object graph")
struct InMemoryContextDifferentialTests {
    @Test("random insert, relate, reorder, delete, save, rollback, refresh and reset on an in-memory store", arguments: 0..<8)
    func randomOperations(seed: UInt64) throws {
        let runner = try GraphDifferential(inMemory: true)
        var source = ByteSource(seed: 0xA5B0 &+ seed)
        do {
            try runner.run(&source, steps: 400)
        } catch let mismatch as GraphDifferential.Mismatch {
            Issue.record("seed \(seed): \(mismatch.description)")
        }
    }

    @Test("the same operations in a child context over an in-memory store", arguments: 0..<4)
    func randomOperationsInChild(seed: UInt64) throws {
        let runner = try GraphDifferential(childContext: true, inMemory: true)
        var source = ByteSource(seed: 0xC41D &+ seed)
        do {
            try runner.run(&source, steps: 400)
        } catch let mismatch as GraphDifferential.Mismatch {
            Issue.record("seed \(seed): \(mismatch.description)")
        }
    }
}

@Suite("A child context against a reference object graph")
struct ChildContextDifferentialTests {
    @Test("the same random operations in a child context, saved into its parent and, at random, to the store", arguments: 0..<16)
    func randomOperationsInChild(seed: UInt64) throws {
        let runner = try GraphDifferential(childContext: true)
        var source = ByteSource(seed: 0xC41D &+ seed)
        do {
            try runner.run(&source, steps: 400)
        } catch let mismatch as GraphDifferential.Mismatch {
            Issue.record("seed \(seed): \(mismatch.description)")
        }
    }
}

@Suite("Undo differential: random edits, undo and redo across saves against a reference history")
struct UndoDifferentialTests {
    @Test("undo and redo restore the reference's graphs, and saves after them store what is shown", arguments: 0..<32)
    func seeded(seed: UInt64) throws {
        let runner = try GraphDifferential(undo: true)
        var source = ByteSource(seed: 0x0DD0 &+ seed)
        try runner.run(&source, steps: 300)
        #expect(runner.log.filter { $0 == "undo" }.count >= 10)
        #expect(runner.log.filter { $0 == "redo" }.count >= 3)
    }

    @Test("the same on an in-memory store, and in a child context whose saves push into its parent", arguments: [false, true])
    func inMemoryAndChild(child: Bool) throws {
        // 182: a deletion pushed to the parent and undone; the next push must give the parent the
        // object's lists, not leave it the ones it had before the deletion.
        for seed in Array(UInt64(100)..<108) + [182] {
            let runner = try GraphDifferential(childContext: child, inMemory: !child, undo: true)
            var source = ByteSource(seed: seed)
            try runner.run(&source, steps: 300)
        }
    }
}
