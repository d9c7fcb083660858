import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// Key comparison orders bytes as unsigned, lexicographically, a prefix first — whatever the
/// lengths (its short-key path compares overlapping words instead of bytes).
@Suite("Key comparison against lexicographic order")
struct CompareBytesTests {
    static func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

    @Test("random keys of 0 to 40 bytes with shared prefixes order as Array.lexicographicallyPrecedes")
    func matchesLexicographicOrder() {
        var random = SplitMix64(seed: 0xC0DE)
        // A few byte values, so that keys share prefixes and differ in any position.
        let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]
        func key() -> [UInt8] { (0..<Int(random.next() % 41)).map { _ in alphabet[Int(random.next() % 6)] } }
        for _ in 0..<50_000 {
            let a = key()
            // Often b is a copy of a with one change, or a prefix of it.
            var b = random.next() % 2 == 0 ? a : key()
            if !b.isEmpty, random.next() % 3 == 0 { b[Int(random.next() % UInt64(b.count))] = alphabet[Int(random.next() % 6)] }
            if random.next() % 5 == 0 { b = Array(b.prefix(Int(random.next() % UInt64(b.count + 1)))) }
            let expected = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            #expect(Self.sign(compareBytes(a, b)) == expected, "\(a) vs \(b)")
            #expect(Self.sign(compareBytes(b, a)) == -expected, "\(b) vs \(a)")
        }
    }
}
