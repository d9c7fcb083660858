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
        var properties = request.propertiesToFetch
        if properties.isEmpty {
            properties = (request.propertiesToGroupBy.isEmpty ? info.attributes.map(\.description.name) : request.propertiesToGroupBy)
                .map(FetchProperty.key)
        }
        let grouping = !request.propertiesToGroupBy.isEmpty
        let aggregating = properties.contains { $0.function != nil }
        if grouping {
            for property in properties where property.function == nil && !request.propertiesToGroupBy.contains(property.keyPath) {
                throw ObjectPredicateError.unsupported("\(property.keyPath) must be in propertiesToGroupBy or be an aggregate")
            }
        }
        if let counted = try countsThroughForeignKey(request, info: info, properties: properties) { return counted }
        let valuePaths = properties.filter { $0.keyPath != "SELF" }.map(\.keyPath)
        let extra = request.propertiesToGroupBy + valuePaths
        var unpaged = request
        unpaged.fetchOffset = 0
        unpaged.fetchLimit = 0
        let entries = try execute(unpaged, extraKeyPaths: extra).entries
        let base = request.sortDescriptors.count
        func value(_ entry: FetchedRow, _ keyPath: String) -> PredicateValue {
            if keyPath == "SELF" { return .object(entry.id) }
            guard let position = extra.firstIndex(of: keyPath) else { return .null }
            return entry.values[base + position]
        }

        var dictionaries: [[String: Any]] = []
        var keys: [[PredicateValue]] = []
        if grouping || aggregating {
            // Groups in first-seen order.
            var order: [String] = []
            var groups: [String: [FetchedRow]] = [:]
            for entry in entries {
                let key = grouping ? request.propertiesToGroupBy.map { Self.groupKey(value(entry, $0)) }.joined(separator: "\u{1F}") : ""
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append(entry)
            }
            if order.isEmpty && !grouping { order = [""] }
            for key in order {
                let members = groups[key] ?? []
                var dictionary: [String: Any] = [:]
                var row: [PredicateValue] = []
                for property in properties {
                    let result: PredicateValue
                    if let function = property.function {
                        let values = members.map { value($0, property.keyPath) }
                        if function == .count {
                            result = .scalar(.int(Int64(values.filter { !Self.isNull($0) }.count)))
                        } else {
                            let scalars = values.compactMap { value -> AttributeValue? in
                                if case .scalar(let scalar) = value, !scalar.isNull { return scalar }
                                return nil
                            }
                            result = .scalar(PredicateEvaluator.aggregate(function, scalars))
                        }
                    } else {
                        result = members.first.map { value($0, property.keyPath) } ?? .null
                    }
                    row.append(result)
                    if let any = Self.anyValue(result) { dictionary[property.name] = any }
                }
                dictionaries.append(dictionary)
                keys.append(row)
            }
            if let having = request.havingPredicate {
                let subject = DictionarySubject.entity(names: properties.map(\.name))
                var evaluator = PredicateEvaluator(resolver: ContextResolver(context: self))
                var kept: [[String: Any]] = []
                for (dictionary, row) in zip(dictionaries, keys) {
                    if try evaluator.evaluate(having, DictionarySubject(entity: subject, values: row)) { kept.append(dictionary) }
                }
                dictionaries = kept
            }
        } else {
            var seen: Set<String> = []
            for entry in entries {
                var dictionary: [String: Any] = [:]
                var identity: [String] = []
                for property in properties {
                    let result = value(entry, property.keyPath)
                    identity.append(Self.groupKey(result))
                    if let any = Self.anyValue(result) { dictionary[property.name] = any }
                }
                if request.returnsDistinctResults, !seen.insert(identity.joined(separator: "\u{1F}")).inserted { continue }
                dictionaries.append(dictionary)
            }
        }
        if request.returnsDistinctResults && (grouping || aggregating) {
            var seen: Set<String> = []
            dictionaries = dictionaries.filter { seen.insert($0.keys.sorted().map { "\($0)=\(String(describing: $0))" }.joined()).inserted }
        }
        let start = min(max(request.fetchOffset, 0), dictionaries.count)
        var end = dictionaries.count
        if request.fetchLimit > 0 { end = min(end, start + request.fetchLimit) }
        return Array(dictionaries[start..<end])
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
        let start = min(max(request.fetchOffset, 0), dictionaries.count)
        var end = dictionaries.count
        if request.fetchLimit > 0 { end = min(end, start + request.fetchLimit) }
        return Array(dictionaries[start..<end])
    }

    static func isNull(_ value: PredicateValue) -> Bool {
        switch value {
        case .scalar(let scalar): return scalar.isNull
        case .object(let id): return id == nil
        case .many: return false
        }
    }

    static func anyValue(_ value: PredicateValue) -> Any? {
        switch value {
        case .scalar(let scalar): return scalar.anyValue
        case .object(let id): return id
        case .many(let items): return items.compactMap(anyValue)
        }
    }

    /// A string that is equal for equal values (groups, distinct results).
    static func groupKey(_ value: PredicateValue) -> String {
        switch value {
        case .scalar(let scalar): return "v:" + scalar.description
        case .object(let id): return "o:" + (id?.description ?? "nil")
        case .many(let items): return "[" + items.map(groupKey).joined(separator: ",") + "]"
        }
    }
}

/// A result dictionary seen by a having predicate: its keys are attributes.
struct DictionarySubject: PredicateSubject {
    let entity: EntityInfo
    let values: [PredicateValue]

    var subjectID: ObjectID { ObjectID(info: entity, store: nil, key: 0) }

    static func entity(names: [String]) -> EntityInfo {
        let attributes = names.enumerated().map { EntityInfo.Attribute(description: AttributeDescription($0.element, .double), slot: $0.offset) }
        return EntityInfo(name: "Result", code: 0,
                          schema: EntitySchema(name: "Result", superentity: nil, isAbstract: false, attributes: [], relationships: [],
                                               indexes: [], renamingIdentifier: nil),
                          managedObjectClass: ManagedObject.self, rootName: "Result", rootCode: 0, descendantCodes: [0],
                          attributes: attributes, relationships: [], columnCount: names.count, toManyCount: 0, indexes: [])
    }

    func attributeValue(slot: Int) throws -> AttributeValue {
        guard slot < values.count, case .scalar(let value) = values[slot] else { return .null }
        return value
    }
    func toOneTarget(_ relationship: EntityInfo.Relationship) throws -> ObjectID? { nil }
    func toManyMembers(_ relationship: EntityInfo.Relationship) throws -> [ObjectID] { [] }
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
