@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Value results: rows decoded into structs, without managed objects")
struct FetchValuesTests {
    struct StopRow: Decodable, Equatable {
        var objectID: ObjectID
        var identifier: Int64
        var name: String
        var latitude: Double
        var normalizedName: String?
        var parent: ObjectID?
    }

    struct TimeRow: Decodable, Equatable {
        var departureTime: Date
        var pickupType: Int
        var stop: ObjectID
    }

    /// The same row read by position.
    struct PositionalRow: FetchableValue, Equatable {
        static let fetchedProperties = ["objectID", "identifier", "name", "latitude", "normalizedName", "parent"]
        var objectID: ObjectID?
        var identifier: Int64
        var name: String
        var latitude: Double
        var normalizedName: String?
        var parent: ObjectID?

        init(row: FetchedRowValues) throws {
            objectID = row.objectID(0)
            identifier = try row.value(1)
            name = try row.value(2)
            latitude = try row.value(3)
            normalizedName = try row.optionalValue(4)
            parent = row.objectID(5)
        }

        init(_ row: StopRow) {
            (objectID, identifier, name, latitude, normalizedName, parent) = (row.objectID, row.identifier, row.name, row.latitude, row.normalizedName, row.parent)
        }
    }

    static func row(_ stop: Stop) -> StopRow {
        StopRow(objectID: stop.objectID, identifier: stop.identifier, name: stop.name, latitude: stop.latitude,
                normalizedName: stop.normalizedName, parent: stop.parent?.objectID)
    }

    @Test("against the same fetch's objects, with unsaved changes, on file and in-memory stores and in a child context",
          arguments: [(false, false), (true, false), (false, true)])
    func differential(inMemory: Bool, child: Bool) throws {
        var random = SplitMix64(seed: inMemory ? 7 : child ? 8 : 9)
        let stack = try TestStack(inMemory: inMemory)
        let root = stack.context()
        let context = child ? ManagedObjectContext(concurrencyType: .privateQueue, parent: root) : root
        try context.performAndWait {
            var stops: [Stop] = []
            var nextIdentifier: Int64 = 1_000
            for index in 0..<120 {
                let stop = Stop(context: context)
                stop.identifier = Int64(index)
                stop.stopID = "S\(index)"
                stop.name = ["Alex", "Zoo", "Ost", "Süd"][index % 4] + " \(index)"
                stop.latitude = Double(Int.random(in: 0..<100, using: &random))
                stop.longitude = 13
                stop.normalizedName = index % 3 == 0 ? nil : stop.name.lowercased()
                if index % 5 == 0, let parent = stops.randomElement(using: &random) { stop.parent = parent }
                stops.append(stop)
            }
            try context.save()
            if child { try root.performAndWait { try root.save() } }
            for round in 0..<30 {
                // Unsaved changes: renames, moves, inserts, deletions.
                for _ in 0..<3 {
                    guard let stop = stops.randomElement(using: &random), !stop.isDeleted else { continue }
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: stop.name = "Renamed \(round)"
                    case 1: stop.latitude = Double(Int.random(in: 0..<100, using: &random))
                    case 2: context.delete(stop)
                    default:
                        let new = Stop(context: context)
                        nextIdentifier += 1
                        new.identifier = nextIdentifier
                        new.stopID = "N\(round)-\(Int.random(in: 0..<1_000_000, using: &random))"
                        new.name = "New \(round)"
                        new.latitude = 50
                        new.longitude = 13
                        new.parent = stop
                        stops.append(new)
                    }
                }
                let limit = Int.random(in: 0..<3, using: &random) * 10
                var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude < %@", Double(Int.random(in: 0..<110, using: &random))),
                                           sortDescriptors: [ObjectSortDescriptor("latitude", ascending: false), ObjectSortDescriptor("identifier")])
                request.fetchLimit = limit
                request.includesPendingChanges = round % 7 != 3
                let objects = try context.fetch(request, as: Stop.self)
                let values = try context.fetchValues(request, as: StopRow.self)
                #expect(try context.fetchValues(request, as: PositionalRow.self) == values.map(PositionalRow.init), "round \(round)")
                if request.includesPendingChanges {
                    #expect(values == objects.map(Self.row), "round \(round)")
                } else {
                    #expect(values.map(\.objectID) == objects.map(\.objectID), "round \(round)")
                }
                try Self.checkDictionaries(request, in: context, round: round)
                if round % 10 == 9 { try context.save() }
            }
        }
    }

    /// Dictionary results read from stored columns against the same request answered by the
    /// key-path path (forced by an extra dotted key, dropped before comparing), plain and distinct.
    static func checkDictionaries(_ request: FetchRequest, in context: ManagedObjectContext, round: Int) throws {
        func text(_ dictionaries: [[String: Any]]) -> [String] {
            dictionaries.map { $0.filter { $0.key != "parent.identifier" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";") }
        }
        var columns = request
        columns.resultType = .dictionaries
        columns.propertiesToFetch = [.key("name"), .key("latitude"), .key("normalizedName"), .key("parent"),
                                     FetchProperty(name: "id", keyPath: "SELF", function: nil)]
        var keyPaths = columns
        keyPaths.propertiesToFetch.append(.key("parent.identifier"))
        let info = try #require(context.model?.info(named: request.entityName))
        #expect(try DictionaryFetch(columns, info: info).readsStoredColumnsOnly(info))
        #expect(try !DictionaryFetch(keyPaths, info: info).readsStoredColumnsOnly(info))
        let read = try context.fetchDictionaries(columns)
        #expect(text(read) == text(try context.fetchDictionaries(keyPaths)), "round \(round)")
        #expect(read.count == (try context.fetch(request).count), "round \(round)")
        // Distinct: the key-path path's rows, unpaged, projected, repeats dropped, then paged.
        var unpaged = keyPaths
        (unpaged.fetchOffset, unpaged.fetchLimit) = (0, 0)
        let all = try context.fetchDictionaries(unpaged)
        for distinctKeys in [["latitude"], ["latitude", "parent"]] {
            var distinct = columns
            distinct.returnsDistinctResults = true
            distinct.propertiesToFetch = distinctKeys.map(FetchProperty.key)
            distinct.fetchOffset = round % 3
            var seen: Set<String> = []
            let projected = text(all.map { $0.filter { distinctKeys.contains($0.key) } }).filter { seen.insert($0).inserted }
            let start = min(distinct.fetchOffset, projected.count)
            let end = distinct.fetchLimit > 0 ? min(projected.count, start + distinct.fetchLimit) : projected.count
            #expect(text(try context.fetchDictionaries(distinct)) == Array(projected[start..<end]), "round \(round) \(distinctKeys)")
        }
    }

    @Test("to-one relationships as IDs, dates, narrower integers; a prepared request; errors name the property")
    func typesAndErrors() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let stop = Stop(context: context)
            stop.identifier = 1
            stop.stopID = "S1"
            stop.name = "Alex"
            stop.latitude = 52.5
            stop.longitude = 13.4
            let time = StopTime(context: context)
            time.departureTime = Date(timeIntervalSince1970: 3_600)
            time.arrivalTime = time.departureTime
            time.pickupType = 2
            time.stop = stop
            try context.save()
            let prepared = try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == $stop")))
            let rows = try context.fetchValues(prepared, ["stop": stop], as: TimeRow.self)
            #expect(rows == [TimeRow(departureTime: Date(timeIntervalSince1970: 3_600), pickupType: 2, stop: stop.objectID)])

            struct Missing: Decodable { var height: Double }
            #expect(throws: DecodingError.self) { try context.fetchValues(FetchRequest(entityName: "Stop"), as: Missing.self) }
            struct Mistyped: Decodable { var name: Int }
            #expect(throws: DecodingError.self) { try context.fetchValues(FetchRequest(entityName: "Stop"), as: Mistyped.self) }
            struct Required: Decodable { var normalizedName: String }
            #expect(throws: DecodingError.self) { try context.fetchValues(FetchRequest(entityName: "Stop"), as: Required.self) }
            struct Partial: Decodable, Equatable { var name: String }
            #expect(try context.fetchValues(FetchRequest(entityName: "Stop"), as: Partial.self) == [Partial(name: "Alex")])
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(ObjectID.self, from: Data("\"x\"".utf8)) }
            struct Unknown: FetchableValue {
                static let fetchedProperties = ["height"]
                init(row: FetchedRowValues) throws {}
            }
            #expect(throws: FetchValueError.unknownProperty(entity: "Stop", property: "height")) {
                try context.fetchValues(FetchRequest(entityName: "Stop"), as: Unknown.self)
            }
            struct Wrong: FetchableValue {
                static let fetchedProperties = ["name", "normalizedName"]
                init(row: FetchedRowValues) throws {
                    let _: Int64 = try row.value(0)
                }
            }
            #expect(throws: FetchValueError.typeMismatch(property: "name", expected: "Int64", found: "string")) {
                try context.fetchValues(FetchRequest(entityName: "Stop"), as: Wrong.self)
            }
            struct Nil: FetchableValue {
                static let fetchedProperties = ["normalizedName"]
                init(row: FetchedRowValues) throws {
                    let _: String = try row.value(0)
                }
            }
            #expect(throws: FetchValueError.missingValue(property: "normalizedName")) {
                try context.fetchValues(FetchRequest(entityName: "Stop"), as: Nil.self)
            }
            #expect(context.registeredObjects.count == 2)  // only the two made above: values register nothing
        }
    }

    @Test("explain ends with the value step: values by position or key, dictionaries, rows from changed objects")
    func explainValuePath() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<3 {
                let stop = Stop(context: context)
                stop.identifier = Int64(index)
                stop.stopID = "S\(index)"
                stop.name = "Stop \(index)"
                stop.latitude = 52
                stop.longitude = 13
            }
            try context.save()
            let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier >= 1"))
            let positional = try #require(try context.explainValues(request, as: PositionalRow.self).first)
            #expect(positional.valuePath == "VALUES PositionalRow BY POSITION (objectID, identifier, name, latitude, normalizedName, parent) FROM STORED COLUMNS IN PLACE, NO OBJECTS")
            #expect(positional.rowsMatched == 2)
            #expect(positional.plan == (try context.explain(request).first?.plan))

            struct Named: Decodable { var name: String; var identifier: Int64 }
            let named = try #require(try context.explainValues(request, as: Named.self).first)
            // Read by key: decoded from whole rows (the keys are learned from the first).
            #expect(named.valuePath == "VALUES Named BY KEY (name, identifier) FROM STORED COLUMNS, NO OBJECTS")
            var sorted = request
            sorted.sortDescriptors = [ObjectSortDescriptor("name")]
            // A sort needs the rows kept: not in place.
            #expect(try context.explainValues(sorted, as: PositionalRow.self).first?.valuePath
                == "VALUES PositionalRow BY POSITION (objectID, identifier, name, latitude, normalizedName, parent) FROM STORED COLUMNS, NO OBJECTS")

            // An unsaved change: that row is read from its object.
            let changed = try #require(try context.fetch(request, as: Stop.self).first)
            changed.name = "Renamed"
            #expect(try context.explainValues(request, as: Named.self).first?.valuePath
                == "VALUES Named BY KEY (name, identifier) FROM STORED COLUMNS, NO OBJECTS; 1 row from changed objects")

            var dictionaries = request
            dictionaries.resultType = .dictionaries
            dictionaries.propertiesToFetch = [.key("name"), .key("parent")]
            #expect(try context.explain(dictionaries).first?.valuePath
                == "DICTIONARIES (name, parent) FROM STORED COLUMNS, NO OBJECTS; 1 row from changed objects")
            // Key paths through relationships and objects have no value step.
            dictionaries.propertiesToFetch = [.key("parent.name")]
            #expect(try context.explain(dictionaries).first?.valuePath == nil)
            #expect(try context.explain(request).first?.valuePath == nil)
        }
    }

    /// Dictionaries as the key-path path makes them (each property followed from the row).
    static func keyPathDictionaries(_ request: FetchRequest, in context: ManagedObjectContext) throws -> [[String: Any]] {
        let info = try #require(context.model?.info(named: request.entityName))
        let shaping = try DictionaryFetch(request, info: info)
        let rows = try context.execute(shaping.rowRequest, extraKeyPaths: shaping.extraKeyPaths).entries
        return try shaping.dictionaries(from: rows) { _ in true }
    }

    @Test("dictionaries from stored columns: every attribute type, sub-entities, SELF, unsaved changes")
    func storedColumnDictionaries() throws {
        func text(_ dictionaries: [[String: Any]]) -> [String] {
            dictionaries.map { $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ";") }
        }
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<3 {
                let sample = Sample(context: context)
                sample.int16 = Int16(-index)
                sample.int32 = Int32(index * 1_000)
                sample.int64 = Int64.min + Int64(index)
                sample.double = -0.5 * Double(index)
                sample.float = 3.5
                sample.bool = index % 2 == 0
                sample.string = "Görlitzer \(index) 🚇"
                sample.date = Date(timeIntervalSince1970: 90_600.25 + Double(index))
                sample.data = Data([0, 1, UInt8(index)])
                sample.uuid = UUID()
                sample.url = URL(string: "https://example.org/\(index)?b=c") ?? URL(fileURLWithPath: "/")
                sample.decimal = Decimal(string: "12345.678901234567890\(index)") ?? 0
                sample.payload = index == 1 ? nil : SamplePayload(tags: ["a"], weight: 2.5)
                sample.optionalString = index == 0 ? nil : "x"
                let bus = Bus(context: context)
                bus.name = "M\(index)"
                bus.capacity = Int32(index)
                let tram = Tram(context: context)
                tram.name = "T\(index)"
                tram.length = 40.5
            }
            try context.save()
            // Unsaved: a changed sample, a new tram, a deleted bus.
            let samples = try context.fetch(FetchRequest(entityName: "Sample"), as: Sample.self)
            samples[0].string = "changed"
            Tram(context: context).name = "new"
            if let bus = try context.fetch(FetchRequest(entityName: "Bus"), as: Bus.self).first { context.delete(bus) }

            var request = FetchRequest(entityName: "Sample", sortDescriptors: [ObjectSortDescriptor("int32")])
            request.resultType = .dictionaries
            request.propertiesToFetch = ["int16", "int32", "int64", "double", "float", "bool", "string", "date", "data", "uuid", "url",
                                         "decimal", "payload", "optionalString", "optionalInt", "withDefault"].map(FetchProperty.key)
                + [FetchProperty(name: "id", keyPath: "SELF", function: nil)]
            let info = try #require(context.model?.info(named: "Sample"))
            #expect(try DictionaryFetch(request, info: info).readsStoredColumnsOnly(info))
            #expect(text(try context.fetchDictionaries(request)) == text(try Self.keyPathDictionaries(request, in: context)))

            var vehicles = FetchRequest(entityName: "Vehicle", sortDescriptors: [ObjectSortDescriptor("name")])
            vehicles.resultType = .dictionaries
            vehicles.propertiesToFetch = [.key("name"), FetchProperty(name: "id", keyPath: "SELF", function: nil)]
            let found = try context.fetchDictionaries(vehicles)
            #expect(found.count == 6)
            #expect(text(found) == text(try Self.keyPathDictionaries(vehicles, in: context)))
        }
    }

    /// A value type read from several entities, whose properties the test changes between fetches.
    struct NamedRow: FetchableValue, Equatable {
        nonisolated(unsafe) static var properties = ["name"]
        static var fetchedProperties: [String] { properties }
        var text: String
        init(row: FetchedRowValues) throws { text = try row.value(0) }
    }

    @Test("a value type's fields are resolved once per entity and context: other entities, changed names and errors still resolve")
    func resolvedOncePerEntity() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<3 {
                let stop = Stop(context: context)
                (stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude) = (Int64(index), "S\(index)", "Stop \(index)", 1, 2)
                let bus = Bus(context: context)
                (bus.name, bus.capacity) = ("Bus \(index)", 40)
            }
            try context.save()
            context.reset()
            defer { NamedRow.properties = ["name"] }
            let stops = FetchRequest(entityName: "Stop"), vehicles = FetchRequest(entityName: "Vehicle")
            for _ in 0..<2 {
                // The same type from two entities: each entity's own column.
                #expect(try context.fetchValues(stops, as: NamedRow.self).map(\.text).sorted() == ["Stop 0", "Stop 1", "Stop 2"])
                #expect(try context.fetchValues(vehicles, as: NamedRow.self).map(\.text).sorted() == ["Bus 0", "Bus 1", "Bus 2"])
            }
            #expect(context.resolvedValueFields.count == 2)
            // Other names (a computed `fetchedProperties`) are resolved again.
            NamedRow.properties = ["stopID"]
            #expect(try context.fetchValues(stops, as: NamedRow.self).map(\.text).sorted() == ["S0", "S1", "S2"])
            // A name the entity lacks fails at every fetch, never from a kept resolution.
            NamedRow.properties = ["capacity"]
            for _ in 0..<2 {
                #expect(throws: FetchValueError.unknownProperty(entity: "Stop", property: "capacity")) {
                    try context.fetchValues(stops, as: NamedRow.self)
                }
            }
            // An error names the property the kept resolution read.
            NamedRow.properties = ["latitude"]
            _ = try? context.fetchValues(stops, as: NamedRow.self)
            #expect(throws: FetchValueError.typeMismatch(property: "latitude", expected: "String", found: "double")) {
                try context.fetchValues(stops, as: NamedRow.self)
            }
        }
    }
}
