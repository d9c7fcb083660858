@testable import Arbor
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// `IN` lists of any length, planned: an index (or the rows tree, for `SELF IN`) searched
/// point by point in key order, through relationships where the destination has the index;
/// every answer equal to the one in-memory evaluation gives.
@Suite("IN lists: planned searches of any length")
struct InListTests {
    /// 3,000 stops, identifiers -100, -97, …; every third with a parent; stop times on every
    /// fifth stop.
    static func seeded() throws -> (TestStack, [ObjectID]) {
        let stack = try TestStack()
        let context = stack.context()
        let ids: [ObjectID] = try context.performAndWait {
            var stops: [Stop] = []
            for index in 0..<3_000 {
                let stop = makeStop(context, Int64(index * 3 - 100))
                if index % 3 == 1, let parent = stops.last { stop.parent = parent }
                if index % 5 == 0 {
                    for minute in 0..<2 {
                        let time = StopTime(context: context)
                        time.departureTime = Date(timeIntervalSince1970: Double(21_600 + index * 60 + minute))
                        time.arrivalTime = time.departureTime
                        time.stop = stop
                    }
                }
                stops.append(stop)
            }
            try context.save()
            return stops.map(\.objectID)
        }
        return (stack, ids)
    }

    /// `count` identifiers drawn from a range four times wider than the stored ones, with repeats.
    static func identifiers(_ count: Int, _ random: inout SplitMix64) -> [Int64] {
        (0..<count).map { _ in Int64(random.next() % 36_000) - 200 }
    }

    @Test("IN lists of 0, 1, 257, 10,000 and 100,000 values return what a scan returns", arguments: [0, 1, 257, 10_000, 100_000])
    func lengths(count: Int) throws {
        let (stack, _) = try Self.seeded()
        var random = SplitMix64(seed: 0x1A + UInt64(count))
        let values = Self.identifiers(count, &random)
        let wanted = Set(values)
        let context = stack.context()
        try context.performAndWait {
            let all = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
            let expected = all.map(\.identifier).filter { wanted.contains($0) }.sorted()
            let predicate = try ObjectPredicate(format: "identifier IN %@", values)
            let request = FetchRequest(entityName: "Stop", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("identifier")])
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == expected)
            let plan = try #require(try context.explain(request).first)
            #expect(plan.plan.hasPrefix("SEARCH index.Stop.unique_identifier"), "\(plan.plan)")
            if count > PredicateFormatter.summaryListLength { #expect(plan.plan.contains("… \(count) values}"), "\(plan.plan)") }
            // The search reads the entries of the listed values only.
            #expect(plan.rowsExamined == expected.count)
            // With another condition, and evaluated in memory on every object.
            let narrowed = try ObjectPredicate(format: "identifier IN %@ AND name BEGINSWITH 'Stop 1'", values)
            let inMemory = try all.filter { try narrowed.evaluate(with: $0) }.map(\.identifier).sorted()
            #expect(inMemory == all.map(\.identifier).filter { wanted.contains($0) && "Stop \($0)".hasPrefix("Stop 1") }.sorted())
            var both = request
            both.predicate = narrowed
            #expect(try context.fetch(both, as: Stop.self).map(\.identifier) == inMemory)
        }
    }

    @Test("an IN list on the leading column of a compound index, with a range on the next")
    func compoundLeadingColumn() throws {
        let (stack, _) = try Self.seeded()
        var random = SplitMix64(seed: 7)
        let context = stack.context()
        try context.performAndWait {
            let all = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
            let longitudes = (0..<400).map { _ in all[Int(random.next() % UInt64(all.count))].longitude } + [1.5, 200]
            let predicate = try ObjectPredicate(format: "longitude IN %@ AND latitude >= 53.5", longitudes)
            let request = FetchRequest(entityName: "Stop", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("identifier")])
            let expected = try all.filter { try predicate.evaluate(with: $0) }.map(\.identifier).sorted()
            #expect(!expected.isEmpty)
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == expected)
            let plan = try #require(try context.explain(request).first?.plan)
            #expect(plan.hasPrefix("SEARCH index.Stop.by_longitude_latitude"), "\(plan)")
        }
    }

    @Test("a to-one relationship IN a list of objects searches the foreign-key index")
    func foreignKeyList() throws {
        let (stack, ids) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            let stops = stride(from: 0, to: ids.count, by: 7).map { context.object(with: ids[$0]) }
            let predicate = try ObjectPredicate(format: "stop IN %@", stops)
            let request = FetchRequest(entityName: "StopTime", predicate: predicate)
            let times = try context.fetch(request, as: StopTime.self)
            let wanted = Set(stops.map(\.objectID))
            let all = try context.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self)
            #expect(Set(times.map(\.objectID)) == Set(all.filter { $0.stop.map { wanted.contains($0.objectID) } ?? false }.map(\.objectID)))
            let plan = try #require(try context.explain(request).first?.plan)
            #expect(plan.hasPrefix("SEARCH ") && plan.contains("(stop IN {<arbor://"), "\(plan)")
        }
    }

    @Test("SELF IN a list of IDs looks the rows up by key; IDs of unsaved objects and of other entities find nothing")
    func selfInList() throws {
        let (stack, ids) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            var random = SplitMix64(seed: 11)
            let picked = (0..<1_500).map { _ in ids[Int(random.next() % UInt64(ids.count))] }
            let unsaved = makeStop(context, 90_000)
            let time = try #require(try context.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self).first)
            let list: [Any] = picked + [unsaved.objectID, time.objectID]
            let predicate = try ObjectPredicate(format: "SELF IN %@", list)
            let request = FetchRequest(entityName: "Stop", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("identifier")])
            // The unsaved object is in the list, and pending changes are reflected.
            let expected = Set(picked).union([unsaved.objectID])
            #expect(Set(try context.fetch(request, as: Stop.self).map(\.objectID)) == expected)
            context.rollback()
            let plan = try #require(try context.explain(request).first)
            #expect(plan.plan.hasPrefix("SEARCH rows.Stop (SELF IN {"), "\(plan.plan)")
            #expect(plan.rowsMatched == Set(picked).count)
            var one = request
            one.predicate = try ObjectPredicate(format: "SELF == %@ AND identifier > -1000", ids[5])
            #expect(try context.fetch(one, as: Stop.self).map(\.objectID) == [ids[5]])
            #expect(try context.explain(one).first?.plan.hasPrefix("SEARCH rows.Stop") == true)
        }
    }

    @Test("an attribute of a related object IN a list: to-one, one-to-many and many-to-many")
    func throughRelationships() throws {
        let (stack, _) = try Self.seeded()
        var random = SplitMix64(seed: 3)
        let values = Self.identifiers(2_000, &random)
        let context = stack.context()
        try context.performAndWait {
            // To-one: stop times of the listed stops, through the stops' identifier index.
            let times = try context.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self)
            let toOne = try ObjectPredicate(format: "stop.identifier IN %@", values)
            let timeRequest = FetchRequest(entityName: "StopTime", predicate: toOne)
            let expectedTimes = try Set(times.filter { try toOne.evaluate(with: $0) }.map(\.objectID))
            #expect(!expectedTimes.isEmpty)
            #expect(Set(try context.fetch(timeRequest, as: StopTime.self).map(\.objectID)) == expectedTimes)
            let plan = try #require(try context.explain(timeRequest).first?.plan)
            #expect(plan.hasPrefix("SEARCH index.Stop.unique_identifier") && plan.hasSuffix("THEN fk.StopTime.stop"), "\(plan)")
            // One-to-many: stops with a child in the list (the children's rows hold the parent).
            let stops = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
            let toMany = try ObjectPredicate(format: "ANY children.identifier IN %@ AND identifier > 0", values)
            let stopRequest = FetchRequest(entityName: "Stop", predicate: toMany)
            let expectedStops = try Set(stops.filter { try toMany.evaluate(with: $0) }.map(\.objectID))
            #expect(!expectedStops.isEmpty)
            #expect(Set(try context.fetch(stopRequest, as: Stop.self).map(\.objectID)) == expectedStops)
            #expect(try context.explain(stopRequest).first?.plan.hasSuffix("THEN rows.Stop") == true)
        }
        // Many-to-many, through the join tree (vehicles are of two sub-entities).
        let fleet = stack.context()
        try fleet.performAndWait {
            var vehicles: [Vehicle] = []
            for index in 0..<40 {
                let vehicle: Vehicle
                if index % 2 == 0 {
                    let bus = Bus(context: fleet)
                    bus.capacity = 40
                    vehicle = bus
                } else {
                    let tram = Tram(context: fleet)
                    tram.length = 30
                    vehicle = tram
                }
                vehicle.name = "V\(index)"
                vehicles.append(vehicle)
            }
            for index in 0..<30 {
                let route = Route(context: fleet)
                route.code = "R\(index)"
                route.vehicles = [vehicles[index], vehicles[(index * 7) % 40]]
            }
            try fleet.save()
            let predicate = try ObjectPredicate(format: "ANY vehicles.name IN %@", (0..<40).filter { $0 % 3 == 0 }.map { "V\($0)" })
            let request = FetchRequest(entityName: "Route", predicate: predicate)
            let routes = try fleet.fetch(FetchRequest(entityName: "Route"), as: Route.self)
            let expected = try Set(routes.filter { try predicate.evaluate(with: $0) }.map(\.objectID))
            #expect(!expected.isEmpty && expected.count < routes.count)
            #expect(Set(try fleet.fetch(request, as: Route.self).map(\.objectID)) == expected)
            #expect(try fleet.explain(request).first?.plan.hasSuffix("THEN join.Route.vehicles") == true)
        }
    }

    @Test("a condition a nil relationship meets is not searched through the relationship")
    func nilPathsAreNotSearched() throws {
        let (stack, _) = try Self.seeded()
        let context = stack.context()
        try context.performAndWait {
            let stops = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
            let predicate = try ObjectPredicate(format: "parent.normalizedName IN %@", [NSNull(), "x"] as [Any])
            let expected = try Set(stops.filter { try predicate.evaluate(with: $0) }.map(\.objectID))
            #expect(expected.count > 1_000)  // every stop without a parent
            #expect(Set(try context.fetch(FetchRequest(entityName: "Stop", predicate: predicate), as: Stop.self).map(\.objectID)) == expected)
        }
    }
}

/// The hashed IN list gives exactly the element-by-element equality of the predicate language.
@Suite("IN lists in memory: hashed membership equals element-by-element comparison")
struct ValueSetTests {
    static let pool: [AttributeValue] = [
        .null, .int(0), .int(1), .int(-1), .int(1 << 53), .int((1 << 53) + 1), .int(.max), .double(1), .double(0.5), .double(-0.0),
        .double(.nan), .double(Double(1 << 53)), .float(0.5), .bool(true), .bool(false), .decimal(Decimal(string: "0.5") ?? 0),
        .string("Straße"), .string("STRASSE"), .string("strasse"), .string("Å"), .string("A\u{30A}"), .string("zoo"), .string(""),
        .url(URL(string: "https://a.example/x") ?? URL(fileURLWithPath: "/")), .string("https://a.example/x"),
        .date(Date(timeIntervalSinceReferenceDate: 5)), .date(Date(timeIntervalSinceReferenceDate: 6)),
        .data(Data([1, 2])), .data(Data()), .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
        .string("01020304-0506-0708-090A-0B0C0D0E0F10"),
    ]

    @Test("random lists and values, with each string option", arguments: [StringOptions(), [.caseInsensitive], [.diacriticInsensitive], [.caseInsensitive, .diacriticInsensitive]])
    func agrees(options: StringOptions) throws {
        var random = SplitMix64(seed: UInt64(options.rawValue) + 40)
        for _ in 0..<400 {
            let items = (0..<(8 + Int(random.next() % 12))).map { _ in Self.pool[Int(random.next() % UInt64(Self.pool.count))] }
            let set = try #require(ValueSet(items.map(PredicateExpression.constant), options: options))
            var evaluator = PredicateEvaluator(resolver: NoResolver())
            for value in Self.pool {
                let linear = try items.contains { try evaluator.compare(.scalar(value), .equal, .scalar($0), options) }
                #expect(set.contains(.scalar(value)) == linear, "\(value) in \(items) \(options)")
            }
        }
    }

    struct NoResolver: SubjectResolver {
        func subject(for id: ObjectID) throws -> PredicateSubject? { nil }
    }
}
