import Foundation

/// What a batch request (or another process's save) inserted, updated and deleted, by ID:
/// Core Data's remote-change dictionary, for `ManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
public struct ObjectChanges: Sendable {
    public var inserted: ObjectIDSet
    public var updated: ObjectIDSet
    public var deleted: ObjectIDSet

    public init(inserted: ObjectIDSet = ObjectIDSet(), updated: ObjectIDSet = ObjectIDSet(), deleted: ObjectIDSet = ObjectIDSet()) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// The changes a context's save reported.
    public init(_ save: ContextDidSave) {
        self.init(inserted: ObjectIDSet(save.inserted), updated: ObjectIDSet(save.updated), deleted: ObjectIDSet(save.deleted))
    }

    /// The number of objects named (an object may be named twice).
    public var count: Int { inserted.count + updated.count + deleted.count }
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
