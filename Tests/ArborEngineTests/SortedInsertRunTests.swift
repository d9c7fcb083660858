@testable import ArborEngine
import ArborEngineTestSupport
import Testing

/// Consecutive inserts that fall in one leaf skip the walk from the root (the writer's leaf
/// hint). Runs of sorted keys into a populated tree, appends, replacements with values that
/// grow into overflow chains, and deletes, in transactions that spill dirty pages, must leave
/// exactly the model's entries in a sound file.
@Suite("Sorted insert runs (the leaf hint) against a model")
struct SortedInsertRunTests {
    static func key(_ owner: Int, _ order: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(owner)), .int64(Int64(order))]) }

    /// Random keys stop the hint being built (it would miss); a sorted run that follows gets it
    /// back within 32 inserts and then uses it.
    @Test("after random keys, a sorted run uses the hint again")
    func hintReturnsAfterRandomKeys() throws {
        let db = try Database.open(file: SimulatedFile())
        try db.update { tx in
            let tree = try tx.createTree("index")
            var random = SplitMix64(seed: 9)
            for _ in 0..<2_000 { try tree.put(Self.key(Int(random.next() % 1_000), Int(random.next() % 1_000)), [1]) }
            #expect(tree.box.leafHintMisses >= 4, "random keys miss the hint")
            for order in 0..<200 { try tree.put(Self.key(2_000, order), [2]) }
            #expect(tree.box.leafHintMisses == 0, "the sorted run hits the hint again")
            #expect(try tree.count(in: .prefix(TupleKey.encode([.int64(2_000)]))) == 200)
        }
        #expect(db.checkIntegrity().isSound)
    }

    /// Each tree keeps its own hint: a save writing a row and then its index entries, row by
    /// row, appends to every tree without a walk from the root (but after a split).
    @Test("sorted runs into several trees, interleaved, each keep their hint")
    func interleavedTreesKeepTheirHints() throws {
        let db = try Database.open(file: SimulatedFile())
        try db.update { tx in
            let rows = try tx.createTree("rows"), index = try tx.createTree("index")
            for order in 0..<3_000 {
                try rows.put(Self.key(1, order), [UInt8](repeating: 7, count: 40))
                try index.put(Self.key(order / 100, order), [])
                // A split moves separators and drops that tree's hint: one miss, then hits again.
                #expect(rows.box.leafHintMisses <= 1 && index.box.leafHintMisses <= 1, "insert \(order) missed its tree's hint twice")
            }
            try rows.checkInvariants()
            try index.checkInvariants()
        }
        #expect(db.checkIntegrity().isSound)
    }

    @Test("runs, appends, replacements and deletes match the model", arguments: [UInt64(1), 2, 3, 4])
    func runsMatchTheModel(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        var options = Database.Options(pageSize: 4096)
        options.maxDirtyBytes = 48 << 10  // spills within a transaction
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: options)
        var model: [[UInt8]: [UInt8]] = [:]
        var nextOrder = [Int](repeating: 0, count: 64)
        try db.update { tx in _ = try tx.createTree("index") }
        for round in 0..<40 {
            try db.update { tx in
                let tree = try tx.tree("index")
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<6:
                        // A sorted run: the next orders of a few owners, owner by owner.
                        let owners = (0..<Int.random(in: 1...5, using: &random)).map { _ in Int.random(in: 0..<64, using: &random) }
                        for owner in Set(owners).sorted() {
                            for _ in 0..<Int.random(in: 1...80, using: &random) {
                                nextOrder[owner] += 1
                                let value = [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: Int.random(in: 0...40, using: &random))
                                try tree.put(Self.key(owner, nextOrder[owner]), value)
                                model[Self.key(owner, nextOrder[owner])] = value
                            }
                        }
                    case 6..<8:
                        // Replacements, some growing past the inline limit.
                        for existing in model.keys.shuffled(using: &random).prefix(Int.random(in: 1...30, using: &random)) {
                            let length = Bool.random(using: &random) ? Int.random(in: 0...60, using: &random) : Int.random(in: 1200...5000, using: &random)
                            let value = [UInt8](repeating: 7, count: length)
                            try tree.put(existing, value)
                            model[existing] = value
                        }
                    default:
                        for existing in model.keys.shuffled(using: &random).prefix(Int.random(in: 1...60, using: &random)) {
                            #expect(try tree.delete(existing))
                            model[existing] = nil
                        }
                    }
                }
            }
            let stored = try db.view { try $0.tree("index").entries() }
            #expect(stored.count == model.count, "seed \(seed), round \(round)")
            #expect(stored.allSatisfy { model[$0.key] == $0.value }, "seed \(seed), round \(round)")
            #expect(zip(stored, stored.dropFirst()).allSatisfy { $0.key.lexicographicallyPrecedes($1.key) })
        }
        let report = db.checkIntegrity()
        #expect(report.isSound, "\(report)")
    }
}
