import Foundation

extension ManagedObjectContext {
    /// An upper bound on the objects `request` can return, known at once: the row count of the
    /// entity's hierarchy in each store (the predicate is not applied).
    /// - Complexity: O(stores).
    public func estimatedCount(for request: FetchRequest) throws -> Int {
        guard let coordinator = persistentStoreCoordinator, let info = model?.info(named: request.entityName) else {
            throw ContextError.unknownEntity(request.entityName)
        }
        return try searchedStores(request, info, coordinator).reduce(0) { $0 + (try $1.storage.estimatedCount(info)) }
    }

    /// Runs `request` on the context's queue without blocking the caller (Core Data's
    /// asynchronous fetch) and returns the matching IDs; materialize them with `object(with:)`
    /// on the context that needs them.
    ///
    /// `progress` gets `totalUnitCount` = `estimatedCount(for:)` and `completedUnitCount` = rows
    /// examined so far. Cancelling the task or the progress stops the fetch with
    /// `CancellationError` at the next 256 rows.
    /// - Throws: as `fetch`; `CancellationError`.
    public func fetchObjectIDs(_ request: FetchRequest, progress: Progress) async throws -> [ObjectID] {
        let box = UncheckedProgress(progress)
        return try await withTaskCancellationHandler {
            try await perform {
                let progress = box.progress
                progress.totalUnitCount = Int64((try? self.estimatedCount(for: request)) ?? -1)
                let ids = try self.execute(request) { examined in
                    progress.completedUnitCount = Int64(examined)
                    if progress.isCancelled { throw CancellationError() }
                }.entries.map(\.id)
                progress.completedUnitCount = max(progress.totalUnitCount, progress.completedUnitCount)
                return ids
            }
        } onCancel: {
            box.progress.cancel()
        }
    }
}

/// Foundation's `Progress` is thread-safe; this box lets it cross into the context's queue.
private struct UncheckedProgress: @unchecked Sendable {
    let progress: Progress
    init(_ progress: Progress) { self.progress = progress }
}
