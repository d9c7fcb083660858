import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// A clean page's searches (`lowerBound` for leaves, `childIndex` for branches: every lookup
/// and range scan passes here once per level) answer exactly as a linear scan does. Pages of
/// real trees are searched for every fifth key they hold, its neighbours, keys from elsewhere and
/// keys of other shapes, with keys spread evenly (dense integers), unevenly (clusters, random
/// 64-bit values, doubles), as strings and mixed.
@Suite("Page search answers as a linear scan")
struct PageSearchTests {
    enum Kind: String, CaseIterable {
        case denseIntegers, clusteredIntegers, randomIntegers, doubles, strings, mixed
        /// Keys of 1 to 200 bytes sharing long prefixes, every other value 70 bytes: cells whose
        /// key length or value header takes two bytes among common ones, and ties of eight-byte
        /// prefixes.
        case longKeys
    }

    static func keys(_ kind: Kind, _ random: inout SplitMix64) -> [[UInt8]] {
        // Enough keys for branch pages of many separators (small keys fill a leaf with hundreds).
        (0..<40_000).map { index -> [UInt8] in
            switch kind {
            case .denseIntegers: return TupleKey.encode([.integer(Int64(index))])
            case .clusteredIntegers:
                // A few far-apart clusters.
                return TupleKey.encode([.integer(Int64(random.next() % 4) * 1_000_000_000 + Int64(random.next() % 20_000))])
            case .randomIntegers: return TupleKey.encode([.integer(Int64(bitPattern: random.next()))])
            case .doubles:
                return TupleKey.encode([.double(13.3 + Double(random.next() % 100_000) / 1e6), .integer(Int64(index))])
            case .strings:
                return TupleKey.encode([.string(String((0..<Int(random.next() % 12)).map { _ in Array("abcé0")[Int(random.next() % 5)] })), .integer(Int64(index))])
            case .longKeys:
                let length = Int(random.next() % 200)
                return [0x20] + Array(repeating: 0x61, count: length) + TupleKey.encode([.integer(Int64(index))])
            case .mixed:
                let values: [TupleValue] = [.integer(Int64(random.next() % 50)), .double(Double(random.next() % 50)), .string("s\(random.next() % 50)"), .null]
                return TupleKey.encode([values[Int(random.next() % 4)], .integer(Int64(index))])
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func searchesMatchALinearScan(kind: Kind) throws {
        var random = SplitMix64(seed: UInt64(Kind.allCases.firstIndex(of: kind) ?? 0) + 40)
        let keys = Self.keys(kind, &random)
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in
            let tree = try tx.createTree("t")
            for (index, key) in keys.enumerated() {
                try tree.put(key, kind == .longKeys && index % 2 == 0 ? Array(repeating: 7, count: 70) : [1, 2, 3])
            }
        }
        let image = file.currentBytes
        let pageSize = 4096
        var searchedPages = 0, interpolatedPages = 0
        for start in stride(from: 2 * pageSize, to: image.count, by: pageSize) {
            let type = PageType(rawValue: image[start + PageHeader.type])
            guard type == .compactLeaf || type == .leaf || type == .branch else { continue }
            let page = try image[start..<(start + pageSize)].withUnsafeBytes {
                try Page.validated(id: PageID(start / pageSize), image: $0, verifyChecksum: true)
            }
            guard page.count > 0 else { continue }
            // Branch searches go through the separator prefixes built at load.
            #expect((page.separatorPrefixes != nil) == (page.type == .branch))
            if page.leafKeyPrefixes != nil { interpolatedPages += 1 }
            searchedPages += 1
            let pageKeys = (0..<page.count).map { page.key($0) }
            var targets: [[UInt8]] = [[], [0x00], Array(repeating: 0xFF, count: 12)]
            for (position, key) in pageKeys.enumerated() where position % 5 == 0 || position == pageKeys.count - 1 {
                targets.append(key)
                var below = key, above = key
                if let last = below.last, last > 0 { below[below.count - 1] = last - 1 }
                if let last = above.last, last < 0xFF { above[above.count - 1] = last + 1 }
                targets += [below, above, Array(key.dropLast()), key + [0]]
            }
            for _ in 0..<50 { targets.append(keys[Int(random.next() % UInt64(keys.count))]) }
            for target in targets {
                let lower = pageKeys.firstIndex { compareBytes($0, target) >= 0 } ?? pageKeys.count
                let child = pageKeys.firstIndex { compareBytes($0, target) > 0 } ?? pageKeys.count
                target.withUnsafeBytes { bytes in
                    #expect(page.lowerBound(bytes) == lower, "\(kind) page \(page.id) lowerBound of \(target)")
                    #expect(page.childIndex(for: bytes) == child, "\(kind) page \(page.id) childIndex of \(target)")
                }
            }
        }
        #expect(searchedPages > 40)
        // Leaves of single integers (one key of at most eight bytes) start from a guess.
        if kind == .denseIntegers || kind == .clusteredIntegers { #expect(interpolatedPages > 40) }
        if kind == .doubles { #expect(interpolatedPages == 0) }
    }

    /// `InterpolationSearch.lowerBound` finds the first position not before the target from any
    /// guess, near or far, inside or outside the range, over sorted runs with repeats and gaps;
    /// `guess` stays inside the range it predicts for.
    @Test("a search from a guess answers as a linear scan, whatever the guess")
    func interpolatedSearchMatchesALinearScan() {
        var random = SplitMix64(seed: 91)
        for _ in 0..<3_000 {
            let count = 2 + Int(random.next() % 300)
            var values: [UInt64] = []
            var value = random.next() % 1_000
            for _ in 0..<count {
                values.append(value)
                value += [0, 1, 1, 1, 7, 1_000_000][Int(random.next() % 6)]
            }
            let target = random.next() % 2 == 0 ? values[Int(random.next() % UInt64(count))] + random.next() % 2 : random.next() % (value + 2)
            let expected = values.firstIndex { $0 >= target } ?? count
            if let guess = InterpolationSearch.guess(target, first: values[0], last: values[count - 1], count: count) {
                #expect(values[0] < target && target < values[count - 1])
                #expect((0..<(count - 1)).contains(guess))
                // What the leaf search relies on: the answer lies strictly inside.
                #expect(InterpolationSearch.lowerBound(low: 1, high: count - 1, guess: guess) { values[$0] < target } == expected)
            } else {
                #expect(values[0] >= target || target >= values[count - 1])
            }
            let low = min(expected, Int(random.next() % UInt64(count + 1))), high = max(expected, Int(random.next() % UInt64(count + 1)))
            let anyGuess = Int(random.next() % UInt64(count + 20)) - 10
            var calls = 0
            let found = InterpolationSearch.lowerBound(low: low, high: high, guess: anyGuess) { index in
                calls += 1
                #expect(index >= low && index < high, "probe \(index) outside \(low) ..< \(high)")
                return values[index] < target
            }
            #expect(found == expected, "\(values) target \(target) guess \(anyGuess) in \(low) ... \(high)")
            // Galloping then bisecting: about twice a bisection's steps at worst.
            #expect(calls <= 2 * (Int.bitWidth - (high - low + 1).leadingZeroBitCount) + 2)
        }
    }

    /// Where two keys' search prefixes differ, they order as the keys do; where they are equal,
    /// the keys' first eight bytes agree. Short keys, zero bytes and 0xFF bytes are where a
    /// padded prefix could mislead.
    @Test("search prefixes order as the keys they start")
    func searchPrefixesOrderAsKeys() {
        var random = SplitMix64(seed: 77)
        func key() -> [UInt8] {
            (0..<Int(random.next() % 11)).map { _ in [0x00, 0x01, 0x7F, 0x80, 0xFF, UInt8(truncatingIfNeeded: random.next())][Int(random.next() % 6)] }
        }
        /// The definition: the first eight bytes, big-endian, zero-padded.
        func reference(_ key: [UInt8]) -> UInt64 {
            (key + [UInt8](repeating: 0, count: 8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
        }
        for _ in 0..<20_000 {
            let a = key(), b = key()
            let (pa, pb) = a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in (Page.searchPrefix(pa), Page.searchPrefix(pb)) } }
            #expect(pa == reference(a), "\(a)")
            let order = compareBytes(a, b)
            if pa < pb { #expect(order < 0, "\(a) \(b)") }
            if pa > pb { #expect(order > 0, "\(a) \(b)") }
            if pa == pb { #expect((a + [UInt8](repeating: 0, count: 8)).prefix(8) == (b + [UInt8](repeating: 0, count: 8)).prefix(8), "\(a) \(b)") }
        }
    }
}
