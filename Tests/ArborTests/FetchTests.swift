import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Fetch requests: planner, sorting, paging, pending changes")
struct FetchTests {
    static let names = ["U Görlitzer Bahnhof", "S+U Alexanderplatz", "Straße des 17. Juni", "STRASSE", "Zoologischer Garten",
                        "u görli", "Ümlaut", "Bahnhof Zoo", "Görlitzer Park", "Unter den Linden"]

    /// Stops 1…n with names cycling through `names`, a grid of coordinates, and stop times.
    static func seed(_ stack: TestStack, stops: Int = 40) throws -> [ObjectID] {
        let context = stack.context()
        return try context.performAndWait {
            var all: [Stop] = []
            for index in 0..<stops {
                let stop = makeStop(context, Int64(index + 1))
                stop.name = names[index % names.count]
                stop.latitude = 52.0 + Double(index % 8) * 0.01
                stop.longitude = 13.0 + Double(index / 8) * 0.01
                stop.normalizedName = index % 3 == 0 ? nil : stop.name.lowercased()
                if index > 0 && index % 5 == 0 { stop.parent = all[index - 5] }
                for minute in 0..<(index % 4) {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: Double(21600 + index * 60 + minute * 600))
                    time.arrivalTime = time.departureTime
                    time.pickupType = Int16(minute % 2)
                    time.stop = stop
                }
                all.append(stop)
            }
            try context.save()
            return all.map(\.objectID)
        }
    }

    func names(_ context: ManagedObjectContext, _ format: String, _ arguments: Any?...) throws -> [String] {
        let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: format, argumentArray: arguments),
                                   sortDescriptors: [ObjectSortDescriptor("identifier")])
        return try context.fetch(request, as: Stop.self).map(\.name)
    }

    @Test("case- and diacritic-insensitive matching: BEGINSWITH[cd], ==[c] with ß, CONTAINS[d]")
    func foldedStrings() throws {
        let stack = try TestStack()
        _ = try Self.seed(stack, stops: 10)
        let context = stack.context()
        try context.performAndWait { () throws -> Void in
            #expect(try names(context, "name BEGINSWITH[cd] %@", "u gorli") == ["U Görlitzer Bahnhof", "u görli"])
            #expect(try names(context, "name BEGINSWITH %@", "u gorli").isEmpty)
            #expect(try names(context, "name ==[c] 'strasse'") == ["STRASSE"])
            #expect(try names(context, "name BEGINSWITH[c] 'strasse'") == ["Straße des 17. Juni", "STRASSE"])
            #expect(try names(context, "name CONTAINS[d] 'Gorlitzer'") == ["U Görlitzer Bahnhof", "Görlitzer Park"])
            #expect(try names(context, "name LIKE[c] '*zoo*'") == ["Zoologischer Garten", "Bahnhof Zoo"])
            // ß and ö are not in [a-z].
            #expect(try names(context, "name MATCHES '[A-Z][a-z]+ .*'") == ["Zoologischer Garten", "Bahnhof Zoo", "Unter den Linden"])
        }
    }

    @Test("the planner uses the compound geo index, single indexes, prefixes and foreign keys")
    func plans() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(
                format: "longitude BETWEEN {13.005, 13.025} AND latitude BETWEEN {52.015, 52.045}"))
            let box = try context.fetch(request, as: Stop.self)
            #expect(box.count == 6)
            #expect(box.allSatisfy { (13.005...13.025).contains($0.longitude) && (52.015...52.045).contains($0.latitude) })
            let geo = try #require(try context.explain(request).first)
            #expect(geo.plan.hasPrefix("SEARCH index.Stop.by_longitude_latitude"))
            #expect(geo.rowsExamined < 20)

            request.predicate = try ObjectPredicate(format: "name BEGINSWITH 'Gör'")
            let prefix = try #require(try context.explain(request).first)
            #expect(prefix.plan.hasPrefix("SEARCH index.Stop.name"))
            #expect(prefix.rowsExamined == 4 && prefix.rowsMatched == 4)

            request.predicate = try ObjectPredicate(format: "name BEGINSWITH[cd] 'u gorli'")
            let folded = try #require(try context.explain(request).first)
            #expect(folded.plan.hasPrefix("SEARCH index.Stop.folded_name"))
            #expect(folded.rowsExamined == 8 && folded.rowsMatched == 8)
            request.predicate = try ObjectPredicate(format: "name ==[cd] 'STRASSE'")
            #expect(try context.fetch(request, as: Stop.self).map(\.name) == Array(repeating: "STRASSE", count: 4))
            #expect(try context.explain(request).first?.plan.hasPrefix("SEARCH index.Stop.folded_name") == true)

            // Stop 3; stops 4, 14, 24, 34 ("Zoologischer Garten"); stops 32…39 (longitude 13.04): 34 twice.
            request.predicate = try ObjectPredicate(format: "identifier == 3 OR name BEGINSWITH 'Zoo' OR longitude > 13.035")
            let union = try #require(try context.explain(request).first)
            #expect(union.plan.hasPrefix("MULTI-INDEX OR: SEARCH index.Stop.unique_identifier"))
            #expect(union.rowsMatched == 1 + 4 + 8 - 1)
            #expect(union.rowsExamined == union.rowsMatched)
            // A row the first branch's key filter rejects is still found by the second branch.
            request.predicate = try ObjectPredicate(
                format: "(longitude BETWEEN {13.0, 13.02} AND latitude >= 52.05) OR (identifier == 2 AND latitude < 52.04)")
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier).contains(2))
            request.predicate = try ObjectPredicate(format: "identifier == 3 OR latitude > 52.05")
            #expect(try context.explain(request).first?.plan == "SCAN rows.Stop")

            request.predicate = try ObjectPredicate(format: "identifier IN {3, 7, 999}")
            let points = try #require(try context.explain(request).first)
            #expect(points.plan.contains("SEARCH index.Stop.unique_identifier"))
            #expect(points.rowsMatched == 2)

            let stop = try context.existingObject(with: ids[7])
            var times = FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == %@", stop))
            #expect(try context.count(for: times) == 3)
            #expect(try context.explain(times).first?.plan.hasPrefix("SEARCH index.StopTime.by_stop_departureTime") == true)
            times.predicate = try ObjectPredicate(format: "stop.name == %@", "Bahnhof Zoo")
            #expect(try context.count(for: times) == 8)  // stops 8, 18, 28, 38 have 3, 1, 3, 1 times
            // The stops' name index finds the stops, the foreign-key index their times.
            #expect(try context.explain(times).first?.plan == "SEARCH index.Stop.name (name == \"Bahnhof Zoo\") THEN fk.StopTime.stop")
            times.predicate = try ObjectPredicate(format: "stop.latitude > 0")
            #expect(try context.explain(times).first?.plan == "SCAN rows.StopTime")
        }
    }

    @Test("SUBQUERY, ANY, aggregates and key paths through relationships")
    func relationships() throws {
        let stack = try TestStack()
        _ = try Self.seed(stack)
        let context = stack.context()
        try context.performAndWait {
            let from = Date(timeIntervalSince1970: 21600 + 20 * 60), to = Date(timeIntervalSince1970: 21600 + 30 * 60)
            let subquery = try names(context, "SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count != 0", from, to)
            let any = try names(context, "ANY stopTimes.departureTime BETWEEN %@", [from, to])
            #expect(subquery == any)
            #expect(subquery.count == 16)
            #expect(try names(context, "stopTimes.@count == 3").count == 10)
            #expect(try names(context, "stopTimes.@sum.pickupType == 1 AND stopTimes.@count == 2").count == 10)
            #expect(try names(context, "parent.identifier == 1") == ["u görli"])
            #expect(try names(context, "children.@count > 0 AND parent == nil") == ["U Görlitzer Bahnhof"])
            #expect(try names(context, "children.@count > 0").count == 7)
            #expect(try names(context, "ALL stopTimes.pickupType == 0 AND stopTimes.@count > 0").count == 10)
        }
    }

    @Test("sort, offset, limit, count, IDs; unsaved changes are included")
    func sortingAndPendingChanges() throws {
        let stack = try TestStack()
        let ids = try Self.seed(stack, stops: 20)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude < 52.03"),
                                       sortDescriptors: [ObjectSortDescriptor("name", ascending: false), ObjectSortDescriptor("identifier")])
            let all = try context.fetch(request, as: Stop.self).map(\.identifier)
            #expect(all.count == 9)
            request.fetchOffset = 2
            request.fetchLimit = 3
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == Array(all[2..<5]))
            #expect(try context.count(for: request) == 3)

            // Unsaved: a new matching stop, one changed to no longer match, one deleted.
            let added = makeStop(context, 100)
            added.name = "Zzz"
            added.latitude = 52.0
            let moved = try #require(try context.existingObject(with: ids[0]) as? Stop)
            moved.latitude = 60
            context.delete(try context.existingObject(with: ids[1]))
            request.fetchOffset = 0
            request.fetchLimit = 0
            let withChanges = try context.fetch(request, as: Stop.self).map(\.identifier)
            #expect(withChanges.contains(100))
            #expect(withChanges.first == 17)  // "Ümlaut": Ü sorts after Z by code point
            #expect(!withChanges.contains(1) && !withChanges.contains(2))
            #expect(withChanges.count == all.count - 1)
            request.includesPendingChanges = false
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == all)
            #expect(try context.fetchObjectIDs(request).count == all.count)
        }
    }

    @Test("objects arrive filled with returnsObjectsAsFaults = false; no fault fires afterwards")
    func filledObjects() throws {
        let stack = try TestStack()
        _ = try Self.seed(stack, stops: 10)
        let context = stack.context()
        try context.performAndWait {
            let stops = try context.fetchFilled("Stop", as: Stop.self)
            #expect(stops.count == 10)
            let fired = stack.store.statistics.faultsFired
            _ = stops.map(\.name)
            #expect(stack.store.statistics.faultsFired == fired)
        }
    }

    @Test("unknown keys, type mismatches and unquantified to-many keys are typed errors")
    func errors() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait { () throws -> Void in
            let unknown = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "colour == 'red'"))
            #expect(throws: ObjectPredicateError.unknownKey(entity: "Stop", key: "colour")) { try context.fetch(unknown) }
            let mismatch = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name > 5"))
            #expect(throws: ObjectPredicateError.typeMismatch(key: "name", expected: "string", found: "integer 5")) { try context.fetch(mismatch) }
            let toMany = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopTimes.pickupType == 1"))
            #expect(throws: ObjectPredicateError.self) { try context.fetch(toMany) }
            #expect(throws: ContextError.unknownEntity("Nope")) { try context.fetch(FetchRequest(entityName: "Nope")) }
        }
    }
}

@Suite("Prefetching relationship key paths")
struct PrefetchTests {
    @Test("stop times with their stops, and stops with their stop times, without a fault per object")
    func prefetch() throws {
        let stack = try TestStack()
        _ = try FetchTests.seed(stack, stops: 20)
        let context = stack.context()
        try context.performAndWait {
            var request = FetchRequest(entityName: "StopTime")
            request.relationshipKeyPathsForPrefetching = ["stop.parent"]
            let times = try context.fetch(request, as: StopTime.self)
            stack.store.resetStatistics()
            let names = Set(times.compactMap { $0.stop?.name })
            _ = times.compactMap { $0.stop?.parent?.name }
            #expect(names.count == 10)
            #expect(stack.store.statistics.faultsFired == 0)

            var stops = FetchRequest(entityName: "Stop")
            stops.relationshipKeyPathsForPrefetching = ["stopTimes"]
            let fetched = try context.fetch(stops, as: Stop.self)
            stack.store.resetStatistics()
            let total = fetched.reduce(0) { $0 + $1.stopTimes.filter { $0.departureTime.timeIntervalSince1970 > 0 }.count }
            #expect(total == times.count)
            #expect(stack.store.statistics.faultsFired == 0)
            #expect(stack.store.statistics.rowsRead == 0)
        }
    }

    @Test("objects prefetched in both directions are released with their context (no reference cycle left)")
    func prefetchCyclesEndWithContext() throws {
        let stack = try TestStack()
        _ = try FetchTests.seed(stack, stops: 4)
        weak var weakStop: ManagedObject?
        weak var weakTime: ManagedObject?
        do {
            let context = stack.context()
            try context.performAndWait {
                var times = FetchRequest(entityName: "StopTime")
                times.relationshipKeyPathsForPrefetching = ["stop"]
                let fetchedTimes = try context.fetch(times)
                var stops = FetchRequest(entityName: "Stop")
                stops.relationshipKeyPathsForPrefetching = ["stopTimes"]
                let fetchedStops = try context.fetch(stops)
                weakTime = fetchedTimes.first
                weakStop = fetchedStops.first
                #expect(weakTime != nil && weakStop != nil)
            }
        }
        #expect(weakStop == nil)
        #expect(weakTime == nil)
    }
}

@Suite("Sorted fetches with a limit walk an index in order and stop early")
struct OrderedLimitTests {
    @Test("top and bottom by an indexed attribute, with a residual predicate, ties included")
    func orderedLimit() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<1000 {
                let stop = makeStop(context, Int64(index))
                stop.name = "n\(index % 250)"  // four stops per name: ties
                stop.latitude = Double(index % 7)
            }
            try context.save()
            var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "latitude == 3"),
                                       sortDescriptors: [ObjectSortDescriptor("name")])
            request.fetchLimit = 5
            let top = try context.fetch(request, as: Stop.self).map(\.identifier)
            let statistics = try #require(try context.explain(request).first)
            #expect(statistics.plan.hasPrefix("SEARCH index.Stop.name (ORDER BY name LIMIT 5)"))
            #expect(statistics.rowsExamined < 100)
            request.fetchLimit = 0
            let all = try context.fetch(request, as: Stop.self).map(\.identifier)
            #expect(top == Array(all.prefix(5)))
            request.sortDescriptors = [ObjectSortDescriptor("name", ascending: false)]
            let allDescending = try context.fetch(request, as: Stop.self).map(\.identifier)
            request.fetchLimit = 7
            request.fetchOffset = 3
            #expect(try context.fetch(request, as: Stop.self).map(\.identifier) == Array(allDescending[3..<10]))
        }
    }

    @Test("equality on leading index columns, sorted by the next one, with a limit: the walk stops early")
    func orderedAfterEqualities() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait { () throws in
            let stops = (0..<3).map { makeStop(context, Int64($0)) }
            for index in 0..<900 {
                let time = StopTime(context: context)
                // Departures out of insertion order, two per minute (ties).
                time.departureTime = Date(timeIntervalSince1970: Double((index * 7919) % 450 * 60))
                time.arrivalTime = time.departureTime
                time.stop = stops[index % 3]
            }
            try context.save()
            let start = Date(timeIntervalSince1970: 3_000)
            var request = FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == %@ AND departureTime >= %@", stops[1], start),
                                       sortDescriptors: [ObjectSortDescriptor("departureTime")])
            request.fetchLimit = 0
            let all = try context.fetch(request, as: StopTime.self).map(\.objectID)
            request.fetchLimit = 3
            #expect(try context.fetch(request, as: StopTime.self).map(\.objectID) == Array(all.prefix(3)))
            let statistics = try #require(try context.explain(request).first)
            #expect(statistics.plan.hasPrefix("SEARCH index.StopTime.by_stop_departureTime"))
            #expect(statistics.plan.hasSuffix(" ORDER BY departureTime LIMIT 3"))
            #expect(statistics.rowsExamined < 10, "examined \(statistics.rowsExamined) of \(all.count)")
            request.sortDescriptors = [ObjectSortDescriptor("departureTime", ascending: false)]
            request.fetchLimit = 0
            let descending = try context.fetch(request, as: StopTime.self).map(\.objectID)
            request.fetchLimit = 4
            request.fetchOffset = 2
            #expect(try context.fetch(request, as: StopTime.self).map(\.objectID) == Array(descending[2..<6]))
            #expect(try #require(try context.explain(request).first).rowsExamined < 12)
        }
    }
}
