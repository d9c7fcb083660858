extension ManagedObjectContext {
    /// Prepares `request` for repeated fetches with different values for its `$variables`
    /// (see `PreparedFetchRequest`).
    /// - Throws: `ContextError.noPersistentStore` without a model; what `PreparedFetchRequest.init` throws.
    public func prepare(_ request: FetchRequest) throws -> PreparedFetchRequest {
        guard let model else { throw ContextError.noPersistentStore }
        return try PreparedFetchRequest(request, model: model)
    }

    /// The objects `prepared` finds with its variables bound to `values`, as `T`.
    /// - Throws: `FetchTemplateError` for a missing or mistyped variable; what `fetch(_:as:)` throws.
    @inlinable
    public func fetch<T: ManagedObject>(_ prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:], as type: T.Type) throws -> FetchResults<T> {
        try fetch(try prepared.request(values), as: type)
    }

    /// The objects `prepared` finds with its variables bound to `values`.
    public func fetch(_ prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:]) throws -> FetchResults<ManagedObject> {
        try fetch(try prepared.request(values))
    }

    /// The IDs of the objects `prepared` finds with its variables bound to `values`.
    public func fetchObjectIDs(_ prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:]) throws -> [ObjectID] {
        try fetchObjectIDs(try prepared.request(values))
    }

    /// How many objects `prepared` finds with its variables bound to `values`.
    public func count(for prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:]) throws -> Int {
        try count(for: try prepared.request(values))
    }

    // By position: the values in `prepared.variableOrder`, as SQL binds its `?`s.

    /// The objects `prepared` finds with its variables bound to `values` by position, as `T`.
    /// - Throws: `FetchTemplateError` for a wrong number of values or a mistyped one; what
    ///   `fetch(_:as:)` throws.
    @inlinable
    public func fetch<T: ManagedObject>(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue], as type: T.Type) throws -> FetchResults<T> {
        try fetch(try prepared.request(values), as: type)
    }

    /// The objects `prepared` finds with its variables bound to `values` by position.
    public func fetch(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue]) throws -> FetchResults<ManagedObject> {
        try fetch(try prepared.request(values))
    }

    /// The IDs of the objects `prepared` finds with its variables bound to `values` by position.
    public func fetchObjectIDs(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue]) throws -> [ObjectID] {
        try fetchObjectIDs(try prepared.request(values))
    }

    /// How many objects `prepared` finds with its variables bound to `values` by position.
    public func count(for prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue]) throws -> Int {
        try count(for: try prepared.request(values))
    }
}
