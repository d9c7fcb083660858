import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Asynchronous fetch: progress, estimated count, cancellation")
struct AsyncFetchTests {
    @Test("progress reaches the estimate; a cancelled progress stops the fetch")
    func progressAndCancellation() async throws {
        let stack = try TestStack()
        let context = stack.context()
        try await context.perform {
            for index in 0..<3000 { _ = makeStop(context, Int64(index)) }
            try context.save()
        }
        let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name ENDSWITH '7'"))
        let estimate = try await context.perform { try context.estimatedCount(for: request) }
        #expect(estimate == 3000)
        let progress = Progress(totalUnitCount: 0)
        let ids = try await context.fetchObjectIDs(request, progress: progress)
        #expect(ids.count == 300)
        #expect(progress.totalUnitCount == 3000 && progress.completedUnitCount == 3000)

        let cancelled = Progress(totalUnitCount: 0)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await context.fetchObjectIDs(request, progress: cancelled) }
    }
}
