import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Tree.withValueInMemory(forKey:_:)` reads nothing from the file: it answers as `get` does
/// when every page on the key's path is in memory and says `.notInMemory` otherwise. A read
/// that just loaded a key's path makes the next in-memory lookup of that key answer; a writer
/// sees everything as in memory.
@Suite("Point lookups that read only pages in memory")
struct InMemoryLookupTests {
    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.integer(Int64(number))]) }

    enum Answer: Equatable {
        case found([UInt8]), absent, notInMemory
    }

    static func inMemory(_ tree: Tree, _ key: [UInt8]) throws -> Answer {
        switch try key.withUnsafeBytes({ try tree.withValueInMemory(forKey: $0) { Array($0) } }) {
        case .found(let value): return .found(value)
        case .absent: return .absent
        case .notInMemory: return .notInMemory
        }
    }

    static func stored(_ tree: Tree, _ key: [UInt8]) throws -> Answer {
        try tree.get(key).map(Answer.found) ?? .absent
    }

    @Test("answers as get where the path is in memory, and reads nothing otherwise", arguments: [UInt64(1), 2])
    func answersAsGet(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let file = SimulatedFile()
        // Even keys only: odd ones are absent. Some values overflow.
        var db: Database? = try Database.open(file: file, options: .init(pageSize: 4096))
        try db?.update { tx in
            let tree = try tx.createTree("rows")
            for number in stride(from: 0, to: 6_000, by: 2) {
                let length = number % 97 == 0 ? 5_000 : 20
                try tree.put(Self.key(number), [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: length))
            }
            #expect(tree.info.depth >= 2)
            // A writer: everything counts as in memory.
            for _ in 0..<300 {
                let key = Self.key(Int(random.next() % 6_100))
                #expect(try Self.inMemory(tree, key) == Self.stored(tree, key))
            }
        }
        db = nil
        // Reopened with a cache of eight pages: most paths are not in memory.
        let reopened = try Database.open(file: file, options: .init(pageSize: 4096, cacheBytes: 8 * 4096))
        var notInMemory = 0, answered = 0
        for _ in 0..<2_000 {
            // A transaction per key: a transaction also keeps the pages it read recently.
            try reopened.view { tx in
                let tree = try tx.tree("rows")
                let key = Self.key(Int(random.next() % 6_100))
                let before = try Self.inMemory(tree, key)
                let expected = try Self.stored(tree, key)
                if before == .notInMemory { notInMemory += 1 } else { answered += 1 }
                #expect(before == .notInMemory || before == expected, "key \(key)")
                // `get` just loaded the key's path (fewer pages than the cache holds).
                #expect(try Self.inMemory(tree, key) == expected, "key \(key) after get")
            }
        }
        #expect(notInMemory > 100 && answered > 100)
    }
}
