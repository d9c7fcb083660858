/// How to order fetched objects.
public struct ObjectSortDescriptor: Hashable, Sendable {
    /// A key path from the fetched entity (`name`, `stop.name`).
    public var keyPath: String
    public var ascending: Bool
    /// [c]/[d] string comparison.
    public var options: StringOptions

    public init(_ keyPath: String, ascending: Bool = true, options: StringOptions = []) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.options = options
    }
}

/// A description of objects to fetch (Core Data's `NSFetchRequest`).
public struct FetchRequest: Sendable {
    public enum ResultType: Sendable {
        case managedObjects, objectIDs, count
    }

    public var entityName: String
    public var predicate: ObjectPredicate?
    public var sortDescriptors: [ObjectSortDescriptor] = []
    /// 0: no limit.
    public var fetchLimit = 0
    public var fetchOffset = 0
    /// Above 0: `fetchResults` materializes objects this many at a time.
    public var fetchBatchSize = 0
    /// Whether objects of sub-entities are included (the default).
    public var includesSubentities = true
    /// Whether the context's unsaved inserts, updates and deletes are reflected (the default).
    public var includesPendingChanges = true
    /// false: fetched objects arrive with their data loaded (no fault fires on first access).
    public var returnsObjectsAsFaults = true
    public var resultType: ResultType = .managedObjects

    public init(entityName: String, predicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor] = []) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }
}
