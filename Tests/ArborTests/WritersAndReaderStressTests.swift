import Arbor
import ArborEngine
import ArborTestSupport
import Dispatch
import Foundation
import Testing

@Suite("Several writers and a reader at once")
struct WritersAndReaderStressTests {
    @Test("three background contexts insert and update shared stops while a merging reader fetches; every save lands, the file is sound")
    func stress() throws {
        let stack = try TestStack()
        let setup = stack.context()
        let shared = try setup.performAndWait { () throws -> [ObjectID] in
            let stops = (0..<5).map { makeStop(setup, Int64(1_000 + $0)) }
            try setup.save()
            return stops.map(\.objectID)
        }
        let writers = (0..<3).map { _ in stack.context() }
        let reader = stack.context()
        reader.performAndWait { reader.automaticallyMergesChangesFromParent = true }
        let failures = Locked<[String]>([])
        let writersDone = Locked(0)
        let group = DispatchGroup()
        for (number, writer) in writers.enumerated() {
            group.enter()
            writer.perform {
                defer { group.leave(); writersDone.withLock { $0 += 1 } }
                writer.mergePolicy = .objectTrumps  // the writers touch the same stops
                do {
                    for batch in 0..<15 {
                        for index in 0..<20 { _ = makeStop(writer, Int64(100_000 + number * 10_000 + batch * 100 + index)) }
                        let target = try writer.existingObject(with: shared[(number + batch) % shared.count]) as? Stop
                        target?.name = "writer \(number) batch \(batch)"
                        try writer.save()
                    }
                } catch {
                    failures.withLock { $0.append("writer \(number): \(error)") }
                }
            }
        }
        // The reader fetches continuously until every writer is done; counts never go down.
        var last = 0, fetches = 0
        var slowest: Duration = .zero
        while writersDone.withLock({ $0 }) < writers.count {
            let started = ContinuousClock.now
            let count = try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Stop")) }
            slowest = max(slowest, ContinuousClock.now - started)
            #expect(count >= last)
            last = count
            fetches += 1
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(failures.withLock { $0 } == [])
        let total = try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Stop")) }
        #expect(total == 5 + 3 * 15 * 20)
        #expect(fetches > 0)
        #expect(stack.store.checkIntegrity().isSound)
        // Each shared stop carries one writer's last name for it (objectTrumps: the last save wins).
        let names = try reader.performAndWait { () throws -> [String] in
            try shared.map { (try reader.existingObject(with: $0) as? Stop)?.name ?? "" }
        }
        #expect(names.allSatisfy { $0.hasPrefix("writer ") })
        print("stress: \(fetches) reader fetches during the writes, slowest \(slowest)")
    }
}
