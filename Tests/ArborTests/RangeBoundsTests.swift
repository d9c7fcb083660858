@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import Testing

@Suite("Range bounds: the key range of a column condition holds exactly the keys whose value meets it")
struct RangeBoundsTests {
    @Test("the successor of a byte string is past every string it starts")
    func successorExamples() {
        #expect(QueryPlanner.successor([1, 2]) == [1, 3])
        #expect(QueryPlanner.successor([1, 0xFF]) == [2])
        #expect(QueryPlanner.successor([0xFF, 0xFF]) == nil)
        #expect(QueryPlanner.successor([]) == nil)
        let kept: [UInt8] = [4, 0xFF]
        #expect(QueryPlanner.successor(kept) == [5])
        #expect(kept == [4, 0xFF])  // the caller's copy is left as it was
    }

    @Test("random bounds over a prefix: keys of the prefix, a value and more components", arguments: [11, 12, 13])
    func boundsAgreeWithValues(seed: UInt64) {
        var g = SplitMix64(seed: seed)
        var disagreements: [String] = []
        for _ in 0..<2_000 {
            let base = (0..<Int(g.next() % 3)).map { _ in UInt8(truncatingIfNeeded: g.next() % 4 == 0 ? 0xFF : g.next()) }
            func value() -> Int64 { Int64(g.next() % 9) - 4 }
            let lower = g.next() % 4 == 0 ? nil : (value(), g.next() % 2 == 0)
            let upper = g.next() % 4 == 0 ? nil : (value(), g.next() % 2 == 0)
            let range = QueryPlanner.rangeFor(prefix: base, lower: lower.map { (.integer($0.0), $0.1) },
                                              upper: upper.map { (.integer($0.0), $0.1) })
            for candidate in Int64(-5)...5 {
                let tail = g.next() % 2 == 0 ? [] : TupleKey.encode(component: .integer(Int64(g.next() % 3)))
                let key = base + TupleKey.encode(component: .integer(candidate)) + tail
                let meets = QueryPlanner.within(lower, upper) { bound in candidate < bound ? -1 : (candidate == bound ? 0 : 1) }
                if range.contains(key) != meets { disagreements.append("\(base) \(String(describing: lower)) \(String(describing: upper)): \(candidate) + \(tail)") }
            }
            // A key of another prefix is outside whenever the base bounds the range.
            if !base.isEmpty, let other = QueryPlanner.successor(base), range.contains(other + TupleKey.encode(component: .integer(0))) {
                disagreements.append("\(base): a key of the next prefix is inside")
            }
        }
        #expect(disagreements.count == 0, "\(disagreements.prefix(5))")
    }
}
