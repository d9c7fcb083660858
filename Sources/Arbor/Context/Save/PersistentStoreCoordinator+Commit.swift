/// A save over several stores, in two phases.
///
/// 1. **Prepare**, store by store in the plan's order: each store takes its write lock, checks
///    optimistic locking and uniqueness, and writes the request into an uncommitted
///    transaction. Any failure aborts every prepared store: nothing is written anywhere.
/// 2. **Commit**, store by store: each store makes its transaction durable and publishes it.
///    A failure here aborts the stores not yet committed; those already committed stay
///    committed (the guarantee stated in Spec/object-store.md).
///
/// The fixed store order (`ContextSavePlan.requests`) keeps two saves from taking the same
/// write locks in opposite orders.
extension PersistentStoreCoordinator {
    typealias CommittedSave = (store: PersistentStore, save: any PreparedStoreSave)

    /// Writes every request to its store; returns the committed saves with their results.
    /// - Throws: `StoreError.conflicts`, `ValidationError` (uniqueness) or I/O errors from the
    ///   first store that fails.
    func commit(_ requests: [(store: PersistentStore, request: SaveRequest)]) throws -> [CommittedSave] {
        var prepared: [CommittedSave] = []
        do {
            for (store, request) in requests { prepared.append((store, try store.storage.prepareSave(request))) }
        } catch {
            for (_, save) in prepared { save.abort() }
            throw error
        }
        var committed = 0
        do {
            for (_, save) in prepared {
                try save.commit()
                committed += 1
            }
        } catch {
            for (_, save) in prepared[committed...] { save.abort() }
            throw error
        }
        return prepared
    }
}
