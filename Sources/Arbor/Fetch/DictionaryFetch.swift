/// The shaping of a dictionary fetch (Core Data's `NSDictionaryResultType`): which values to
/// read with the rows, and how fetched rows become dictionaries — one per row, or one per
/// group with aggregates, filtered by the having predicate, made distinct, then paged.
///
/// It reads nothing itself: the context fetches the rows with `extraKeyPaths` and hands them in.
struct DictionaryFetch {
    let request: FetchRequest
    /// The dictionary's properties: `propertiesToFetch`, or every attribute (the grouped
    /// properties when grouping) when none are given.
    let properties: [FetchProperty]
    let isGrouping: Bool
    let isAggregating: Bool
    /// The key paths the rows must carry besides the sort keys (group keys, then values).
    let extraKeyPaths: [String]

    /// - Throws: `ObjectPredicateError.unsupported` for a plain property that is not grouped by
    ///   when grouping.
    init(_ request: FetchRequest, info: EntityInfo) throws {
        self.request = request
        var properties = request.propertiesToFetch
        if properties.isEmpty {
            properties = (request.propertiesToGroupBy.isEmpty ? info.attributes.map(\.description.name) : request.propertiesToGroupBy)
                .map(FetchProperty.key)
        }
        self.properties = properties
        isGrouping = !request.propertiesToGroupBy.isEmpty
        isAggregating = properties.contains { $0.function != nil }
        if isGrouping {
            for property in properties where property.function == nil && !request.propertiesToGroupBy.contains(property.keyPath) {
                throw ObjectPredicateError.unsupported("\(property.keyPath) must be in propertiesToGroupBy or be an aggregate")
            }
        }
        extraKeyPaths = request.propertiesToGroupBy + properties.filter { $0.keyPath != "SELF" }.map(\.keyPath)
    }

    /// The request the rows are fetched with: every match, paging applied to the dictionaries.
    var rowRequest: FetchRequest {
        var unpaged = request
        unpaged.fetchOffset = 0
        unpaged.fetchLimit = 0
        return unpaged
    }

    /// The result dictionaries of `rows` (fetched with `rowRequest` and `extraKeyPaths`), with
    /// `having` deciding which groups stay. Nil values are left out.
    /// - Complexity: O(rows × properties).
    func dictionaries(from rows: [FetchedRow], having: (DictionarySubject) throws -> Bool) throws -> [[String: Any]] {
        var dictionaries: [[String: Any]]
        if isGrouping || isAggregating {
            dictionaries = try groupDictionaries(rows, having: having)
            if request.returnsDistinctResults {
                var seen: Set<String> = []
                dictionaries = dictionaries.filter { seen.insert($0.keys.sorted().map { "\($0)=\(String(describing: $0))" }.joined()).inserted }
            }
        } else {
            dictionaries = rowDictionaries(rows)
        }
        return Self.paged(dictionaries, request)
    }

    /// `request`'s page (offset, then limit) of `results`.
    static func paged<T>(_ results: [T], _ request: FetchRequest) -> [T] {
        let start = min(max(request.fetchOffset, 0), results.count)
        var end = results.count
        if request.fetchLimit > 0 { end = min(end, start + request.fetchLimit) }
        return Array(results[start..<end])
    }

    // MARK: Shaping

    private func value(_ row: FetchedRow, _ keyPath: String) -> PredicateValue {
        if keyPath == "SELF" { return .object(row.id) }
        guard let position = extraKeyPaths.firstIndex(of: keyPath) else { return .null }
        return row.values[request.sortDescriptors.count + position]
    }

    /// One dictionary per row, repeats dropped when the results are distinct.
    private func rowDictionaries(_ rows: [FetchedRow]) -> [[String: Any]] {
        var seen: Set<String> = []
        var dictionaries: [[String: Any]] = []
        for row in rows {
            var dictionary: [String: Any] = [:]
            var identity: [String] = []
            for property in properties {
                let result = value(row, property.keyPath)
                identity.append(result.groupingKey)
                if let any = result.anyValue { dictionary[property.name] = any }
            }
            if request.returnsDistinctResults, !seen.insert(identity.joined(separator: "\u{1F}")).inserted { continue }
            dictionaries.append(dictionary)
        }
        return dictionaries
    }

    /// One dictionary per group, in the order each group's first row came (one group of every
    /// row when aggregating without grouping).
    private func groupDictionaries(_ rows: [FetchedRow], having: (DictionarySubject) throws -> Bool) throws -> [[String: Any]] {
        var order: [String] = []
        var groups: [String: [FetchedRow]] = [:]
        for row in rows {
            let key = isGrouping ? request.propertiesToGroupBy.map { value(row, $0).groupingKey }.joined(separator: "\u{1F}") : ""
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(row)
        }
        if order.isEmpty && !isGrouping { order = [""] }
        let havingEntity = request.havingPredicate == nil ? nil : DictionarySubject.entity(names: properties.map(\.name))
        var dictionaries: [[String: Any]] = []
        for key in order {
            let members = groups[key] ?? []
            let values = properties.map { property in
                guard let function = property.function else { return members.first.map { value($0, property.keyPath) } ?? .null }
                return Self.aggregate(function, members.map { value($0, property.keyPath) })
            }
            if let havingEntity, try !having(DictionarySubject(entity: havingEntity, values: values)) { continue }
            var dictionary: [String: Any] = [:]
            for (property, result) in zip(properties, values) {
                if let any = result.anyValue { dictionary[property.name] = any }
            }
            dictionaries.append(dictionary)
        }
        return dictionaries
    }

    /// `function` over a group's values; `@count` counts the non-nil ones.
    private static func aggregate(_ function: AggregateFunction, _ values: [PredicateValue]) -> PredicateValue {
        if function == .count { return .scalar(.int(Int64(values.filter { !$0.isNull }.count))) }
        let scalars = values.compactMap { value -> AttributeValue? in
            if case .scalar(let scalar) = value, !scalar.isNull { return scalar }
            return nil
        }
        return .scalar(PredicateEvaluator.aggregate(function, scalars))
    }
}

extension PredicateValue {
    var isNull: Bool {
        switch self {
        case .scalar(let scalar): return scalar.isNull
        case .object(let id): return id == nil
        case .many: return false
        }
    }

    /// The value as a dictionary result holds it (nil for nil).
    var anyValue: Any? {
        switch self {
        case .scalar(let scalar): return scalar.anyValue
        case .object(let id): return id
        case .many(let items): return items.compactMap(\.anyValue)
        }
    }

    /// A string that is equal for equal values (groups, distinct results).
    var groupingKey: String {
        switch self {
        case .scalar(let scalar): return "v:" + scalar.description
        case .object(let id): return "o:" + (id?.description ?? "nil")
        case .many(let items): return "[" + items.map(\.groupingKey).joined(separator: ",") + "]"
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
