/// The state of a managed object that few objects have: an object keeps it behind one
/// reference (`ManagedObject.extras`), made when a part is first set. Most fetched objects
/// have none: they are smaller, and their creation and release skip each part.
/// Read and written only on the object's context's queue.
final class ObjectExtras {
    /// Made on the first read registered with Observation (see `ManagedObject+Observation`).
    var observation: ObjectObservation?
    /// Set by a save's validation while it calls `validateValue(_:forKey:)` for an attribute.
    var pendingRuleCheck: PendingRuleCheck?
    /// Transient attributes' values as of the last save (see `ManagedObject.transientValues`).
    var transientValues: [AttributeValue?] = []
    /// Related objects loaded by prefetching (see `ManagedObject.prefetched`).
    var prefetched: [ManagedObject] = []
    /// The row-cache entry the object keeps alive, released in the object's `deinit`.
    var cacheRetention: (cache: RowCache, key: RowKey)?
}
