@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Unique constraints on both kinds of store against a reference: random saves of inserts,
/// value changes and deletes over a small range of values, so that many collide. A save
/// succeeds exactly when no two stored stops would share an `identifier` or a `stopID`; a failed
/// save names each constraint it broke and changes nothing; the file store and the in-memory
/// store (whose unique-value map is checked here) agree step by step.
@Suite("Unique constraints: file and in-memory stores against a reference")
struct UniqueConstraintDifferentialTests {
    /// One stop as the reference sees it.
    struct Values: Hashable {
        var key: Int64
        var identifier: Int64
        var stopID: String
    }

    /// A store, its context, and what it reported.
    final class Side {
        let stack: TestStack
        let context: ManagedObjectContext

        init(inMemory: Bool) throws {
            stack = try TestStack(inMemory: inMemory)
            context = stack.context()
        }

        /// The stored stops, from a fresh context (what the store holds, not the context).
        func stored() throws -> Set<Values> {
            let reader = stack.context()
            return try reader.performAndWait {
                Set(try reader.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map {
                    Values(key: $0.objectID.primaryKey, identifier: $0.identifier, stopID: $0.stopID)
                })
            }
        }
    }

    /// Where the keys of objects inserted in a round begin, above every stored key.
    static let standIn: Int64 = 1 << 40

    enum Step {
        case insert(identifier: Int64, stopID: String)
        case change(position: Int, identifier: Int64?, stopID: String?)
        case delete(position: Int)
    }

    @Test("random saves: success, failures and stored state agree", arguments: 0..<6 as Range<UInt64>)
    func randomSaves(seed: UInt64) throws {
        var random = SplitMix64(seed: 0x0417 + seed)
        let file = try Side(inMemory: false), memory = try Side(inMemory: true)
        var reference: [Int64: Values] = [:]
        var nextKey: Int64 = 1
        var failedSaves = 0
        for round in 0..<120 {
            let steps: [Step] = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                let identifier = Int64.random(in: 0..<10, using: &random), stopID = "S\(Int.random(in: 0..<10, using: &random))"
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5: return .insert(identifier: identifier, stopID: stopID)
                case 5..<8:
                    let which = Int.random(in: 0..<3, using: &random)
                    return .change(position: Int.random(in: 0..<64, using: &random),
                                   identifier: which == 1 ? nil : identifier, stopID: which == 0 ? nil : stopID)
                default: return .delete(position: Int.random(in: 0..<64, using: &random))
                }
            }
            // The reference's outcome.
            // Objects inserted this round go by stand-in keys above every stored key (in creation
            // order) until the save gives the survivors theirs.
            var expected = reference
            var inserted: [Int64] = []
            for step in steps {
                let keys = expected.keys.sorted()
                switch step {
                case .insert(let identifier, let stopID):
                    let key = Self.standIn + Int64(inserted.count)
                    inserted.append(key)
                    expected[key] = Values(key: key, identifier: identifier, stopID: stopID)
                case .change(let position, let identifier, let stopID):
                    guard !keys.isEmpty else { continue }
                    let key = keys[position % keys.count]
                    if let identifier { expected[key]?.identifier = identifier }
                    if let stopID { expected[key]?.stopID = stopID }
                case .delete(let position):
                    guard !keys.isEmpty else { continue }
                    expected[keys[position % keys.count]] = nil
                }
            }
            let identifiersClash = Set(expected.values.map(\.identifier)).count != expected.count
            let stopIDsClash = Set(expected.values.map(\.stopID)).count != expected.count
            let succeeds = !identifiersClash && !stopIDsClash

            var broken: [Set<String>] = []
            for side in [file, memory] {
                let outcome: Set<String>? = try side.context.performAndWait {
                    let stops = try side.context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
                    var byKey = Dictionary(uniqueKeysWithValues: stops.map { ($0.objectID.primaryKey, $0) })
                    var insertedHere: Int64 = 0
                    for step in steps {
                        let keys = byKey.keys.sorted()
                        switch step {
                        case .insert(let identifier, let stopID):
                            let stop = Stop(context: side.context)
                            stop.identifier = identifier; stop.stopID = stopID
                            stop.name = "Stop \(identifier)"; stop.latitude = 52; stop.longitude = 13
                            byKey[Self.standIn + insertedHere] = stop
                            insertedHere += 1
                        case .change(let position, let identifier, let stopID):
                            guard !keys.isEmpty, let stop = byKey[keys[position % keys.count]] else { continue }
                            if let identifier { stop.identifier = identifier }
                            if let stopID { stop.stopID = stopID }
                        case .delete(let position):
                            guard !keys.isEmpty, let stop = byKey[keys[position % keys.count]] else { continue }
                            side.context.delete(stop)
                            byKey[keys[position % keys.count]] = nil
                        }
                    }
                    do {
                        try side.context.save()
                        return nil
                    } catch let error as ValidationError {
                        side.context.rollback()
                        return Set(error.failures.compactMap { failure -> String? in
                            if case .uniqueConstraint(let properties, _) = failure.kind { return properties.joined(separator: ",") }
                            return nil
                        })
                    }
                }
                broken.append(outcome ?? [])
                #expect((outcome == nil) == succeeds, "round \(round), \(side.stack.store.type): saved \(outcome == nil), reference \(succeeds)")
            }
            if !succeeds {
                failedSaves += 1
                var expectedBroken: Set<String> = []
                if identifiersClash { expectedBroken.insert("identifier") }
                if stopIDsClash { expectedBroken.insert("stopID") }
                #expect(broken == [expectedBroken, expectedBroken], "round \(round): constraints reported")
            } else {
                // Inserted objects still there take the next keys, in creation order.
                for key in inserted {
                    guard var values = expected.removeValue(forKey: key) else { continue }
                    values.key = nextKey
                    expected[nextKey] = values
                    nextKey += 1
                }
                reference = expected
            }
            let want = Set(reference.values)
            #expect(try file.stored() == want, "round \(round): the file store")
            #expect(try memory.stored() == want, "round \(round): the in-memory store")
            if try file.stored() != want || memory.stored() != want { return }
        }
        #expect(failedSaves > 10, "collisions were exercised")
    }
}
