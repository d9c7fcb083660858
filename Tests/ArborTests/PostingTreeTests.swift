@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// A text index's logical entries kept in posting blocks, against a set of entries.
@Suite("Posting trees: a text index's entries in blocks")
struct PostingTreeTests {
    static let terms = ["berlin", "berliner", "strasse", "zoo"]

    static func entry(_ term: String, _ pk: Int64, _ keys: IndexKeys) -> [UInt8] {
        TupleKey.encode([.string(term), keys.integer(pk)])
    }

    /// Every block of `tree` within the writer's limits, in a tree whose entries are `expected`.
    static func expectMatches(_ tree: PostingTree, _ expected: Set<[UInt8]>, keys: IndexKeys) throws {
        var stored: [[UInt8]] = []
        try tree.forEachEntry { stored.append($0) }
        #expect(Set(stored) == expected)
        #expect(stored.count == expected.count)
        try tree.tree.forEachUnsafe { _, value in
            #expect(value.count <= PostingBlock.maximumBytes)
            #expect((PostingBlock.count(value) ?? 0) <= PostingBlock.maximumCount)
            return true
        }
        for term in terms {
            // A term's own range, and the prefix that also covers a longer term.
            for range in [KeyRange.prefix(TupleKey.encode([.string(term)])), QueryPlanner.TextSearch.range(String(term.prefix(3)))] {
                var found: [Int64] = []
                try tree.keys(in: range, into: &found)
                let wanted = expected.filter { range.contains($0) }.compactMap { IndexKeys.trailingKey($0) }
                #expect(found.sorted() == wanted.sorted())
                #expect(try tree.count(in: range) == wanted.count)
            }
        }
    }

    @Test("random puts and deletes, in batches, against a set", arguments: [1, 2, 3, 4] as [UInt64])
    func differential(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let stack = try TestStack(model: try ManagedObjectModel(entities: [EntityDescription("Place", attributes: [AttributeDescription("name", .string)])]))
        let keys = try stack.store.btree().keys
        var expected: Set<[UInt8]> = []
        _ = try stack.store.btree().database.update { tx in _ = try tx.createTree("postings") }
        for round in 0..<40 {
            // Small keys (one-byte gaps), and keys far apart (gaps of several bytes, blocks cut
            // by bytes); appends above every key (an import) in some rounds.
            let span: Int64 = seed % 2 == 0 ? 3_000 : 1 << 40
            // Two halves gathered apart and joined: the second's changes win, as if given after.
            var first = PostingChanges(), second = PostingChanges()
            var halves: [[(key: [UInt8], isDelete: Bool)]] = [[], []]
            for number in 0..<Int(random.next() % 400) {
                let term = Self.terms[Int(random.next() % UInt64(Self.terms.count))]
                let pk = round % 5 == 4 ? Int64(round) * span + Int64(random.next() % 500) + 1 : Int64(random.next() % UInt64(span)) + 1
                let key = Self.entry(term, pk, keys)
                let isDelete = random.next() % 3 == 0
                Array(term.utf8).withUnsafeBytes { bytes in
                    switch (number % 2 == 0, isDelete) {
                    case (true, true): first.delete(term: bytes, key: pk)
                    case (true, false): first.put(term: bytes, key: pk)
                    case (false, true): second.delete(term: bytes, key: pk)
                    case (false, false): second.put(term: bytes, key: pk)
                    }
                }
                halves[number % 2].append((key, isDelete))
            }
            for (key, isDelete) in halves[0] + halves[1] {
                if isDelete { expected.remove(key) } else { expected.insert(key) }
            }
            var changes = first
            changes.append(contentsOf: second)
            try stack.store.btree().database.update { tx in try PostingTree(tree: try tx.tree("postings"), keys: keys).apply(changes) }
            try stack.store.btree().database.view { tx in try Self.expectMatches(PostingTree(tree: try tx.tree("postings"), keys: keys), expected, keys: keys) }
        }
    }

    @Test("a block decodes to what was encoded; random bytes decode to ascending keys or fail")
    func blocks() {
        var random = SplitMix64(seed: 9)
        for _ in 0..<2_000 {
            var keys: [Int64] = [Int64(random.next() % 1_000) + 1]
            for _ in 0..<Int(random.next() % 200) {
                let gap = Int64((random.next() >> (random.next() % 64)) % (1 << 50)) + 1
                keys.append(keys[keys.count - 1] + gap)
            }
            var decoded: [Int64] = []
            for chunk in PostingBlock.chunks(keys) {
                var value: [UInt8] = []
                PostingBlock.encode(keys[chunk], into: &value)
                #expect(value.count <= PostingBlock.maximumBytes)
                #expect(value.withUnsafeBytes { PostingBlock.decode($0, first: keys[chunk.lowerBound], into: &decoded) })
            }
            #expect(decoded == keys)

            let noise = (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            var found: [Int64] = [5]
            let first = Int64(bitPattern: random.next() % 2 == 0 ? random.next() : random.next() % 100)
            if noise.withUnsafeBytes({ PostingBlock.decode($0, first: first, into: &found) }) {
                #expect(first > 0 && found.first == 5 && found[1] == first)
                #expect(zip(found.dropFirst(), found.dropFirst(2)).allSatisfy { $0 < $1 })
            } else {
                #expect(found == [5])
            }
        }
    }
}
