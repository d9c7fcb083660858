@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Prepared fetch requests and model templates: variables typed once, plans kept per store")
struct PreparedFetchTests {
    /// Stops on a grid with names from a small list, each with a few stop times.
    static func populate(_ context: ManagedObjectContext, stops: Int, random: inout SplitMix64) throws {
        let names = ["Alexanderplatz", "Zoo", "Ostkreuz", "Südkreuz", "Görlitzer Bahnhof", "Hermannplatz", "Warschauer"]
        for index in 0..<stops {
            let stop = Stop(context: context)
            stop.identifier = Int64(index)
            stop.stopID = "S\(index)"
            stop.name = "\(names[index % names.count]) \(index / names.count)"
            stop.latitude = 52.4 + Double(Int.random(in: 0..<200, using: &random)) / 1000
            stop.longitude = 13.3 + Double(Int.random(in: 0..<200, using: &random)) / 1000
            for minute in 0..<Int.random(in: 0..<4, using: &random) {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(Int.random(in: 0..<1_440, using: &random) * 60 + minute))
                time.arrivalTime = time.departureTime
                time.stop = stop
            }
        }
        try context.save()
    }

    static let box = "longitude BETWEEN {$west, $east} AND latitude BETWEEN {$south, $north}"
    static let window = "SUBQUERY(stopTimes, $x, $x.departureTime >= $start AND $x.departureTime <= $end).@count != 0"

    @Test("bound and fetched, a prepared request finds what the same predicate written out finds", arguments: 0..<6)
    func differential(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try Self.populate(context, stops: 300, random: &random)
            let box = try context.prepare(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: Self.box),
                                                       sortDescriptors: [ObjectSortDescriptor("identifier")]))
            let boxAndWindow = try context.prepare(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: Self.box + " AND " + Self.window)))
            let prefix = try context.prepare(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] $prefix")))
            let ids = try context.prepare(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopID IN $ids")))
            let times = try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == $stop AND departureTime >= $after"),
                                                         sortDescriptors: [ObjectSortDescriptor("departureTime")]))
            let stops = try context.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("identifier")]), as: Stop.self)
            var kept = 0
            for _ in 0..<40 {
                let west = 13.3 + Double(Int.random(in: 0..<200, using: &random)) / 1000
                let south = 52.4 + Double(Int.random(in: 0..<200, using: &random)) / 1000
                let span = Double(Int.random(in: 0..<80, using: &random)) / 1000
                let values: [String: any FetchTemplateValue] = ["west": west, "east": west + span, "south": south, "north": south + span]
                let written = try ObjectPredicate(format: "longitude BETWEEN {%@, %@} AND latitude BETWEEN {%@, %@}", west, west + span, south, south + span)
                let expected = try context.fetchObjectIDs(FetchRequest(entityName: "Stop", predicate: written, sortDescriptors: [ObjectSortDescriptor("identifier")]))
                #expect(try context.fetchObjectIDs(box, values) == expected)
                #expect(try context.fetchObjectIDs(box, [west, west + span, south, south + span]) == expected, "by position")
                if try context.explain(try box.request(values)).first?.plan.contains("prepared: index kept") == true { kept += 1 }

                let start = Date(timeIntervalSince1970: Double(Int.random(in: 0..<1_440, using: &random) * 60))
                var windowValues = values
                windowValues["start"] = start
                windowValues["end"] = start.addingTimeInterval(3_600)
                let writtenWindow = try ObjectPredicate(
                    format: "longitude BETWEEN {%@, %@} AND latitude BETWEEN {%@, %@} AND SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count != 0",
                    west, west + span, south, south + span, start, start.addingTimeInterval(3_600))
                let expectedWindow = Set(try context.fetchObjectIDs(FetchRequest(entityName: "Stop", predicate: writtenWindow)))
                #expect(Set(try context.fetchObjectIDs(boxAndWindow, windowValues)) == expectedWindow)
                #expect(Set(try context.fetchObjectIDs(boxAndWindow, [west, west + span, south, south + span, start, start.addingTimeInterval(3_600)])) == expectedWindow)

                let word = ["alex", "zoo", "süd", "gorl", "", "x"].randomElement(using: &random) ?? ""
                let writtenPrefix = try ObjectPredicate(format: "name BEGINSWITH[cd] %@", word)
                #expect(Set(try context.fetchObjectIDs(prefix, ["prefix": word])) == Set(try context.fetchObjectIDs(FetchRequest(entityName: "Stop", predicate: writtenPrefix))))

                // Lists of any length, the empty one included (no range: the plan is chosen again).
                let chosen = (0..<Int.random(in: 0..<5, using: &random)).map { _ in "S\(Int.random(in: 0..<320, using: &random))" }
                #expect(Set(try context.fetchObjectIDs(ids, ["ids": chosen])) == Set(stops.filter { chosen.contains($0.stopID) }.map(\.objectID)))

                let stop = stops.randomElement(using: &random)
                let after = Date(timeIntervalSince1970: Double(Int.random(in: 0..<1_440, using: &random) * 60))
                let expectedTimes = (stop?.stopTimes ?? []).filter { $0.departureTime >= after }.sorted { $0.departureTime < $1.departureTime }.map(\.objectID)
                #expect(try context.fetchObjectIDs(times, ["stop": stop, "after": after]) == expectedTimes)
                #expect(try context.fetchObjectIDs(times, [stop, after]) == expectedTimes)
                // The same through Core Data's untyped values.
                #expect(try context.fetchObjectIDs(try times.request(substitutionVariables: ["stop": stop as Any, "after": after])) == expectedTimes)
            }
            #expect(kept >= 30)  // the box keeps its index after the first binding
        }
    }

    @Test("each variable takes the value given under its own name, whatever the other names; values no variable has are ignored")
    func valuesByName() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let prepared = try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(
                format: "departureTime BETWEEN {$from, $fromLater} AND pickupType == $From")))
            let early = Date(timeIntervalSince1970: 100), late = Date(timeIntervalSince1970: 200)
            let values: [String: any FetchTemplateValue] = ["fro": 9, "fromLater": late, "From": 2, "from": early, "unused": "x"]
            let expected = try ObjectPredicate(format: "departureTime BETWEEN {%@, %@} AND pickupType == 2", early, late)
            #expect(try prepared.request(values).predicate == expected)
            #expect(try prepared.request(substitutionVariables: values.mapValues { $0 as Any }).predicate == expected)
            #expect(throws: FetchTemplateError.missingVariable("from")) { try prepared.request(values.filter { $0.key != "from" }) }
        }
    }

    @Test("a bound request keeps its values beside the written predicate: read, changed, prepared again, explained and merged with unsaved objects as if written out")
    func valuesKeptApart() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            var random = SplitMix64(seed: 7)
            try Self.populate(context, stops: 120, random: &random)
            let box = try context.prepare(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: Self.box + " AND name BEGINSWITH $prefix"),
                                                       sortDescriptors: [ObjectSortDescriptor("identifier")]))
            let values: [String: any FetchTemplateValue] = ["west": 13.31, "east": 13.45, "south": 52.41, "north": 52.55, "prefix": "Zoo"]
            let written = try ObjectPredicate(format: "longitude BETWEEN {13.31, 13.45} AND latitude BETWEEN {52.41, 52.55} AND name BEGINSWITH 'Zoo'")
            let bound = try box.request(values)
            #expect(bound.predicate == written)
            let expected = try context.fetchObjectIDs(FetchRequest(entityName: "Stop", predicate: written, sortDescriptors: [ObjectSortDescriptor("identifier")]))
            #expect(!expected.isEmpty)
            for _ in 0..<2 { #expect(try context.fetchObjectIDs(bound) == expected) }  // the second through the kept index
            // The kept plan names the values it searched for, not the variables.
            let plan = try context.explain(bound).first?.plan ?? ""
            #expect(plan.contains("prepared: index kept") && plan.contains("\"Zoo\"") && !plan.contains("$"), "plan: \(plan)")
            // Preparing a bound request keeps its values: nothing is left to bind.
            let again = try context.prepare(bound)
            #expect(again.variables.isEmpty)
            #expect(try again.request([:]).predicate == written)
            #expect(try context.fetchObjectIDs(again) == expected)
            // A predicate set on a bound request replaces the written one and its values.
            var changed = bound
            changed.predicate = try ObjectPredicate(format: "name BEGINSWITH 'Ost'")
            #expect(changed.predicate == (try ObjectPredicate(format: "name BEGINSWITH 'Ost'")))
            #expect(changed.prepared == nil)
            // Unsaved objects are matched against the values too.
            let inside = Stop(context: context), outside = Stop(context: context)
            (inside.identifier, inside.stopID, inside.name, inside.latitude, inside.longitude) = (10_000, "new1", "Zoo new", 52.5, 13.4)
            (outside.identifier, outside.stopID, outside.name, outside.latitude, outside.longitude) = (10_001, "new2", "Zoo far", 53.5, 13.4)
            let withUnsaved = try context.fetchObjectIDs(bound)
            #expect(withUnsaved.contains(inside.objectID) && !withUnsaved.contains(outside.objectID))
            #expect(Set(withUnsaved) == Set(expected + [inside.objectID]))
        }
    }

    @Test("values bound by position go to the variables in the order they are first written; a wrong count is refused")
    func valuesByPosition() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            func order(_ format: String, _ entity: String = "Stop") throws -> [String] {
                try context.prepare(FetchRequest(entityName: entity, predicate: try ObjectPredicate(format: format))).variableOrder
            }
            #expect(try order(PreparedFetchTests.box) == ["west", "east", "south", "north"])
            #expect(try order("$min < longitude AND longitude < $max") == ["min", "max"])
            #expect(try order("name == $b OR (identifier > $a AND name BEGINSWITH $b)") == ["b", "a"], "a repeated variable binds once")
            #expect(try order("identifier IN $ids AND " + PreparedFetchTests.window) == ["ids", "start", "end"], "not the subquery's $x")
            #expect(try order("stop == $stop AND departureTime >= $after", "StopTime") == ["stop", "after"])

            let prepared = try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(
                format: "departureTime BETWEEN {$from, $to} AND pickupType == $kind")))
            let early = Date(timeIntervalSince1970: 100), late = Date(timeIntervalSince1970: 200)
            #expect(try prepared.request([early, late, 2]).predicate
                    == ObjectPredicate(format: "departureTime BETWEEN {%@, %@} AND pickupType == 2", early, late))
            #expect(throws: FetchTemplateError.wrongValueCount(expected: 3, found: 2)) { try context.fetch(prepared, [early, late]) }
            #expect(throws: FetchTemplateError.wrongValueCount(expected: 3, found: 4)) { try prepared.request([early, late, 2, 3]) }
            #expect(throws: FetchTemplateError.mistypedVariable(name: "kind", expected: .value(.int16), found: "string \"2\"")) {
                try prepared.request([early, late, "2"])
            }
            let plain = try context.prepare(FetchRequest(entityName: "StopTime"))
            #expect(plain.variableOrder.isEmpty)
            #expect(try context.count(for: plain, []) == 0)
            #expect(throws: FetchTemplateError.wrongValueCount(expected: 0, found: 1)) { try context.count(for: plain, [1]) }
        }
    }

    @Test("variables are typed from what they are compared with; missing and mistyped values are refused by name")
    func typedVariables() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let prepared = try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(
                format: "stop == $stop AND departureTime BETWEEN {$from, $to} AND pickupType IN $types AND stop.name BEGINSWITH $prefix AND $free == 1")))
            #expect(prepared.variables == ["stop": .object("Stop"), "from": .value(.date), "to": .value(.date), "types": .list(.int16),
                                           "prefix": .value(.string), "free": .any])
            let none: Stop? = nil
            let values: [String: any FetchTemplateValue] = ["stop": none, "from": Date(), "to": Date(), "types": [0, 1], "prefix": "U", "free": 1]
            _ = try context.fetch(prepared, values)
            var missing = values
            missing["to"] = nil
            #expect(throws: FetchTemplateError.missingVariable("to")) { try context.fetch(prepared, missing) }
            var mistyped = values
            mistyped["from"] = "yesterday"
            #expect(throws: FetchTemplateError.mistypedVariable(name: "from", expected: .value(.date), found: "string \"yesterday\"")) {
                try context.fetch(prepared, mistyped)
            }
            var notAList = values
            notAList["types"] = 3
            #expect(throws: FetchTemplateError.self) { try context.fetch(prepared, notAList) }
            let sample = Sample(context: context)
            var wrongEntity = values
            wrongEntity["stop"] = sample
            #expect(throws: FetchTemplateError.self) { try context.fetch(prepared, wrongEntity) }
            // Untyped values (Core Data's dictionaries), NSNull for nil, and a value no predicate takes.
            var untyped: [String: Any] = ["stop": NSNull(), "from": Date(), "to": Date(), "types": [0, 1], "prefix": "U", "free": 1]
            _ = try context.fetch(try prepared.request(substitutionVariables: untyped))
            untyped["free"] = NSObject()
            #expect(throws: FetchTemplateError.self) { try prepared.request(substitutionVariables: untyped) }
            #expect(throws: FetchTemplateError.conflictingVariable(name: "v", .value(.string), .value(.date))) {
                try context.prepare(FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop.name == $v OR departureTime > $v")))
            }
            // A predicate with a variable left in cannot run.
            #expect(throws: ObjectPredicateError.unboundVariable("prefix")) {
                try context.fetch(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH $prefix")))
            }
            // Changing the bound request's predicate drops what was prepared.
            var changed = try prepared.request(values)
            #expect(changed.prepared != nil)
            changed.predicate = try ObjectPredicate(format: "pickupType == 0")
            #expect(changed.prepared == nil)
        }
    }

    @Test("a model keeps named templates: prepared when it is built, bound by name")
    func modelTemplates() throws {
        let box = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: Self.box))
        let model = try ManagedObjectModel(entities: Fixtures.transitEntities(), fetchRequestTemplates: [
            "stopsInBox": box,
            "departuresOf": FetchRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop == $stop")),
        ])
        #expect(model.fetchRequestTemplateNames == ["departuresOf", "stopsInBox"])
        #expect(model.fetchRequestTemplate(named: "stopsInBox")?.variables.keys.sorted() == ["east", "north", "south", "west"])
        #expect(throws: FetchTemplateError.unknownTemplate("nope")) { try model.fetchRequestTemplate(named: "nope", substitutionVariables: [:]) }
        #expect(throws: FetchTemplateError.missingVariable("stop")) { try model.fetchRequestTemplate(named: "departuresOf", substitutionVariables: [:]) }
        #expect(throws: ContextError.unknownEntity("Nope")) {
            try ManagedObjectModel(entities: Fixtures.transitEntities(), fetchRequestTemplates: ["bad": FetchRequest(entityName: "Nope")])
        }
        #expect(throws: ObjectPredicateError.self) {
            try ManagedObjectModel(entities: Fixtures.transitEntities(),
                                   fetchRequestTemplates: ["bad": FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "height > $h"))])
        }
        let stack = try TestStack(model: model)
        let context = stack.context()
        try context.performAndWait {
            var random = SplitMix64(seed: 9)
            try Self.populate(context, stops: 50, random: &random)
            let request = try model.fetchRequestTemplate(named: "stopsInBox", substitutionVariables: ["west": 13.3, "east": 13.5, "south": 52.4, "north": 52.6])
            #expect(try context.count(for: request) == 50)
            let template = try #require(model.fetchRequestTemplate(named: "stopsInBox"))
            #expect(try context.count(for: template, ["west": 13.3, "east": 13.35, "south": 52.4, "north": 52.6])
                    == (try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).filter { $0.longitude <= 13.35 }.count))
        }
        // Templates are not part of the stored model.
        #expect(model.versionHash == (try ManagedObjectModel(entities: Fixtures.transitEntities())).versionHash)
    }
}
