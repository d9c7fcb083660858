extension ManagedObjectContext {
    /// The rows `request` matches as values of `T`, decoded straight from the stored columns:
    /// no managed object is made and nothing is registered, so a list of thousands costs what
    /// its values cost. Each property of `T` names an attribute of the entity (its type must
    /// match: integer types, `Double`, `Float`, `Bool`, `String`, `Date`, `Data`, `UUID`,
    /// `URL`, `Decimal`, optionals of them, or any `Decodable` stored as a transformable), a
    /// to-one relationship (an `ObjectID?`), or `objectID` (the row's ID):
    /// ```swift
    /// struct StopRow: Decodable { var objectID: ObjectID; var name: String; var latitude: Double }
    /// let rows = try context.fetchValues(request, as: StopRow.self)
    /// ```
    /// Unsaved changes count as in `fetch(_:)` (a changed object gives its current values).
    /// The predicate, sort, offset and limit apply as they do to objects.
    /// - Throws: what `fetch(_:)` throws; `DecodingError` naming the property that the entity
    ///   lacks or whose value does not fit (`keyNotFound`, `typeMismatch`, `valueNotFound` for
    ///   a nil in a non-optional property).
    /// - Complexity: the fetch's search, then O(rows × properties).
    public func fetchValues<T: Decodable>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        try forEachValueRow(request) { decoding, id, source in try decoding.decode(type, id: id, from: source) }
    }

    /// The rows `request` matches as values of `T`, made by position from the properties
    /// `T.fetchedProperties` names, resolved once (see `FetchableValue`): the leanest way to
    /// read rows. Unsaved changes count as in `fetch(_:)`.
    /// - Throws: what `fetch(_:)` throws; `FetchValueError` for a property the entity lacks or a
    ///   value that does not fit; what `T.init(row:)` throws.
    /// - Complexity: the fetch's search, then O(rows × properties).
    public func fetchValues<T: FetchableValue>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        try positionalValues(request, as: type)
    }

    /// A type that is both: read by position, its `FetchableValue` way.
    public func fetchValues<T: FetchableValue & Decodable>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        try positionalValues(request, as: type)
    }

    private func positionalValues<T: FetchableValue>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        try positionalRun(request, as: type).values
    }

    private func positionalRun<T: FetchableValue>(_ request: FetchRequest, as type: T.Type) throws -> ValueRun<T> {
        let decoding = try valueDecoding(request)
        // Resolved before any row is read: a property the entity lacks is an error even when no row matches.
        let resolved = try valueFields(T.self, of: decoding)
        let slots = RowSlots(resolved.layout)
        let reader = PositionalReader(decoding: decoding, fields: resolved.fields, slots: slots)
        return try valueRows(request, decoding, visiting: slots) { decoding, id, source in
            // A visited row is read from the slots, which the decoding already holds.
            if !source.isLoaded { decoding.load(id: id, from: source) }
            return try T(row: FetchedRowValues(reader: reader, id: id, source: source))
        }
    }

    /// The fields of `T.fetchedProperties` in `decoding`'s entity and the stored columns they
    /// read, resolved at the first fetch of `T` from that entity in this context and kept:
    /// resolving hashes every name, and laying out the columns sorts them, about 10,000
    /// instructions that a fetch of a few rows would pay each time.
    /// - Throws: `FetchValueError.unknownProperty` (not kept: thrown at every fetch).
    /// - Complexity: O(1) once resolved; O(properties) hashing the first time.
    private func valueFields<T: FetchableValue>(_ type: T.Type, of decoding: RowValueDecoding) throws -> ResolvedValueFields {
        let names = T.fetchedProperties
        let key = ResolvedValueFields.Key(type: ObjectIdentifier(type), entity: ObjectIdentifier(decoding.info))
        // The entity is kept in the entry, so its identifier names no other entity; the names
        // are compared (one identity test for a `static let`) in case they are computed.
        if let resolved = resolvedValueFields[key], resolved.info === decoding.info, resolved.names == names {
            decoding.use(names: names)
            return resolved
        }
        let fields = try decoding.resolve(names)
        let resolved = ResolvedValueFields(info: decoding.info, names: names, fields: fields, layout: decoding.layout(of: fields))
        resolvedValueFields[key] = resolved
        return resolved
    }

    /// Runs `request` for rows and makes a value of each with `make`, from its stored columns,
    /// or from its object's current values when the context changed it.
    func forEachValueRow<T>(_ request: FetchRequest,
                            _ make: (RowValueDecoding, ObjectID, RowValueDecoding.Source) throws -> T) throws -> [T] {
        try valueRows(request, try valueDecoding(request), visiting: nil, make).values
    }

    /// The decoding of `request`'s rows.
    /// - Throws: `ContextError.noPersistentStore`, `.unknownEntity`.
    func valueDecoding(_ request: FetchRequest) throws -> RowValueDecoding {
        guard let model else { throw ContextError.noPersistentStore }
        guard let info = model.info(named: request.entityName) else { throw ContextError.unknownEntity(request.entityName) }
        return RowValueDecoding(info: info, context: self)
    }

    /// `forEachValueRow` with what `explain` reports (see `ValueRun`). With slots for the stored
    /// columns `make` reads (`visiting`), and no unsaved change or sort in the way, each row is
    /// visited where it lies in its page and only those columns are decoded into them
    /// (`ContextFetch.visitStoredRows`).
    func valueRows<T>(_ request: FetchRequest, _ decoding: RowValueDecoding, visiting loaded: RowSlots?,
                      _ make: (RowValueDecoding, ObjectID, RowValueDecoding.Source) throws -> T) throws -> ValueRun<T> {
        var rowsRequest = request
        rowsRequest.resultType = .managedObjects
        rowsRequest.includesPropertyValues = true
        let values = ValueList<T>()  // not [T]: see ValueList
        if let loaded {
            // Every row of a store is loaded into the same slots: the decoding takes them with
            // the store's references once per store, and each row is made from them (`.loaded`).
            var sourceStore: PersistentStore?
            let visited = try ContextFetch.visitStoredRows(of: rowsRequest, in: self, loading: loaded) { id, store in
                if sourceStore !== store {
                    decoding.load(id: id, from: .slots(loaded, store.references))
                    sourceStore = store
                }
                values.append(try make(decoding, id, .loaded))
            }
            if let visited {
                return ValueRun(values: values.takeArray(), statistics: visited, decoding: decoding, fromObjects: 0, inPlace: true)
            }
        }
        let (entries, statistics) = try execute(rowsRequest)
        values.reserveCapacity(entries.count)
        var lastStore: PersistentStore?
        var fromObjects = 0
        for entry in entries {
            if let row = entry.row {
                if lastStore?.identifier != entry.id.storeIdentifier { lastStore = try? store(for: entry.id) }
                values.append(try make(decoding, entry.id, .columns(row.columns, lastStore?.references)))
            } else {
                // A changed or inserted object (or a row the search did not read): its current values.
                let object = registeredObject(for: entry.id) ?? self.object(with: entry.id)
                fulfillQuietly(object)
                fromObjects += 1
                values.append(try make(decoding, entry.id, .object(object)))
            }
        }
        return ValueRun(values: values.takeArray(), statistics: statistics, decoding: decoding, fromObjects: fromObjects, inPlace: false)
    }

    /// The plan of each store's part of `request` as `fetchValues(_:as:)` runs it for `T`,
    /// ending with the value step (`FetchStatistics.valuePath`: `VALUES T BY POSITION (…) FROM
    /// STORED COLUMNS, NO OBJECTS`). The fetch runs, as `explain` runs it.
    /// - Throws: what `fetchValues(_:as:)` throws.
    public func explainValues<T: FetchableValue>(_ request: FetchRequest, as type: T.Type) throws -> [FetchStatistics] {
        try explainPositional(request, as: type)
    }

    private func explainPositional<T: FetchableValue>(_ request: FetchRequest, as type: T.Type) throws -> [FetchStatistics] {
        let run = try positionalRun(request, as: type)
        return Self.withValuePath(run.statistics, "VALUES \(T.self) BY POSITION", T.fetchedProperties, fromObjects: run.fromObjects, inPlace: run.inPlace)
    }

    /// `explainValues` for a `Decodable` type: the keys are those its decoding asked for.
    public func explainValues<T: Decodable>(_ request: FetchRequest, as type: T.Type) throws -> [FetchStatistics] {
        let run = try valueRows(request, try valueDecoding(request), visiting: nil) { decoding, id, source in
            try decoding.decode(type, id: id, from: source)
        }
        let keys = run.decoding.recordedKeys
        return Self.withValuePath(run.statistics, "VALUES \(T.self) BY KEY", keys.isEmpty ? ["no row decoded"] : keys, fromObjects: run.fromObjects,
                                  inPlace: run.inPlace)
    }

    /// A type that is both: read by position, its `FetchableValue` way.
    public func explainValues<T: FetchableValue & Decodable>(_ request: FetchRequest, as type: T.Type) throws -> [FetchStatistics] {
        try explainPositional(request, as: type)
    }

    /// `statistics` with the value step: `what (properties) FROM STORED COLUMNS[ IN PLACE], NO
    /// OBJECTS` (in place: decoded where the rows lie in their pages, no row kept).
    static func withValuePath(_ statistics: [FetchStatistics], _ what: String, _ properties: [String], fromObjects: Int,
                              inPlace: Bool) -> [FetchStatistics] {
        let unsaved = fromObjects == 0 ? "" : "; \(fromObjects) row\(fromObjects == 1 ? "" : "s") from changed objects"
        let path = "\(what) (\(properties.joined(separator: ", "))) FROM STORED COLUMNS\(inPlace ? " IN PLACE" : ""), NO OBJECTS" + unsaved
        return statistics.map { var statistics = $0; statistics.valuePath = path; return statistics }
    }

    /// The values `prepared` finds with its variables bound to `values`, as `T` (see
    /// `fetchValues(_:as:)`).
    public func fetchValues<T: Decodable>(_ prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:],
                                          as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }

    /// The values `prepared` finds with its variables bound to `values`, as `T` (see
    /// `fetchValues(_:as:)`).
    public func fetchValues<T: FetchableValue>(_ prepared: PreparedFetchRequest, _ values: [String: any FetchTemplateValue] = [:],
                                               as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }

    /// A type that is both: read by position, its `FetchableValue` way.
    public func fetchValues<T: FetchableValue & Decodable>(_ prepared: PreparedFetchRequest,
                                                           _ values: [String: any FetchTemplateValue] = [:], as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }

    /// The values `prepared` finds with its variables bound to `values` by position
    /// (`PreparedFetchRequest.variableOrder`), as `T`.
    public func fetchValues<T: Decodable>(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue], as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }

    /// The values `prepared` finds with its variables bound to `values` by position, as `T`.
    public func fetchValues<T: FetchableValue>(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue], as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }

    /// A type that is both, with values bound by position: read its `FetchableValue` way.
    public func fetchValues<T: FetchableValue & Decodable>(_ prepared: PreparedFetchRequest, _ values: [any FetchTemplateValue],
                                                           as type: T.Type) throws -> [T] {
        try fetchValues(try prepared.request(values), as: type)
    }
}

/// What a value fetch read: the values, each store's statistics, the decoding (the keys it was
/// asked for), how many rows came from changed objects and whether rows were read in place.
struct ValueRun<T> {
    var values: [T]
    var statistics: [FetchStatistics]
    let decoding: RowValueDecoding
    var fromObjects: Int
    /// Whether the rows were visited in place (`ContextFetch.visitStoredRows`).
    var inPlace: Bool
}

/// What a `FetchableValue` type reads of one entity (see `ManagedObjectContext.valueFields`).
struct ResolvedValueFields {
    struct Key: Hashable {
        let type: ObjectIdentifier
        let entity: ObjectIdentifier
    }
    /// Kept so that the key's entity identifier stays unique while the entry exists.
    let info: EntityInfo
    let names: [String]
    let fields: [RowValueDecoding.Field?]
    let layout: RowSlotLayout
}
