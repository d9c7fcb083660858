import Foundation

extension ManagedObjectContext {
    /// Dictionary results (Core Data's `NSDictionaryResultType`): one dictionary per object with
    /// `propertiesToFetch`, or with `propertiesToGroupBy` one per group (in the order of the
    /// first object of each group under the sort descriptors), aggregates computed over the
    /// group, `havingPredicate` applied to the dictionaries, then offset and limit. Nil values
    /// are left out of the dictionaries; to-one values are `ObjectID`s.
    /// - Throws: as `fetch`; `ObjectPredicateError.unsupported` for a plain property that is not
    ///   grouped by when grouping.
    public func fetchDictionaries(_ request: FetchRequest) throws -> [[String: Any]] {
        guard let info = model?.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        let shaping = try DictionaryFetch(request, info: info)
        if let counted = try countsThroughForeignKey(request, info: info, properties: shaping.properties) { return counted }
        let rows = try execute(shaping.rowRequest, extraKeyPaths: shaping.extraKeyPaths).entries
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: self))
        return try shaping.dictionaries(from: rows) { group in
            guard let having = request.havingPredicate else { return true }
            return try evaluator.evaluate(having, group)
        }
    }

    /// Objects per to-one target (`propertiesToGroupBy = ["stop"]` with counts) answered from
    /// the foreign-key index alone, without reading a row: when there is no predicate, no
    /// having, no sort other than by the group key, and no unsaved change.
    private func countsThroughForeignKey(_ request: FetchRequest, info: EntityInfo, properties: [FetchProperty]) throws -> [[String: Any]]? {
        guard request.predicate == nil, request.havingPredicate == nil, request.propertiesToGroupBy.count == 1,
              request.sortDescriptors.isEmpty, !hasVisiblePendingChanges, request.includesSubentities,
              let relationship = info.relationship(named: request.propertiesToGroupBy[0]), relationship.kind == .toOne,
              properties.allSatisfy({ ($0.function == nil && $0.keyPath == relationship.description.name)
                  || ($0.function == .count && ($0.keyPath == "SELF" || $0.keyPath == relationship.description.name)) }),
              let coordinator = persistentStoreCoordinator, let model,
              let destination = model.info(named: relationship.destinationName)
        else { return nil }
        var dictionaries: [[String: Any]] = []
        for store in searchedStores(request, info, coordinator) {
            for (owner, count) in try store.storage.countsByOwner(relationship, of: info) {
                var dictionary: [String: Any] = [:]
                for property in properties {
                    dictionary[property.name] = property.function == nil
                        ? ObjectID(info: destination, store: store.identifier, key: owner) as Any : Int64(count) as Any
                }
                dictionaries.append(dictionary)
            }
        }
        return DictionaryFetch.paged(dictionaries, request)
    }
}

/// What `executeFetch` returns, by the request's `resultType`.
public enum FetchResultValue {
    case managedObjects([ManagedObject])
    case objectIDs([ObjectID])
    case count(Int)
    case dictionaries([[String: Any]])
}

extension ManagedObjectContext {
    /// Runs `request` and returns the kind of result its `resultType` asks for.
    public func executeFetch(_ request: FetchRequest) throws -> FetchResultValue {
        switch request.resultType {
        case .managedObjects: return .managedObjects(try fetchObjects(request))
        case .objectIDs: return .objectIDs(try fetchObjectIDs(request))
        case .count: return .count(try count(for: request))
        case .dictionaries: return .dictionaries(try fetchDictionaries(request))
        }
    }
}
