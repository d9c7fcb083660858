@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Random edits of stations and departures — inserts, moves, deletes with cascades, renames,
/// rollbacks, edits made by a second context or pushed by a child — saved at random points;
/// after every save the stored derived values must equal what a reference computes from the
/// stored plain values alone.
@Suite("Derived attributes against a reference computed from the stored values")
struct DerivedAttributeDifferentialTests {
    enum Mode: CaseIterable { case file, memory, child }

    /// The stored state, read by a new context: each derived value beside the value the
    /// reference gives it.
    static func mismatches(_ stack: TestStack) throws -> [String] {
        try mismatches(stack.context())
    }

    static func mismatches(_ context: ManagedObjectContext) throws -> [String] {
        return try context.performAndWait {
            let stations = try context.fetch(FetchRequest(entityName: "RuledStation"), as: RuledStation.self)
            let departures = try context.fetch(FetchRequest(entityName: "RuledDeparture"), as: RuledDeparture.self)
            var problems: [String] = []
            func check(_ what: String, _ stored: Any?, _ expected: Any?) {
                let (storedText, expectedText) = (stored.map { String(describing: $0) } ?? "nil", expected.map { String(describing: $0) } ?? "nil")
                if storedText != expectedText { problems.append("\(what): stored \(storedText), expected \(expectedText)") }
            }
            let byStation = Dictionary(grouping: departures) { $0.station?.objectID }
            for station in stations {
                let mine = byStation[station.objectID] ?? []
                check("\(station.name).departureCount", station.departureCount, mine.count)
                check("\(station.name).totalMinutes", station.totalMinutes, mine.map(\.minutes).reduce(0, +))
                check("\(station.name).lastDeparture", station.lastDeparture, mine.map(\.time).max())
                check("\(station.name).searchName", station.searchName,
                      Optional(ValueOrder.fold(station.name, [.caseInsensitive, .diacriticInsensitive])))
                check("\(station.name).modified", station.modified == nil, false)
            }
            for departure in departures {
                check("departure.stationName", departure.stationName, departure.station?.name)
                check("departure.stationCode", departure.stationCode, departure.station.map { $0.code.uppercased() })
            }
            return problems
        }
    }

    static let names = ["Süd", "Nord", "Straße", "Ökonom", "alex", "Zoo", "Élysée"]

    static func run(seed: UInt64, mode: Mode, steps: Int) throws {
        var random = SplitMix64(seed: seed)
        let stack = try TestStack(model: try RuledModel.make(), inMemory: mode == .memory)
        let main = stack.context()
        let editor = mode == .child ? ManagedObjectContext(concurrencyType: .privateQueue, parent: main) : main
        var saves = 0
        for step in 0..<steps {
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < 4 && mode != .child {
                // A second context edits between two saves of the first, which then refreshes.
                try main.performAndWait { try main.save() }
                let other = stack.context()
                try other.performAndWait {
                    let stations = try other.fetch(FetchRequest(entityName: "RuledStation"), as: RuledStation.self)
                        .sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
                    let departures = try other.fetch(FetchRequest(entityName: "RuledDeparture"), as: RuledDeparture.self)
                        .sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
                    if let station = stations.randomElement(using: &random) { station.name = names.randomElement(using: &random) ?? "x" }
                    if let departure = departures.randomElement(using: &random) { departure.station = stations.randomElement(using: &random) }
                    try other.save()
                }
                main.performAndWait { main.refreshAllObjects() }
                continue
            }
            try editor.performAndWait {
                // In a fixed order (fetches sort by key; saved and inserted keys do not mix).
                let stations = try editor.fetch(FetchRequest(entityName: "RuledStation"), as: RuledStation.self)
                    .sorted { ($0.objectID.isTemporaryID ? 1 : 0, $0.objectID.primaryKey) < ($1.objectID.isTemporaryID ? 1 : 0, $1.objectID.primaryKey) }
                let departures = try editor.fetch(FetchRequest(entityName: "RuledDeparture"), as: RuledDeparture.self)
                    .sorted { ($0.objectID.isTemporaryID ? 1 : 0, $0.objectID.primaryKey) < ($1.objectID.isTemporaryID ? 1 : 0, $1.objectID.primaryKey) }
                switch roll {
                case ..<20:
                    let departure = RuledDeparture(context: editor)
                    departure.minutes = Int.random(in: 0...90, using: &random)
                    departure.time = Date(timeIntervalSince1970: Double(Int.random(in: 0...10_000, using: &random)))
                    departure.station = Bool.random(using: &random) || stations.isEmpty ? stations.randomElement(using: &random) : nil
                case ..<32:
                    departures.randomElement(using: &random)?.station = stations.randomElement(using: &random)
                case ..<42:
                    departures.randomElement(using: &random)?.minutes = Int.random(in: 0...90, using: &random)
                case ..<48:
                    departures.randomElement(using: &random)?.time = Date(timeIntervalSince1970: Double(Int.random(in: 0...10_000, using: &random)))
                case ..<56:
                    if let departure = departures.randomElement(using: &random) { editor.delete(departure) }
                case ..<66:
                    stations.randomElement(using: &random)?.name = names.randomElement(using: &random) ?? "x"
                case ..<72:
                    stations.randomElement(using: &random)?.code = ["A1", "B2", "C3"].randomElement(using: &random) ?? "A"
                case ..<80:
                    let station = RuledStation(context: editor)
                    station.name = names.randomElement(using: &random) ?? "x"
                case ..<84:
                    if let station = stations.randomElement(using: &random) { editor.delete(station) }
                case ..<86:
                    editor.rollback()
                default:
                    break
                }
                if roll >= 86 || step == steps - 1 {
                    try editor.save()
                    saves += 1
                }
            }
            if mode == .child && (roll >= 86 || step == steps - 1) { try main.performAndWait { try main.save() } }
            if roll >= 86 || step == steps - 1 {
                let problems = try mismatches(stack)
                #expect(problems.isEmpty, "seed \(seed), \(mode), step \(step): \(problems.prefix(5))")
                if !problems.isEmpty { return }
            }
        }
        #expect(saves > 3)
    }

    @Test("random edits and saves, a file store", arguments: 0..<12)
    func file(seed: UInt64) throws { try Self.run(seed: seed, mode: .file, steps: 160) }

    @Test("random edits and saves, the in-memory store", arguments: 100..<104)
    func memory(seed: UInt64) throws { try Self.run(seed: seed, mode: .memory, steps: 160) }

    @Test("random edits pushed by a child context, saved by its parent", arguments: 200..<204)
    func child(seed: UInt64) throws { try Self.run(seed: seed, mode: .child, steps: 160) }
}
