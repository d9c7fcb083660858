@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// Key filters decide conditions on an index entry's encoded key in place (integer compares for
/// fixed-size components, `memcmp` otherwise). They must agree with the same condition checked
/// on the decoded value, for every kind of component, bound and neighbour.
@Suite("Key filters: checked on encoded keys exactly as on decoded values")
struct KeyFilterTests {
    /// Values of the kinds index keys hold, with many near-ties (equal values, ±0, adjacent
    /// integers of different encoded sizes, null).
    static func randomValue(_ random: inout SplitMix64) -> TupleValue {
        let small: [Int64] = [0, 1, -1, 255, 256, -256, 65_535, 65_536, Int64.max, Int64.min]
        switch Int.random(in: 0..<8, using: &random) {
        case 0: return .null
        case 1: return .integer(small[Int.random(in: 0..<small.count, using: &random)])
        case 2: return .integer(Int64(Int.random(in: 0..<2_001, using: &random)) - 1_000)
        case 3: return .int64(Int64(Int.random(in: 0..<21, using: &random)) - 10)
        case 4: return .double(Double(Int.random(in: 0..<41, using: &random) - 20) / 4)
        case 5: return .double([0.0, -0.0, .infinity, -.infinity, 13.404954, 52.520008][Int.random(in: 0..<6, using: &random)])
        case 6: return .bool(Int.random(in: 0..<2, using: &random) == 1)
        default: return .string(["", "a", "ab", "b", "U Görlitzer", "\u{0}x"][Int.random(in: 0..<6, using: &random)])
        }
    }

    static func randomCondition(_ random: inout SplitMix64) -> QueryPlanner.Condition {
        func bound() -> (TupleValue, Bool)? {
            Int.random(in: 0..<4, using: &random) == 0 ? nil : (randomValue(&random), Int.random(in: 0..<2, using: &random) == 1)
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return .equal(randomValue(&random))
        case 1: return .oneOf(ComponentSet((0..<(Int.random(in: 0..<40, using: &random))).map { _ in randomValue(&random) }))
        case 2: return .prefix(["", "a", "U G", "U Gö"][Int.random(in: 0..<4, using: &random)])
        default:
            // A range whose bounds often share the values' kind (the fixed-size path).
            return .range(lower: bound(), upper: bound())
        }
    }

    @Test("random conditions on the first, middle and last components", arguments: [1, 2, 3, 4])
    func agreesWithDecodedValues(seed: UInt64) throws {
        var random = SplitMix64(seed: 0x4B_F1 &+ seed)
        for _ in 0..<3_000 {
            let components = (0..<3).map { _ in Self.randomValue(&random) }
            let position = Int.random(in: 0..<3, using: &random)
            let condition = Self.randomCondition(&random)
            let filter = KeyFilter(position: position, condition: condition)
            let key = TupleKey.encode(components)
            let inPlace = try key.withUnsafeBytes { try filter.matches($0) }
            let decoded = QueryPlanner.matches(components[position], condition)
            #expect(inPlace == decoded, "\(condition) on \(components) at \(position)")
        }
    }
}
