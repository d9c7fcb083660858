@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Value and dictionary fetches without unsaved changes or a sort visit each row where it lies
/// in its page and decode only the columns they read (`StoreStorage.visitMatches`); the row
/// path (rows kept, then read) is their reference.
@Suite("Values read in place: the same answers as the row path, every access path")
struct ValuesInPlaceTests {
    typealias PositionalRow = FetchValuesTests.PositionalRow

    struct TimeRow: FetchableValue, Equatable {
        static let fetchedProperties = ["departureTime", "stop", "pickupType"]
        var departureTime: Date, stop: ObjectID?, pickupType: Int16
        init(row: FetchedRowValues) throws {
            departureTime = try row.value(0)
            stop = row.objectID(1)
            pickupType = try row.value(2)
        }
        init(_ time: StopTime) { (departureTime, stop, pickupType) = (time.departureTime, time.stop?.objectID, time.pickupType) }
    }

    struct VehicleRow: FetchableValue, Equatable {
        static let fetchedProperties = ["objectID", "name"]
        var objectID: ObjectID?, name: String
        init(row: FetchedRowValues) throws { (objectID, name) = (row.objectID(0), try row.value(1)) }
        init(_ vehicle: Vehicle) { (objectID, name) = (vehicle.objectID, vehicle.name) }
    }

    /// Stops, their stop times and vehicles in `context`, saved; returns the stops.
    @discardableResult
    static func fill(_ context: ManagedObjectContext, seed: UInt64, count: Int, identifiers: Range<Int>) throws -> [Stop] {
        var random = SplitMix64(seed: seed)
        var stops: [Stop] = []
        for index in identifiers.prefix(count) {
            let stop = Stop(context: context)
            stop.identifier = Int64(index)
            stop.stopID = "S\(index)"
            stop.name = ["Alex", "Zoo", "Ost", "Süd", "alt"][index % 5] + " \(index)"
            stop.latitude = Double(Int.random(in: 0..<100, using: &random))
            stop.longitude = Double(Int.random(in: 0..<20, using: &random))
            stop.normalizedName = index % 3 == 0 ? nil : stop.name.lowercased()
            if index % 4 == 0, let parent = stops.randomElement(using: &random) { stop.parent = parent }
            for minute in 0..<Int.random(in: 0..<3, using: &random) {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(Int.random(in: 0..<100, using: &random) * 60 + minute))
                time.arrivalTime = time.departureTime
                time.pickupType = Int16(minute)
                time.stop = stop
            }
            stops.append(stop)
        }
        for index in identifiers.prefix(count / 10) {
            if index % 2 == 0 {
                let bus = Bus(context: context)
                (bus.name, bus.capacity) = ("V\(index)", 40)
            } else {
                let tram = Tram(context: context)
                (tram.name, tram.length) = ("V\(index)", 30)
            }
        }
        try context.save()
        return stops
    }

    /// A predicate for each access path the planner has, with random constants.
    static func stopPredicate(_ random: inout SplitMix64, ids: [ObjectID]) throws -> ObjectPredicate? {
        let latitude = Double(Int.random(in: 0..<110, using: &random))
        let longitude = Double(Int.random(in: 0..<20, using: &random))
        let some = (0..<5).map { _ in Int64(Int.random(in: 0..<130, using: &random)) }
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return nil
        case 1: return try ObjectPredicate(format: "latitude < %@", latitude)
        case 2: return try ObjectPredicate(format: "longitude BETWEEN {%@, %@} AND latitude BETWEEN {%@, %@}", longitude, longitude + 5, latitude - 40, latitude)
        case 3: return try ObjectPredicate(format: "name BEGINSWITH[cd] %@", ["a", "zo", "su", "o"][Int.random(in: 0..<4, using: &random)])
        case 4: return try ObjectPredicate(format: "identifier IN %@", some)
        case 5: return try ObjectPredicate(format: "SELF IN %@", Array(ids.shuffled(using: &random).prefix(7)))
        case 6: return try ObjectPredicate(format: "parent.stopID IN %@", some.map { "S\($0)" })
        case 7: return try ObjectPredicate(format: "SUBQUERY(stopTimes, $x, $x.departureTime > %@).@count != 0", Date(timeIntervalSince1970: latitude * 60))
        case 8: return try ObjectPredicate(format: "name BEGINSWITH[cd] 'a' OR identifier IN %@", some)
        default: return try ObjectPredicate(format: "longitude BETWEEN {%@, %@} AND normalizedName != nil", longitude, longitude + 8)
        }
    }

    /// `request`'s values read in place, against the objects the row path fetches in the same
    /// order; the plan says the rows were read in place.
    static func check<T: FetchableValue & Equatable, O: ManagedObject>(_ request: FetchRequest, _ type: T.Type, objects: O.Type,
                                                                       in context: ManagedObjectContext, _ made: (O) -> T,
                                                                       _ note: String) throws {
        let values = try context.fetchValues(request, as: type)
        let expected = try context.fetch(request, as: objects).map(made)
        #expect(values == expected, "\(note)")
        context.reset()
        let explained = try context.explainValues(request, as: type)
        #expect(explained.allSatisfy { $0.valuePath?.contains("FROM STORED COLUMNS IN PLACE, NO OBJECTS") == true }, "\(note)")
        #expect(explained.map(\.rowsMatched).reduce(0, +) >= values.count, "\(note)")
    }

    @Test("stops, stop times and an abstract entity's rows: every access path, offsets and limits, file and in-memory stores",
          arguments: [false, true])
    func differential(inMemory: Bool) throws {
        let stack = try TestStack(inMemory: inMemory)
        let context = stack.context()
        try context.performAndWait {
            let stops = try Self.fill(context, seed: inMemory ? 3 : 4, count: 130, identifiers: 0..<130)
            let ids = stops.map(\.objectID)
            context.reset()
            var random = SplitMix64(seed: 11)
            for round in 0..<80 {
                var request = FetchRequest(entityName: "Stop", predicate: try Self.stopPredicate(&random, ids: ids))
                request.fetchOffset = [0, 0, 1, 5][Int.random(in: 0..<4, using: &random)]
                request.fetchLimit = [0, 0, 1, 10][Int.random(in: 0..<4, using: &random)]
                let note = "round \(round): \(request.predicate.map(PredicateFormatter.summary) ?? "all") offset \(request.fetchOffset) limit \(request.fetchLimit)"
                try Self.check(request, PositionalRow.self, objects: Stop.self, in: context, {
                    PositionalRow(FetchValuesTests.row($0))
                }, note)
                try FetchValuesTests.checkDictionaries(request, in: context, round: round)
                context.reset()
            }
            for (entity, subentities) in [("Vehicle", true), ("Vehicle", false), ("Bus", true)] {
                var request = FetchRequest(entityName: entity, predicate: try ObjectPredicate(format: "name != 'V4'"))
                request.includesSubentities = subentities
                try Self.check(request, VehicleRow.self, objects: Vehicle.self, in: context, VehicleRow.init, "\(entity) \(subentities)")
                context.reset()
            }
            for round in 0..<20 {
                let stop = ids[Int.random(in: 0..<ids.count, using: &random)]
                let predicates = [try ObjectPredicate(format: "stop == %@", stop),
                                  try ObjectPredicate(format: "stop == %@ AND departureTime > %@", stop, Date(timeIntervalSince1970: 3000)),
                                  try ObjectPredicate(format: "stop.identifier IN %@", [1, 2, 3, Int64(round)]),
                                  try ObjectPredicate(format: "pickupType == 1")]
                var request = FetchRequest(entityName: "StopTime", predicate: predicates[round % predicates.count])
                request.fetchLimit = round % 3
                try Self.check(request, TimeRow.self, objects: StopTime.self, in: context, TimeRow.init, "stop times round \(round)")
                context.reset()
            }
        }
    }

    @Test("two stores: each visited in turn, the offset and limit counted across them")
    func twoStores() throws {
        let directory = TemporaryDirectory("arbor-in-place")
        defer { directory.remove() }
        let model = try Fixtures.fullModel()
        for (file, seed) in [("a.arbor", UInt64(1)), ("b.arbor", 2)] {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            _ = try coordinator.addPersistentStore(at: directory.file(file))
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            _ = try context.performAndWait { try Self.fill(context, seed: seed, count: 30, identifiers: Int(seed) * 100..<Int(seed) * 100 + 30) }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(at: directory.file("a.arbor"))
        _ = try coordinator.addPersistentStore(at: directory.file("b.arbor"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for (offset, limit) in [(0, 0), (0, 5), (25, 10), (29, 1), (30, 3), (45, 0), (70, 5)] {
                var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude < 90"))
                (request.fetchOffset, request.fetchLimit) = (offset, limit)
                try Self.check(request, PositionalRow.self, objects: Stop.self, in: context, {
                    PositionalRow(FetchValuesTests.row($0))
                }, "offset \(offset) limit \(limit)")
                context.reset()
            }
        }
    }

    /// Every attribute of a `Sample`, by position; the rows it was made from are kept (by the
    /// test that reads them after their fetch).
    struct SampleRow: FetchableValue, Equatable {
        static let fetchedProperties = ["int16", "int32", "int64", "double", "float", "bool", "string", "date", "data", "uuid", "url",
                                        "decimal", "optionalString", "optionalInt", "objectID"]
        nonisolated(unsafe) static var kept: [FetchedRowValues] = []
        var int16: Int16, int32: Int32, int64: Int64, double: Double, float: Float, bool: Bool, string: String, date: Date
        var data: Data, uuid: UUID, url: URL, decimal: Decimal, optionalString: String?, optionalInt: Int64?, id: ObjectID?
        init(row: FetchedRowValues) throws {
            // The row before this one is no longer held.
            if let previous = Self.kept.last, previous.objectID != row.objectID {
                #expect(throws: FetchValueError.rowNotCurrent(property: "int16")) { _ = try previous.value(0) as Int16 }
            }
            Self.kept.append(row)
            (int16, int32, int64, double, float) = (try row.value(0), try row.value(1), try row.value(2), try row.value(3), try row.value(4))
            (bool, string, date, data, uuid) = (try row.value(5), try row.value(6), try row.value(7), try row.value(8), try row.value(9))
            (url, decimal, optionalString, optionalInt, id) = (try row.value(10), try row.value(11), try row.optionalValue(12),
                                                               try row.optionalValue(13), row.objectID(14))
        }
        init(_ sample: Sample) {
            (int16, int32, int64, double, float, bool) = (sample.int16, sample.int32, sample.int64, sample.double, sample.float, sample.bool)
            (string, date, data, uuid, url) = (sample.string, sample.date, sample.data, sample.uuid, sample.url)
            (decimal, optionalString, optionalInt, id) = (sample.decimal, sample.optionalString, sample.optionalInt, sample.objectID)
        }
    }

    // Serialized: both cases keep their rows in `SampleRow.kept`.
    @Test("every attribute type reads in place as the objects read it (a URL or decimal read: the row decoded instead); a row kept past init(row:) reads nothing",
          .serialized, arguments: [false, true])
    func everyTypeAndKeptRows(inMemory: Bool) throws {
        let stack = try TestStack(inMemory: inMemory)
        let context = stack.context()
        try context.performAndWait {
            var random = SplitMix64(seed: 0x5A3)
            for index in 0..<40 {
                let sample = Sample(context: context)
                (sample.int16, sample.int32) = (Int16(truncatingIfNeeded: random.next()), Int32(truncatingIfNeeded: random.next()))
                sample.int64 = [Int64.min, -1, 0, 63, 64, Int64.max, Int64(truncatingIfNeeded: random.next())][index % 7]
                (sample.double, sample.float) = (Double(bitPattern: random.next()), Float(index) / 3)
                sample.bool = index % 2 == 0
                sample.string = String(repeating: ["a", "é", "🚇", "Zoo "][index % 4], count: index % 9)
                sample.date = Date(timeIntervalSince1970: index % 2 == 0 ? Double(index * 86_400) : 90_600.25 + Double(index))
                sample.data = Data((0..<(index % 5)).map { UInt8($0 * 51) })
                sample.uuid = UUID()
                sample.url = URL(string: "https://example.org/\(index)?b=c") ?? URL(fileURLWithPath: "/")
                sample.decimal = Decimal(string: "12345.678901234567890\(index)") ?? 0
                sample.optionalString = index % 3 == 0 ? nil : "x\(index)"
                sample.optionalInt = index % 4 == 0 ? nil : Int64(index)
            }
            try context.save()
            context.reset()
            let request = FetchRequest(entityName: "Sample", predicate: try ObjectPredicate(format: "int32 != 7"))
            SampleRow.kept = []
            let expected = try context.fetch(request, as: Sample.self).map(SampleRow.init)
            #expect(expected.count == 40)
            let values = try context.fetchValues(request, as: SampleRow.self)
            let kept = SampleRow.kept
            // NaN payloads differ from themselves: compared with the doubles' bits.
            #expect(values.map(\.double.bitPattern) == expected.map(\.double.bitPattern))
            var withoutDoubles = (values, expected)
            for index in values.indices { (withoutDoubles.0[index].double, withoutDoubles.1[index].double) = (0, 0) }
            #expect(withoutDoubles.0 == withoutDoubles.1)
            let plan = try context.explainValues(request, as: SampleRow.self)
            #expect(plan.allSatisfy { $0.valuePath?.contains("IN PLACE") == true })
            // Kept past their fetch: the IDs are still theirs, their values are gone.
            #expect(kept.map(\.objectID) == expected.compactMap(\.id))
            for row in kept {
                #expect(throws: FetchValueError.rowNotCurrent(property: "string")) { _ = try row.value(6) as String }
                #expect(row.attribute(0) == .null)
            }
            SampleRow.kept = []
        }
    }

    @Test("a damaged row read in place gives StoreError naming the row (or FetchValueError for a column of another kind), never a crash")
    func damagedRows() throws {
        let stack = try TestStack()
        let filling = stack.context()
        let id = try filling.performAndWait { try Self.fill(filling, seed: 5, count: 1, identifiers: 7..<8)[0].objectID }
        let key = TupleKey.encode([.integer(id.primaryKey)])
        let original: [UInt8] = try Database.open(path: stack.url.path).view { tx in try #require(try tx.tree("rows.Stop").get(key)) }
        // Every truncation, and every byte of the row set to each of a few values.
        var damaged = (0..<original.count).map { Array(original.prefix($0)) }
        for position in original.indices {
            for byte: UInt8 in [0x00, 0x06, 0x0F, 0x7F, 0xC5, 0xFF] where original[position] != byte {
                var copy = original
                copy[position] = byte
                damaged.append(copy)
            }
        }
        var failures = 0
        for (index, bytes) in damaged.enumerated() {
            try Database.open(path: stack.url.path).update { tx in try tx.tree("rows.Stop").put(key, bytes) }
            try stack.reopen()
            let context = stack.context()
            context.performAndWait {
                let request = FetchRequest(entityName: "Stop")
                var dictionaries = request
                dictionaries.resultType = .dictionaries
                dictionaries.propertiesToFetch = [.key("name"), .key("parent"), .key("normalizedName")]
                do {
                    _ = try context.fetchValues(request, as: PositionalRow.self)
                    _ = try context.fetchDictionaries(dictionaries)
                } catch let error as StoreError {
                    failures += 1
                    #expect(error.description.contains("rows.Stop/\(id.primaryKey)"), "damage \(index): \(error)")
                } catch is FetchValueError {
                    // A column whose tag changed to another kind: well formed, of the wrong type.
                } catch {
                    Issue.record("damage \(index): \(error) is neither a StoreError nor a FetchValueError")
                }
            }
        }
        // Every truncation short of the whole row fails.
        #expect(failures >= original.count - 1)
    }
}
