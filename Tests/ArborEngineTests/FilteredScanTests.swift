import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Tree.forEachUnsafe(in:reverse:filter:_:)` must call its body for exactly the entries of the
/// range the filter admits, in order, forward and in reverse, stopping where the body says;
/// values inline or in overflow chains; in a read transaction (clean pages) and in a write
/// transaction with unsaved nodes; and a filter's error must end the scan.
@Suite("Range scans with a key filter")
struct FilteredScanTests {
    /// Admits keys whose last byte is below `threshold`; throws on `poison`; counts its calls.
    final class LastByteFilter: ScanKeyFilter {
        let threshold: UInt8
        let poison: [UInt8]?
        var calls = 0
        init(threshold: UInt8, poison: [UInt8]? = nil) {
            self.threshold = threshold
            self.poison = poison
        }
        func admits(_ key: UnsafeRawBufferPointer) throws -> Bool {
            calls += 1
            if let poison, key.elementsEqual(poison) { throw ArborError.malformedTupleKey(offset: 0, detail: "poisoned key") }
            return (key.last ?? 0) < threshold
        }
    }

    /// An entry as seen by a body: its key, and its value's length and byte sum (short
    /// failure messages; overflow values are thousands of bytes).
    struct Entry: Equatable {
        var key: [UInt8]
        var valueLength: Int
        var valueSum: Int
        init(_ key: some Collection<UInt8>, _ value: some Collection<UInt8>) {
            self.key = Array(key)
            valueLength = value.count
            valueSum = value.reduce(0) { $0 + Int($1) }
        }
    }

    struct Expected: Equatable {
        var entries: [Entry]
        var filterCalls: Int
    }

    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    static func check(_ tree: Tree, _ random: inout SplitMix64, scans: Int) throws {
        for _ in 0..<scans {
            let low = Int.random(in: -5...1_600, using: &random)
            let high = low + Int.random(in: 0...700, using: &random)
            let range = KeyRange(lower: .init(key(low), inclusive: Bool.random(using: &random)),
                                 upper: .init(key(high), inclusive: Bool.random(using: &random)))
            let reverse = Bool.random(using: &random)
            let threshold = UInt8.random(in: 0...255, using: &random)
            let stopAfter = Int.random(in: 0..<4, using: &random) == 0 ? Int.random(in: 1...20, using: &random) : Int.max
            // The model: every entry of the range in scan order, filtered, cut where the body stops.
            var inRange = try tree.entries(in: range)
            if reverse { inRange.reverse() }
            var expected = Expected(entries: [], filterCalls: 0)
            for entry in inRange {
                expected.filterCalls += 1
                guard (entry.key.last ?? 0) < threshold else { continue }
                expected.entries.append(Entry(entry.key, entry.value))
                if expected.entries.count >= stopAfter { break }
            }
            let filter = LastByteFilter(threshold: threshold)
            var seen: [Entry] = []
            try tree.forEachUnsafe(in: range, reverse: reverse, filter: filter) { key, value in
                seen.append(Entry(key, value))
                return seen.count < stopAfter
            }
            #expect(Expected(entries: seen, filterCalls: filter.calls) == expected, "range \(low)...\(high) reverse \(reverse) threshold \(threshold)")
        }
    }

    @Test("calls the body for exactly the admitted entries of random ranges", arguments: [UInt64(1), 2, 3])
    func admittedEntriesOnly(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile(), options: Database.Options(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("index")
            for number in stride(from: 0, to: 1_500, by: Int.random(in: 1...3, using: &random)) {
                // Mostly short values, a few long enough for an overflow chain.
                let length = Int.random(in: 0..<40, using: &random) == 0 ? 5000 : Int.random(in: 0...24, using: &random)
                try tree.put(Self.key(number), [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: length))
            }
            #expect(tree.info.depth >= 2)
            try Self.check(tree, &random, scans: 150)  // unsaved nodes of the writer
        }
        try db.view { tx in try Self.check(try tx.tree("index"), &random, scans: 400) }
    }

    @Test("a filter's error ends the scan and reaches the caller")
    func filterErrorPropagates() throws {
        let db = try Database.open(file: SimulatedFile(), options: Database.Options(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("index")
            for number in 0..<2_000 { try tree.put(Self.key(number), [1, 2, 3]) }
        }
        try db.view { tx in
            let filter = LastByteFilter(threshold: 255, poison: Self.key(1_234))
            var visited = 0
            #expect(throws: ArborError.self) {
                try tx.tree("index").forEachUnsafe(filter: filter) { _, _ in
                    visited += 1
                    return true
                }
            }
            #expect(filter.calls == 1_235)
            #expect(visited == 1_234 - (0..<1_234).filter { Self.key($0).last ?? 0 >= 255 }.count)
        }
    }
}
