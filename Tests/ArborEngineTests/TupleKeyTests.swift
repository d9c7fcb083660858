import ArborEngine
import ArborEngineTestSupport
import Testing

@Suite("Order-preserving tuple keys")
struct TupleKeyTests {
    static func randomValue(_ g: inout SplitMix64) -> TupleValue {
        let specials: [Double] = [-.infinity, -1e300, -1, -Double.leastNonzeroMagnitude, -0.0, 0.0,
                                  Double.leastNonzeroMagnitude, 1, 1e300, .infinity, .nan]
        switch g.next() % 15 {
        case 14: return .integer(randomInteger(&g))
        case 0: return .null
        case 1: return .bool(g.next() % 2 == 0)
        case 2: return .int8(Int8(truncatingIfNeeded: g.next()))
        case 3: return .int16(Int16(truncatingIfNeeded: g.next()))
        case 4: return .int32(Int32(truncatingIfNeeded: g.next() % 7 == 0 ? 0 : g.next()))
        case 5: return .int64(Int64(bitPattern: g.next() % 5 == 0 ? g.next() % 4 : g.next()))
        case 6: return .uint64(g.next() % 3 == 0 ? g.next() % 3 : g.next())
        case 7: return .double(g.next() % 2 == 0 ? specials[Int(g.next() % UInt64(specials.count))]
                                : Double(bitPattern: g.next()))
        case 8: return .float(Float(bitPattern: UInt32(truncatingIfNeeded: g.next())))
        case 9: return .date(Double(Int64(g.next() % 200_000)) - 100_000)
        case 10, 11:
            let alphabet: [String] = ["", "a", "b", "\u{0}", "\u{1}", "é", "ß", "z", "\u{FF}", "😀", "ab"]
            // Up to 24 pieces: strings past a word, where the terminator is found eight bytes at a time.
            return .string((0..<Int(g.next() % (g.next() % 3 == 0 ? 25 : 4))).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }.joined())
        case 12: return .bytes((0..<Int(g.next() % (g.next() % 3 == 0 ? 30 : 5))).map { _ in [0, 1, 0xFE, 0xFF, 7][Int(g.next() % 5)] })
        default: return .uuid((0..<16).map { _ in UInt8(truncatingIfNeeded: g.next() % 3) })
        }
    }

    /// Integers around every byte-length boundary of the compact encoding, and anywhere.
    static func randomInteger(_ g: inout SplitMix64) -> Int64 {
        let bytes = Int(g.next() % 9)
        let magnitude: Int64 = bytes == 8 ? Int64.max : (Int64(1) << (bytes * 8))
        let base = g.next() % 2 == 0 ? magnitude : Int64(bitPattern: g.next())
        let value = base &+ Int64(g.next() % 5) &- 2
        return g.next() % 4 == 0 ? ~value : value
    }

    static func randomTuple(_ g: inout SplitMix64) -> [TupleComponent] {
        (0..<Int(g.next() % 4)).map { _ in TupleComponent(randomValue(&g), descending: g.next() % 4 == 0) }
    }

    @Test("memcmp of encodings orders like the values, for random pairs")
    func orderIsPreserved() {
        var g = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let a = Self.randomTuple(&g), b = g.next() % 3 == 0 ? Self.randomTuple(&g) : Self.mutate(Self.randomTuple(&g), &g)
            let byBytes = Self.sign(TupleKey.encode(a), TupleKey.encode(b))
            let byValues = TupleKey.compare(a, b).signum()
            #expect(byBytes == byValues, "\(a) vs \(b)")
        }
    }

    static func mutate(_ tuple: [TupleComponent], _ g: inout SplitMix64) -> [TupleComponent] {
        var copy = tuple
        if !copy.isEmpty && g.next() % 2 == 0 { copy.removeLast() } else { copy.append(TupleComponent(randomValue(&g))) }
        return copy
    }

    static func sign(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
    }

    @Test("compact integers: shortest form, numeric order across lengths, read in place")
    func compactIntegers() throws {
        let samples: [Int64] = [.min, .min + 1, -1 << 40, -256, -1, 0, 1, 255, 256, 65_535, 65_536, 3_000_000,
                                1 << 55, (1 << 56) - 1, 1 << 56, .max - 1, .max]
        for (value, expectedLength) in zip(samples, [9, 9, 9, 9, 9, 1, 2, 2, 3, 3, 4, 4, 8, 8, 9, 9, 9]) {
            let key = TupleKey.encode([.integer(value)])
            #expect(key.count == expectedLength, "\(value)")
            #expect(try TupleKey.decode(key) == [.integer(value)])
            let read = TupleKey.integer(in: key, at: 0)
            #expect(read?.value == value && read?.end == key.count)
            // The fixed int64 form is read by the same reader.
            #expect(TupleKey.integer(in: TupleKey.encode([.int64(value)]), at: 0)?.value == value)
        }
        for (a, b) in zip(samples, samples.dropFirst()) {
            #expect(TupleKey.encode([.integer(a)]).lexicographicallyPrecedes(TupleKey.encode([.integer(b)])), "\(a) < \(b)")
        }
        // Non-canonical bodies would give one value two keys: rejected by both readers.
        for bad: [UInt8] in [[0x15, 0x00, 0x05], [0x1B, 0x80, 0, 0, 0, 0, 0, 0, 0], [0x12, 0x7F, 0, 0, 0, 0, 0, 0, 0], [0x16, 1, 2]] {
            #expect(throws: ArborError.self) { try TupleKey.decode(bad) }
            #expect(TupleKey.integer(in: bad, at: 0) == nil)
        }
        // The in-memory reader agrees with the generic one and with decoding, on any bytes.
        var g = SplitMix64(seed: 0x1A7)
        for _ in 0..<20_000 {
            let tags: [UInt8] = [0x12, 0x13, 0x14, 0x15, 0x18, 0x1B, 0x23, 0x40, 0x1C]
            var bytes = [tags[Int(g.next() % UInt64(tags.count))]]
            for _ in 0..<Int(g.next() % 10) { bytes.append(g.next() % 3 == 0 ? 0 : UInt8(truncatingIfNeeded: g.next())) }
            let generic = TupleKey.integer(in: bytes, at: 0)
            let inPlace = bytes.withUnsafeBytes { TupleKey.integer(in: $0, at: 0) }
            #expect(generic?.value == inPlace?.value && generic?.end == inPlace?.end, "\(bytes)")
            if let inPlace {
                let decoded = try TupleKey.decode(Array(bytes[..<inPlace.end]))
                #expect(decoded.first?.integerValue == inPlace.value, "\(bytes)")
            }
        }
        // The last component is found by walking the tags.
        let key = TupleKey.encode([.string("a\u{0}b"), .integer(-7), .integer(300)])
        let start = try #require(key.withUnsafeBytes { TupleKey.lastComponentStart(in: $0) })
        #expect(TupleKey.integer(in: key, at: start)?.value == 300)
    }

    @Test("an integer after other bytes, and the last component, read in place as by walking the bytes")
    func integersAfterPrefixes() {
        var g = SplitMix64(seed: 0x1A8)
        let tags: [UInt8] = [0x12, 0x13, 0x14, 0x15, 0x17, 0x1A, 0x1B, 0x23, 0x40, 0x1C, 0x05]
        for _ in 0..<50_000 {
            // Random bytes, then something shaped like a component: a tag and up to nine bytes.
            var bytes = (0..<Int(g.next() % 12)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            let offset = bytes.count
            bytes.append(tags[Int(g.next() % UInt64(tags.count))])
            for _ in 0..<Int(g.next() % 10) { bytes.append(g.next() % 3 == 0 ? 0 : UInt8(truncatingIfNeeded: g.next())) }
            let generic = TupleKey.integer(in: bytes, at: offset)
            let inPlace = bytes.withUnsafeBytes { TupleKey.integer(in: $0, at: offset) }
            #expect(generic?.value == inPlace?.value && generic?.end == inPlace?.end, "\(bytes) at \(offset)")
            // From the component's start: the walk over component ends decides.
            let first = Int(g.next() % UInt64(bytes.count + 1))
            let found = bytes.withUnsafeBytes { TupleKey.lastComponentStart(in: $0, from: first) }
            let walked: Int? = bytes.withUnsafeBytes { key in
                var start = first
                while start < key.count {
                    guard let end = TupleKey.componentEnd(in: key, from: start) else { return nil }
                    if end == key.count { return start }
                    start = end
                }
                return nil
            }
            #expect(found == walked, "\(bytes) from \(first)")
        }
    }

    @Test("one component encodes as the tuple of that component alone")
    func singleComponent() {
        var g = SplitMix64(seed: 10)
        var mismatches: [TupleValue] = []
        for _ in 0..<5_000 {
            let value = Self.randomValue(&g)
            if TupleKey.encode(component: value) != TupleKey.encode([value]) { mismatches.append(value) }
        }
        #expect(mismatches.isEmpty)
    }

    @Test("decoding returns the original values and directions")
    func roundTrip() throws {
        var g = SplitMix64(seed: 8)
        for _ in 0..<5_000 {
            let tuple = Self.randomTuple(&g)
            let decoded = try TupleKey.decodeComponents(TupleKey.encode(tuple))
            #expect(decoded.count == tuple.count)
            for (original, back) in zip(tuple, decoded) {
                #expect(original.descending == back.descending)
                if case .double(let x) = original.value, x.isNaN, case .double(let y) = back.value {
                    #expect(y.isNaN)
                } else if case .float(let x) = original.value, x.isNaN, case .float(let y) = back.value {
                    #expect(y.isNaN)
                } else {
                    #expect(original.value == back.value)
                }
            }
        }
    }

    @Test("componentRange finds each component's bytes in place, and rejects truncated keys")
    func componentRanges() {
        var g = SplitMix64(seed: 9)
        for _ in 0..<5_000 {
            let tuple = Self.randomTuple(&g)
            let key = TupleKey.encode(tuple)
            key.withUnsafeBytes { raw in
                for (position, component) in tuple.enumerated() {
                    let expected = TupleKey.encode([component])
                    let range = TupleKey.componentRange(in: raw, at: position)
                    #expect(range.map { Array(key[$0]) } == expected, "\(tuple) at \(position)")
                }
                #expect(TupleKey.componentRange(in: raw, at: tuple.count) == nil)
                if !key.isEmpty, let last = tuple.indices.last {
                    // Cutting the last byte leaves the last component unreadable.
                    let cut = UnsafeRawBufferPointer(rebasing: raw[0..<(key.count - 1)])
                    #expect(TupleKey.componentRange(in: cut, at: last) == nil)
                }
            }
        }
    }

    @Test("documented double order: -inf < negatives < -0 < +0 < positives < +inf < NaN")
    func doubleOrder() {
        let ordered: [Double] = [-.infinity, -5, -Double.leastNonzeroMagnitude, -0.0, 0.0, Double.leastNonzeroMagnitude, 5, .infinity, .nan]
        let encoded = ordered.map { TupleKey.encode([.double($0)]) }
        for index in 1..<encoded.count { #expect(encoded[index - 1].lexicographicallyPrecedes(encoded[index])) }
    }

    @Test("strings: embedded NUL is escaped, a prefix sorts first, null sorts before everything")
    func stringsAndNull() {
        let a = TupleKey.encode([.string("ab")]), b = TupleKey.encode([.string("abc")])
        let nul = TupleKey.encode([.string("ab\u{0}")])
        #expect(a.lexicographicallyPrecedes(nul) && nul.lexicographicallyPrecedes(b))
        #expect(TupleKey.encode([.null]).lexicographicallyPrecedes(TupleKey.encode([.bool(false)])))
        #expect(TupleKey.encode([.int64(-1)]).lexicographicallyPrecedes(TupleKey.encode([.int64(0)])))
    }

    @Test("malformed keys give errors, not crashes")
    func malformed() {
        for bytes: [UInt8] in [[0x23, 1, 2], [0x40, 0x61, 0x00], [0x40, 0x00, 0x07], [0x99], [0x60, 1], [0x40, 0xC3, 0x28, 0x00, 0x01]] {
            #expect(throws: ArborError.self) { try TupleKey.decode(bytes) }
        }
    }
}
