import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// The order a tree's collected changes are applied in: ascending keys, the last change to a
/// key winning, whatever order and shape of keys they came in.
@Suite("Tree changes in key order")
struct TreeChangesOrderTests {
    /// The reference: a stable comparison sort by key, then the last change of each key.
    static func expectedOrder(_ keys: [[UInt8]]) -> [Int] {
        let sorted = keys.indices.sorted { a, b in
            let order = compareBytes(keys[a], keys[b])
            return order != 0 ? order < 0 : a < b
        }
        var result: [Int] = []
        for position in sorted {
            if let last = result.last, keys[last] == keys[position] { result[result.count - 1] = position } else { result.append(position) }
        }
        return result
    }

    static func changes(_ keys: [[UInt8]]) -> TreeChanges {
        var changes = TreeChanges()
        for (index, key) in keys.enumerated() {
            if index % 3 == 0 { changes.delete(key) } else { changes.put(key, [UInt8(index & 0xFF)]) }
        }
        return changes
    }

    /// Keys built to land in every branch: shared prefixes longer than a word, runs of one
    /// key, keys that differ only by trailing zero bytes, empty keys, long keys.
    static func key(_ random: inout SplitMix64, family: Int) -> [UInt8] {
        switch family {
        case 0: // Short random.
            return (0..<Int(random.next() % 6)).map { _ in UInt8(random.next() % 4) }
        case 1: // A shared 13-byte prefix, then a few random bytes.
            return [UInt8](repeating: 0x42, count: 13) + (0..<Int(random.next() % 4)).map { _ in UInt8(random.next() % 3) }
        case 2: // One of a few keys, zero-padded to varied lengths.
            return [0x10, UInt8(random.next() % 3)] + [UInt8](repeating: 0, count: Int(random.next() % 18))
        case 3: // Index-like: a compact integer, a big-endian double, a primary key.
            let owner = random.next() % 50, seconds = random.next() % 100_000, key = random.next() % 1_000_000
            return [0x14, UInt8(owner)] + withUnsafeBytes(of: Double(seconds).bitPattern.bigEndian, Array.init)
                + [0x17] + withUnsafeBytes(of: UInt32(key).bigEndian) { Array($0.dropFirst()) }
        default: // Long, mostly equal.
            return [UInt8](repeating: 7, count: 40) + [UInt8(random.next() % 2)] + [UInt8](repeating: 9, count: Int(random.next() % 30))
        }
    }

    @Test("random keys of every shape, from a few to tens of thousands, against a comparison sort", arguments: [1, 2, 47, 48, 300, 5_000, 20_000])
    func randomKeys(count: Int) {
        var random = SplitMix64(seed: UInt64(0x0DE5 + count))
        for family in -1..<5 {
            let keys = (0..<count).map { _ in Self.key(&random, family: family < 0 ? Int(random.next() % 5) : family) }
            #expect(Self.changes(keys).order() == Self.expectedOrder(keys), "family \(family)")
        }
    }

    @Test("given in key order, or in reverse, or all one key")
    func presortedAndDegenerate() {
        let ascending = (0..<1_000).map { [UInt8(($0 >> 8) & 0xFF), UInt8($0 & 0xFF)] }
        #expect(Self.changes(ascending).order() == Array(0..<1_000))
        let descending = Array(ascending.reversed())
        #expect(Self.changes(descending).order() == Array((0..<1_000).reversed()))
        let same = [[UInt8]](repeating: [1, 2, 3], count: 500)
        #expect(Self.changes(same).order() == [499])
        #expect(Self.changes([]).order() == [])
    }
}
