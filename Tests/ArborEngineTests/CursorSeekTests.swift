import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Cursor.seekNear` lands where `seek` lands (the first key >= the target), whatever the
/// cursor's position before: in the current leaf, in another leaf, before or after it.
@Suite("Cursor seekNear against a sorted model")
struct CursorSeekNearTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func seekNearMatchesTheModel(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile())
        // Even keys only, so odd targets test "first key above"; values long enough for many leaves.
        let stored = (0..<3000).map { Int64($0 * 2) }
        func key(_ value: Int64) -> [UInt8] { TupleKey.encode([.int64(value)]) }
        try db.update { tx in
            let tree = try tx.createTree("t")
            for value in stored { try tree.put(key(value), Array(repeating: UInt8(value & 0xFF), count: 40)) }
            // Inside the write transaction the leaves are dirty nodes, afterwards clean pages.
            try check(tree)
        }
        try db.view { tx in try check(try tx.tree("t")) }

        func check(_ tree: Tree) throws {
            let cursor = try tree.makeCursor()
            var target: Int64 = -3
            for _ in 0..<2000 {
                // Mostly small forward steps (a batch of near keys), sometimes far jumps or backwards.
                switch random.next() % 10 {
                case 0: target = Int64(random.next() % 6200) - 50
                case 1: target -= Int64(random.next() % 40)
                default: target += Int64(random.next() % 7)
                }
                let found = try cursor.seekNear(key(target))
                let expected = stored.first { $0 >= target }
                #expect(found == (expected != nil), "target \(target)")
                #expect(cursor.key == expected.map(key), "target \(target)")
                if let expected, random.next() % 3 == 0 {
                    // The cursor keeps working from there.
                    let moved = try cursor.next()
                    let after = stored.first { $0 > expected }
                    #expect(moved == (after != nil) && cursor.key == after.map(key))
                }
            }
        }
    }
}
