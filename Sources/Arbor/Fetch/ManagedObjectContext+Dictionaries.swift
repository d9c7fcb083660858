import Foundation

extension ManagedObjectContext {
    /// Dictionary results (Core Data's `NSDictionaryResultType`): one dictionary per object with
    /// `propertiesToFetch`, or with `propertiesToGroupBy` one per group (in the order of the
    /// first object of each group under the sort descriptors), aggregates computed over the
    /// group, `havingPredicate` applied to the dictionaries, then offset and limit. Nil values
    /// are left out of the dictionaries; to-one values are `ObjectID`s. Without grouping or
    /// aggregates, and with properties that are attributes, to-one relationships or `SELF`,
    /// each dictionary is read from its row's stored columns as `fetchValues(_:as:)` reads
    /// them (no key path followed); otherwise each key path is followed from the row.
    /// - Throws: as `fetch`; `ObjectPredicateError.unsupported` for a plain property that is not
    ///   grouped by when grouping.
    public func fetchDictionaries(_ request: FetchRequest) throws -> [[String: Any]] {
        guard let info = model?.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        let shaping = try DictionaryFetch(request, info: info)
        if let counted = try countsThroughForeignKey(request, info: info, properties: shaping.properties) { return counted }
        if shaping.readsStoredColumnsOnly(info) { return try columnDictionaries(shaping).dictionaries }
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
        guard !request.hasPredicate, request.havingPredicate == nil, request.propertiesToGroupBy.count == 1,
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

extension DictionaryFetch {
    /// Whether every property is a plain attribute, a to-one relationship or `SELF` of
    /// `info`: then each dictionary is read from its row's stored columns, as values are (no
    /// key path followed, nothing grouped).
    func readsStoredColumnsOnly(_ info: EntityInfo) -> Bool {
        !isGrouping && !isAggregating && properties.allSatisfy { property in
            switch info.propertiesByName[property.keyPath] {
            case .attribute?: return true
            case .relationship(let index)?: return info.relationships[index].kind == .toOne
            default: return property.keyPath == "SELF"
            }
        }
    }
}

extension ManagedObjectContext {
    /// Dictionaries of stored columns (see `DictionaryFetch.readsStoredColumnsOnly`): the
    /// path `fetchValues(_:as:)` takes, with the same values the key-path path gives.
    func columnDictionaries(_ shaping: DictionaryFetch) throws
        -> (dictionaries: [[String: Any]], statistics: [FetchStatistics], fromObjects: Int, inPlace: Bool) {
        let distinct = shaping.request.returnsDistinctResults
        // Distinct results are paged after repeats are dropped; others page in the fetch.
        let request = distinct ? shaping.rowRequest : shaping.request
        var fieldsByEntity: [ObjectIdentifier: [RowValueDecoding.Field?]] = [:]
        var seen: Set<String> = []
        let decoding = try valueDecoding(request)
        let base = try shaping.properties.map { $0.keyPath == "SELF" ? .objectID : try decoding.resolve([$0.keyPath])[0] }
        fieldsByEntity[ObjectIdentifier(decoding.info)] = base
        let slots = RowSlots(decoding.layout(of: base))
        let run = try valueRows(request, decoding, visiting: slots) { decoding, id, source -> [String: Any]? in
            // A subentity's row resolves the names in its own entity.
            let entity = ObjectIdentifier(id.info)
            let fields: [RowValueDecoding.Field?]
            if let resolved = fieldsByEntity[entity] {
                fields = resolved
            } else {
                let resolver = RowValueDecoding(info: id.info, context: self)
                fields = try shaping.properties.map { $0.keyPath == "SELF" ? .objectID : try resolver.resolve([$0.keyPath])[0] }
                fieldsByEntity[entity] = fields
            }
            decoding.load(id: id, from: source)
            // A visited row is read from the slots it was loaded into: asking the decoding would
            // copy its source (a retain and a release) for every value.
            let visited = source.isLoaded
            var dictionary: [String: Any] = Dictionary(minimumCapacity: fields.count)
            var identity: [String] = []
            for (property, field) in zip(shaping.properties, fields) {
                let value: PredicateValue
                switch field {
                case .attribute(let slot)?: value = .scalar(visited ? slots.attribute(slot) : decoding.value(slot: slot))
                case .toOne(let relationship)?: value = .object(decoding.target(relationship))
                case .objectID?: value = .object(id)
                case nil: value = .null
                }
                if distinct { identity.append(value.groupingKey) }
                if let any = value.anyValue { dictionary[property.name] = any }
            }
            if distinct, !seen.insert(identity.joined(separator: "\u{1F}")).inserted { return nil }
            return dictionary
        }
        let dictionaries = run.values.compactMap { $0 }
        return (distinct ? DictionaryFetch.paged(dictionaries, shaping.request) : dictionaries, run.statistics, run.fromObjects, run.inPlace)
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
