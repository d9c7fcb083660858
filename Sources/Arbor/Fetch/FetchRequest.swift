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
        case managedObjects, objectIDs, count, dictionaries
    }

    public var entityName: String {
        didSet { prepared = nil }
    }
    /// The condition objects must meet (nil: every object of the entity).
    /// A request bound from a `PreparedFetchRequest` keeps its values beside the written
    /// predicate (see `BoundPredicate`); reading this substitutes them.
    public var predicate: ObjectPredicate? {
        get { boundPredicate.predicate }
        set {
            boundPredicate = BoundPredicate(newValue)
            prepared = nil
        }
    }
    /// The predicate, its variables' values kept apart until something reads it whole.
    private(set) var boundPredicate = BoundPredicate(nil)
    /// Whether the request has a predicate (without substituting its values).
    var hasPredicate: Bool { boundPredicate.written != nil }
    public var sortDescriptors: [ObjectSortDescriptor] {
        get { options.value.sortDescriptors }
        set { changeOptions { $0.sortDescriptors = newValue } }
    }
    /// The prepared request this one was bound from (its predicate and sorts checked, its
    /// store plans cached); nil once the entity or predicate is set again.
    var prepared: PreparedPlanKey?
    /// 0: no limit.
    public var fetchLimit = 0
    public var fetchOffset = 0
    /// Above 0: `fetch` returns a batched collection that reads and materializes objects this
    /// many at a time as they are accessed (only the matching rows' keys are kept until then),
    /// with at most a few batches alive (least recently used first out).
    public var fetchBatchSize = 0
    /// Whether objects of sub-entities are included (the default).
    public var includesSubentities = true
    /// Whether the context's unsaved inserts, updates and deletes are reflected (the default).
    public var includesPendingChanges = true
    /// false: fetched objects arrive with their data loaded (no fault fires on first access).
    public var returnsObjectsAsFaults = true
    /// false: the objects arrive as faults and their rows are not read when the search answers
    /// the predicate by itself (an index range, no sort): IDs only, as for a delete or a count
    /// (Core Data's `includesPropertyValues`; `returnsObjectsAsFaults` is then ignored).
    public var includesPropertyValues = true
    public var resultType: ResultType = .managedObjects
    /// Relationship key paths (`stop`, `stopTimes`, `stop.parent`) whose objects are loaded with
    /// the results, a batch of lookups per step instead of one fault per object.
    public var relationshipKeyPathsForPrefetching: [String] {
        get { options.value.relationshipKeyPathsForPrefetching }
        set { changeOptions { $0.relationshipKeyPathsForPrefetching = newValue } }
    }
    /// For dictionary results: the values to return (all attributes when empty).
    public var propertiesToFetch: [FetchProperty] {
        get { options.value.propertiesToFetch }
        set { changeOptions { $0.propertiesToFetch = newValue } }
    }
    /// For dictionary results: key paths whose equal values form one group (one dictionary).
    public var propertiesToGroupBy: [String] {
        get { options.value.propertiesToGroupBy }
        set { changeOptions { $0.propertiesToGroupBy = newValue } }
    }
    /// For grouped dictionary results: a condition on each group's dictionary (its keys are
    /// the property names).
    public var havingPredicate: ObjectPredicate? {
        get { options.value.havingPredicate }
        set { changeOptions { $0.havingPredicate = newValue } }
    }
    /// For dictionary results: drop duplicate dictionaries.
    public var returnsDistinctResults = false
    /// The stores to search (nil: every store of the coordinator that holds the entity).
    /// Unsaved objects of the context are still reflected (with `includesPendingChanges`).
    public var affectedStores: [PersistentStore]? {
        get { options.value.affectedStores }
        set { changeOptions { $0.affectedStores = newValue } }
    }

    /// The settings that hold references (arrays, a predicate, stores), shared by copies until
    /// one of them changes one: a fetch copies its request several times (binding, the fetch's
    /// own state, each store's query), and a copy then costs one retain instead of one per array.
    private var options = OptionsBox(Options())

    private mutating func changeOptions(_ change: (inout Options) -> Void) {
        if !isKnownUniquelyReferenced(&options) { options = OptionsBox(options.value) }
        change(&options.value)
    }

    public init(entityName: String, predicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor] = []) {
        self.entityName = entityName
        boundPredicate = BoundPredicate(predicate)
        options.value.sortDescriptors = sortDescriptors
    }
}

extension FetchRequest {
    /// The settings of a request that hold references, besides its entity and predicate.
    fileprivate struct Options {
        var sortDescriptors: [ObjectSortDescriptor] = []
        var relationshipKeyPathsForPrefetching: [String] = []
        var propertiesToFetch: [FetchProperty] = []
        var propertiesToGroupBy: [String] = []
        var havingPredicate: ObjectPredicate?
        var affectedStores: [PersistentStore]?
    }

    /// `Options` behind a reference, copied before a change when another request shares it.
    /// Sendable: a box is changed only while one request holds it (`changeOptions`), and a
    /// request that crosses to another thread is a copy that no longer holds it alone.
    fileprivate final class OptionsBox: @unchecked Sendable {
        var value: Options
        init(_ value: Options) { self.value = value }
    }
}

extension FetchRequest {
    /// Binds the predicate's variables to `bindings` for the prepared request `key` (checked
    /// by its caller), leaving the substitution to the first read.
    mutating func bind(_ bindings: TemplateBindings, preparedBy key: PreparedPlanKey) {
        boundPredicate = BoundPredicate(boundPredicate.written, bindings: bindings)
        prepared = key
    }

    /// Substitutes the bound values now, for a request whose predicate is read many times.
    mutating func resolveBindings() {
        guard boundPredicate.bindings != nil else { return }
        let key = prepared
        predicate = boundPredicate.predicate
        prepared = key
    }
}

/// A value of a dictionary result: a key path's value, or an aggregate over the group.
public struct FetchProperty: Hashable, Sendable {
    /// The key in the result dictionary.
    public var name: String
    /// A key path from the fetched entity (through to-one relationships); to-one relationships
    /// give their object's `ObjectID`.
    public var keyPath: String
    /// nil: the value itself (it must be one of `propertiesToGroupBy` when grouping).
    public var function: AggregateFunction?

    /// The value of `keyPath`, under the name `keyPath`.
    public static func key(_ keyPath: String) -> FetchProperty { FetchProperty(name: keyPath, keyPath: keyPath, function: nil) }

    /// `function` over the group's values of `keyPath` (`@count` counts non-nil values; with
    /// `keyPath` "SELF" it counts objects).
    public static func expression(_ name: String, _ function: AggregateFunction, of keyPath: String) -> FetchProperty {
        FetchProperty(name: name, keyPath: keyPath, function: function)
    }
}
