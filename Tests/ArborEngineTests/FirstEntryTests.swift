import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Tree.withFirstEntry(in:)` and `withFirstEntry(from:inclusive:to:inclusive:)` (one descent,
/// no cursor) must find exactly the first entry a cursor scan of the same range finds: bounds
/// inclusive or not, absent, inside a leaf, past a leaf's last key (the range then starts in
/// the next leaf), past every key; values inline or in overflow chains; in a read transaction
/// and in a write transaction with unsaved changes.
@Suite("First entry of a range without a cursor")
struct FirstEntryTests {
    static func key(_ owner: Int, _ order: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(owner)), .int64(Int64(order))]) }

    static func randomBound(_ random: inout SplitMix64) -> KeyRange.Bound? {
        guard Int.random(in: 0..<8, using: &random) != 0 else { return nil }
        // Owners and orders around the stored ones: some bounds hit a key, most fall between.
        return KeyRange.Bound(key(Int.random(in: -1...41, using: &random), Int.random(in: -1...60, using: &random)),
                              inclusive: Bool.random(using: &random))
    }

    static func check(_ tree: Tree, _ random: inout SplitMix64, ranges: Int) throws {
        for _ in 0..<ranges {
            let range = KeyRange(lower: randomBound(&random), upper: randomBound(&random))
            let expected = try tree.entries(in: range, limit: 1).first
            var seen: (key: [UInt8], value: [UInt8])?
            let verdict = try tree.withFirstEntry(in: range) { key, value in
                seen = (Array(key), Array(value))
                return seen?.value.count ?? 0 > 10
            }
            #expect(seen?.key == expected?.key && seen?.value == expected?.value, "range \(range)")
            #expect(verdict == expected.map { $0.value.count > 10 }, "range \(range)")
            // The same range given as byte bounds in place.
            if let lower = range.lower {
                var seenInPlace: [UInt8]?
                let inPlace = try lower.key.withUnsafeBytes { lowerBytes in
                    try (range.upper?.key ?? []).withUnsafeBytes { upperBytes in
                        try tree.withFirstEntry(from: lowerBytes, inclusive: lower.inclusive,
                                                to: range.upper == nil ? nil : upperBytes, inclusive: range.upper?.inclusive ?? false) { key, value in
                            seenInPlace = Array(key)
                            return value.count > 10
                        }
                    }
                }
                #expect(seenInPlace == expected?.key && inPlace == verdict, "range \(range) in place")
            }
        }
    }

    @Test("agrees with a cursor scan on random ranges", arguments: [UInt64(1), 2, 3])
    func agreesWithCursor(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile(), options: Database.Options(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("index")
            for owner in stride(from: 0, to: 40, by: 2) {
                for order in stride(from: 0, to: 60, by: Int.random(in: 1...3, using: &random)) {
                    // Mostly short values, a few long enough for an overflow chain.
                    let length = Int.random(in: 0..<20, using: &random) == 0 ? 5000 : Int.random(in: 0...30, using: &random)
                    try tree.put(Self.key(owner, order), [UInt8](repeating: UInt8(truncatingIfNeeded: order), count: length))
                }
            }
            #expect(tree.info.depth >= 2)
            try Self.check(tree, &random, ranges: 300)  // unsaved nodes of the writer
        }
        try db.view { tx in try Self.check(try tx.tree("index"), &random, ranges: 1000) }
        let empty = try db.update { tx in try tx.createTree("empty").withFirstEntry(in: .all) { _, _ in true } }
        #expect(empty == nil)
    }
}
