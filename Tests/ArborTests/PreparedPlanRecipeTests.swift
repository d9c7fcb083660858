@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

@Suite("Prepared plan recipes: a kept index's search built from the last binding's layout equals the search worked out again")
struct PreparedPlanRecipeTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("Sensor", attributes: [AttributeDescription("code", .int64)],
                              relationships: [.toMany("readings", "Reading", inverse: "sensor")]),
            EntityDescription("Reading",
                              attributes: [AttributeDescription("station", .int64), AttributeDescription("kind", .string),
                                           AttributeDescription("value", .double), AttributeDescription("at", .date),
                                           AttributeDescription("flag", .bool), AttributeDescription("name", .string, optional: true)],
                              relationships: [.toOne("sensor", "Sensor", inverse: "readings")],
                              indexes: [IndexDescription(["station", "kind", "at"]), IndexDescription(["kind", "value"]),
                                        IndexDescription(["name"], normalized: true), IndexDescription(["flag", "station"]),
                                        IndexDescription(["sensor", "at"])]),
        ])
    }

    /// Predicates whose conditions change kind with their values: nil bounds, empty and long
    /// lists, numbers a column cannot hold exactly, folded strings against nil, nil references.
    static let templates = [
        "station == $s AND kind == $k AND at >= $from AND at < $to",
        "station IN $stations AND kind == $k AND at BETWEEN {$from, $to}",
        "kind IN $kinds AND value > $low AND value <= $high AND name BEGINSWITH $p",
        "name ==[cd] $n AND station == $s",
        "name == $n AND name ==[cd] $m AND flag == $f",
        "sensor == $sensor AND at > $from",
        "name BEGINSWITH[cd] $p AND flag == $f AND station < $s",
        "station == $s AND station >= $t AND kind >= $k AND flag != $f",
        "(kind == $k OR station == $s) AND at > $from AND value IN {$low, 2.5}",
    ]

    /// A random value for a variable of `type`, nil among them.
    static func value(_ type: TemplateVariableType, sensors: [ObjectID], random: inout SplitMix64) -> any FetchTemplateValue {
        func one(_ attribute: AttributeType) -> AttributeValue {
            let choice = Int.random(in: 0..<10, using: &random)
            if choice == 0 { return .null }
            switch attribute {
            case .int64: return choice == 1 ? .double(2.5) : choice == 2 ? .int(1 << 60) : .int(Int64.random(in: 0..<6, using: &random))
            case .double: return choice == 1 ? .int((1 << 60) + 1) : .double(Double(Int.random(in: 0..<40, using: &random)) / 4)
            case .string: return .string(["a", "b", "Äb", "", "ab"][Int.random(in: 0..<5, using: &random)])
            case .date: return .date(Date(timeIntervalSince1970: Double(Int.random(in: 0..<100, using: &random))))
            case .bool: return .bool(choice % 2 == 0)
            default: return .null
            }
        }
        switch type {
        case .value(let attribute): return one(attribute)
        case .list(let attribute): return (0..<[0, 1, 3, 5][Int.random(in: 0..<4, using: &random)]).map { _ in one(attribute) }
        case .object: return Int.random(in: 0..<5, using: &random) == 0 ? ObjectID?.none : sensors[Int.random(in: 0..<sensors.count, using: &random)]
        case .any: return Int.random(in: 0..<10, using: &random)
        }
    }

    @Test("for random bindings of nine predicate shapes and every index kept, the recipe's plan is the plan worked out again",
          arguments: 0..<4)
    func differential(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        let store = try stack.store.btree()
        let info = try #require(stack.model.info(named: "Reading"))
        let indexes = info.indexes.filter { !$0.isText }
        try context.performAndWait {
            var sensors: [ObjectID] = []
            for code in 0..<3 {
                let sensor = try context.insertNewObject(forEntityName: "Sensor")
                sensor.setValue(code, forKey: "code")
                sensors.append(sensor.objectID)
            }
            try context.save()
            sensors = try context.fetchObjectIDs(FetchRequest(entityName: "Sensor"))
            var built = 0, compared = 0
            for format in Self.templates {
                let prepared = try PreparedFetchRequest(FetchRequest(entityName: "Reading", predicate: try ObjectPredicate(format: format)),
                                                        model: stack.model)
                var recipes: [IndexPlanRecipe?] = Array(repeating: nil, count: indexes.count)
                for _ in 0..<60 {
                    var values: [String: any FetchTemplateValue] = [:]
                    for (name, type) in prepared.variables { values[name] = Self.value(type, sensors: sensors, random: &random) }
                    let bound = try prepared.request(values).boundPredicate
                    let bindings = try #require(bound.bindings)
                    for (position, index) in indexes.enumerated() {
                        let again = QueryPlanner.accessPath(bound, for: info, through: index, store: store)
                        if let recipe = recipes[position], let plan = recipe.plan(bindings, for: info, store: store) {
                            built += 1
                            let reference = try #require(again?.plan, "\(format) through \(index.tree): a recipe plan where none is")
                            if !Self.same(plan, reference) {
                                Issue.record("\(format) with \(values) through \(index.tree):\n recipe \(Self.summary(plan))\n again  \(Self.summary(reference))")
                            }
                            compared += 1
                        }
                        if let again { recipes[position] = again.recipe }
                    }
                }
            }
            // Most bindings fit the last one's recipe: the comparison is not vacuous.
            #expect(compared == built && built > 250, "\(built) plans built from recipes")
        }
    }

    @Test("a prepared request fetches through its recipe what the predicate written out fetches", arguments: 0..<3)
    func fetchesThroughRecipes(seed: UInt64) throws {
        var random = SplitMix64(seed: seed &+ 100)
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        try context.performAndWait {
            var sensors: [ManagedObject] = []
            for code in 0..<3 {
                let sensor = try context.insertNewObject(forEntityName: "Sensor")
                sensor.setValue(code, forKey: "code")
                sensors.append(sensor)
            }
            for _ in 0..<400 {
                let reading = try context.insertNewObject(forEntityName: "Reading")
                reading.setValue(Int.random(in: 0..<6, using: &random), forKey: "station")
                reading.setValue(["a", "b", "ab", "Äb", "B"][Int.random(in: 0..<5, using: &random)], forKey: "kind")
                reading.setValue(Double(Int.random(in: 0..<40, using: &random)) / 4, forKey: "value")
                reading.setValue(Date(timeIntervalSince1970: Double(Int.random(in: 0..<100, using: &random))), forKey: "at")
                reading.setValue(Bool.random(using: &random), forKey: "flag")
                reading.setValue(["Äbc", "abd", "b", nil][Int.random(in: 0..<4, using: &random)], forKey: "name")
                reading.setValue(Int.random(in: 0..<4, using: &random) == 0 ? nil : sensors[Int.random(in: 0..<3, using: &random)], forKey: "sensor")
            }
            try context.save()
            let ids = sensors.map(\.objectID)
            var kept = 0
            for format in Self.templates {
                let prepared = try context.prepare(FetchRequest(entityName: "Reading", predicate: try ObjectPredicate(format: format)))
                for _ in 0..<25 {
                    var values: [String: any FetchTemplateValue] = [:]
                    for (name, type) in prepared.variables { values[name] = Self.value(type, sensors: ids, random: &random) }
                    let request = try prepared.request(values)
                    let written = FetchRequest(entityName: "Reading", predicate: request.predicate)
                    #expect(Set(try context.fetchObjectIDs(request)) == Set(try context.fetchObjectIDs(written)), "\(format) with \(values)")
                    if try context.explain(request).first?.plan.contains("prepared: index kept") == true { kept += 1 }
                }
            }
            #expect(kept > 50)
        }
    }

    static func same(_ a: QueryPlan, _ b: QueryPlan) -> Bool {
        guard case .index(let indexA, let rangesA) = a.access, case .index(let indexB, let rangesB) = b.access else { return false }
        return indexA.tree == indexB.tree && rangesA == rangesB && a.description == b.description
            && a.keyFilters.count == b.keyFilters.count
            && zip(a.keyFilters, b.keyFilters).allSatisfy { $0.position == $1.position && same($0.condition, $1.condition) }
            && residual(a) == residual(b)
    }

    static func same(_ a: QueryPlanner.Condition, _ b: QueryPlanner.Condition) -> Bool {
        switch (a, b) {
        case (.equal(let x), .equal(let y)): return x == y
        case (.oneOf(let x), .oneOf(let y)): return x.values == y.values
        case (.range(let lowA, let highA), .range(let lowB, let highB)):
            return lowA?.0 == lowB?.0 && lowA?.1 == lowB?.1 && highA?.0 == highB?.0 && highA?.1 == highB?.1
        case (.prefix(let x), .prefix(let y)), (.foldedEqual(let x), .foldedEqual(let y)), (.foldedPrefix(let x), .foldedPrefix(let y)):
            return x == y
        default: return false
        }
    }

    /// The residual as text: "whole", "none" or the predicate.
    static func residual(_ plan: QueryPlan) -> String {
        switch plan.residual {
        case .whole: return "whole"
        case .part(nil): return "none"
        case .part(let predicate?): return "\(predicate)"
        }
    }

    static func summary(_ plan: QueryPlan) -> String {
        "\(plan.description); filters \(plan.keyFilters.map { "\($0.position): \($0.condition)" }); residual \(residual(plan))"
    }
}
