@testable import ArborEngine
import ArborEngineTestSupport
import Testing

/// `FixedComponentRange` decides in place what comparing encoded components decides, and a scan
/// that applies a filter's `scanRange` itself gives the body the same entries as one that asks
/// the filter about every entry, counting every entry it skips.
@Suite("Fixed-size component ranges, tested in place and by scans")
struct FixedComponentRangeTests {
    /// A random component value: mostly fixed-size kinds (the range's business), some strings
    /// (which it cannot decide) and nulls (never in a range).
    static func value(_ random: inout SplitMix64) -> TupleValue {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return .null
        case 1: return .string(String(repeating: "a", count: Int.random(in: 0...3, using: &random)))
        case 2: return .integer(Int64.random(in: -1_000...1_000, using: &random))
        case 3: return .integer(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 4: return .int64(Int64.random(in: -50...50, using: &random))
        case 5: return .date(Double(Int.random(in: -50...50, using: &random)))
        case 6: return .int32(Int32.random(in: -50...50, using: &random))
        case 7: return .bool(Bool.random(using: &random))
        default: return .double(Double(Int.random(in: -60...60, using: &random)) / 4)
        }
    }

    /// Bounds: one or two, each of a fixed-size kind.
    static func bound(_ random: inout SplitMix64) -> (bytes: [UInt8], inclusive: Bool) {
        var encoded: [UInt8]
        repeat {
            encoded = TupleKey.encode([Self.value(&random)])
        } while encoded[0] == 0x05 || FixedComponentRange.fixedSize(ofTag: encoded[0]) != encoded.count
        return (encoded, Bool.random(using: &random))
    }

    /// The model: bytewise comparison of the encoded component with the encoded bounds, null
    /// outside every range; nil when a component up to `position` is not of a fixed size.
    static func model(_ values: [TupleValue], position: Int, lower: (bytes: [UInt8], inclusive: Bool)?,
                      upper: (bytes: [UInt8], inclusive: Bool)?) -> Bool? {
        let encoded = values.map { TupleKey.encode([$0]) }
        guard position < encoded.count,
              encoded[...position].allSatisfy({ FixedComponentRange.fixedSize(ofTag: $0[0]) == $0.count }) else { return nil }
        let component = encoded[position]
        if values[position] == .null { return false }
        if let lower {
            let order = compare(component, lower.bytes)
            if order < 0 || (order == 0 && !lower.inclusive) { return false }
        }
        if let upper {
            let order = compare(component, upper.bytes)
            if order > 0 || (order == 0 && !upper.inclusive) { return false }
        }
        return true
    }

    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count - b.count
    }

    @Test("the verdict is the bytewise comparison whenever the components before are of fixed size")
    func verdictMatchesTheModel() throws {
        var random = SplitMix64(seed: 0xF1C5)
        var decided = 0
        for _ in 0..<20_000 {
            let position = Int.random(in: 0...2, using: &random)
            let lower = Bool.random(using: &random) ? Self.bound(&random) : nil
            let upper = lower == nil || Bool.random(using: &random) ? Self.bound(&random) : nil
            let range = try #require(FixedComponentRange(position: position, lower: lower, upper: upper))
            let values = (0..<Int.random(in: 1...4, using: &random)).map { _ in Self.value(&random) }
            let key = TupleKey.encode(values)
            let expected = Self.model(values, position: position, lower: lower, upper: upper)
            let found = key.withUnsafeBytes { range.verdict($0) }
            #expect(found == expected, "\(values) at \(position), bounds \(String(describing: lower)) \(String(describing: upper))")
            if found != nil { decided += 1 }
        }
        #expect(decided > 5_000)
        // Bounds that are not of a fixed size, or no bound at all, make no range.
        #expect(FixedComponentRange(position: 0, lower: (TupleKey.encode([.string("a")]), true), upper: nil) == nil)
        #expect(FixedComponentRange(position: 0, lower: nil, upper: nil) == nil)
    }

    /// Values of every kind, with the edges of each: sign changes, the compact integers' byte
    /// counts, NaN and signed zeros.
    static func anyKindValue(_ random: inout SplitMix64) -> TupleValue {
        let edges: [Int64] = [0, 1, -1, 127, 128, 255, 256, 65_535, 65_536, 1 << 40, Int64.max, Int64.min]
        let wide = Int64.random(in: Int64.min...Int64.max, using: &random)
        switch Int.random(in: 0..<17, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int8(Int8(truncatingIfNeeded: wide))
        case 3: return .int16(Int16(truncatingIfNeeded: wide))
        case 4: return .int32(Int32(truncatingIfNeeded: wide))
        case 5: return .int64(wide)
        case 6: return .integer(edges[Int.random(in: 0..<edges.count, using: &random)])
        case 7: return .integer(wide >> Int64.random(in: 0...63, using: &random))
        case 8: return .uint8(UInt8(truncatingIfNeeded: wide))
        case 9: return .uint16(UInt16(truncatingIfNeeded: wide))
        case 10: return .uint32(UInt32(truncatingIfNeeded: wide))
        case 11: return .uint64(UInt64(bitPattern: wide))
        case 12: return .float([Float.nan, 0, -0.0, .infinity, -1.5, Float(bitPattern: UInt32(truncatingIfNeeded: wide))][Int.random(in: 0..<6, using: &random)])
        case 13: return .double([Double.nan, 0, -0.0, -.infinity, 52.52, Double(bitPattern: UInt64(bitPattern: wide))][Int.random(in: 0..<6, using: &random)])
        case 14: return .date(Double(wide >> 20))
        case 15: return .string(String(repeating: "é", count: Int.random(in: 0...2, using: &random)))
        default: return Bool.random(using: &random) ? .bytes([1, 2]) : .uuid([UInt8](repeating: 7, count: 16))
        }
    }

    @Test("a value's fixed component is the tag and body of its encoding, for every kind; nil for strings, bytes and UUIDs")
    func fixedComponentMatchesTheEncoding() {
        var random = SplitMix64(seed: 0xF1C6)
        for _ in 0..<20_000 {
            let value = Self.anyKindValue(&random)
            let encoded = TupleKey.encode(component: value)
            let fixed = FixedComponentRange.fixedSize(ofTag: encoded[0]) == encoded.count && encoded.count <= 9
            let expected = fixed ? (encoded[0], encoded.withUnsafeBytes { FixedComponentRange.body(of: $0) }) : nil
            let found = TupleKey.fixedComponent(value)
            #expect(found?.tag == expected?.0 && found?.body == expected?.1, "\(value): \(encoded)")
        }
    }

    @Test("a range given by values decides every key as the range given by their encodings")
    func rangeFromValuesMatchesRangeFromBytes() throws {
        var random = SplitMix64(seed: 0xF1C7)
        for _ in 0..<5_000 {
            let position = Int.random(in: 0...2, using: &random)
            func bound() -> (value: TupleValue, inclusive: Bool)? {
                Int.random(in: 0..<3, using: &random) == 0 ? nil : (Self.anyKindValue(&random), Bool.random(using: &random))
            }
            let lower = bound(), upper = bound()
            let fromBytes = FixedComponentRange(position: position, lower: lower.map { (TupleKey.encode(component: $0.value), $0.inclusive) },
                                                upper: upper.map { (TupleKey.encode(component: $0.value), $0.inclusive) })
            let fromValues = FixedComponentRange(position: position, lowerValue: lower, upperValue: upper)
            #expect((fromBytes == nil) == (fromValues == nil))
            guard let fromBytes, let fromValues else { continue }
            for _ in 0..<8 {
                let key = TupleKey.encode((0..<3).map { _ in Self.anyKindValue(&random) })
                #expect(key.withUnsafeBytes { fromBytes.verdict($0) == fromValues.verdict($0) }, "\(key)")
            }
        }
    }

    /// Admits keys whose component 1 the model puts in the range (strings: always), until the
    /// body has seen `openAfter` entries; from then on admits everything and offers no scan
    /// range (as a limited, ordered walk does past its limit). Counts what it is told.
    final class SecondComponentFilter: ScanKeyFilter {
        let lower: (bytes: [UInt8], inclusive: Bool)?, upper: (bytes: [UInt8], inclusive: Bool)?
        let range: FixedComponentRange?
        let openAfter: Int
        var seenByBody = 0
        var admitsCalls = 0, rejectedByScan = 0
        init(lower: (bytes: [UInt8], inclusive: Bool)?, upper: (bytes: [UInt8], inclusive: Bool)?, openAfter: Int) {
            (self.lower, self.upper, self.openAfter) = (lower, upper, openAfter)
            range = FixedComponentRange(position: 1, lower: lower, upper: upper)
        }
        var scanRange: FixedComponentRange? { seenByBody < openAfter ? range : nil }
        func scanRejected(_ count: Int) { rejectedByScan += count }
        func admits(_ key: UnsafeRawBufferPointer) throws -> Bool {
            admitsCalls += 1
            guard seenByBody < openAfter else { return true }
            let values = try TupleKey.decode(Array(key))
            return FixedComponentRangeTests.model(values, position: 1, lower: lower, upper: upper) ?? true
        }
    }

    @Test("a scan skips what the range rejects, counts it, and still calls the filter every 1,024 rejections",
          arguments: [UInt64(1), 2, 3, 4])
    func scansAgreeWithTheFilter(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile(), options: Database.Options(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("index")
            for number in 0..<6_000 {
                // Mostly numbers in the second component; the range below keeps a few of them.
                try tree.put(TupleKey.encode([.integer(Int64(number)), Self.value(&random)]), [UInt8(number & 0xFF)])
            }
        }
        try db.view { tx in
            let tree = try tx.tree("index")
            for _ in 0..<60 {
                let lower = Bool.random(using: &random) ? Self.bound(&random) : nil
                let upper = lower == nil || Bool.random(using: &random) ? Self.bound(&random) : nil
                let openAfter = Int.random(in: 0..<3, using: &random) == 0 ? Int.random(in: 0...5, using: &random) : Int.max
                let stopAfter = Int.random(in: 0..<3, using: &random) == 0 ? Int.random(in: 1...30, using: &random) : Int.max
                let reverse = Bool.random(using: &random)
                // The model: the filter asked about every entry, in scan order.
                var entries = try tree.entries(in: .all)
                if reverse { entries.reverse() }
                var expected: [[UInt8]] = [], examined = 0
                for entry in entries {
                    examined += 1
                    let open = expected.count >= openAfter
                    let values = try TupleKey.decode(entry.key)
                    guard open || (Self.model(values, position: 1, lower: lower, upper: upper) ?? true) else { continue }
                    expected.append(entry.key)
                    if expected.count >= stopAfter { break }
                }
                let filter = SecondComponentFilter(lower: lower, upper: upper, openAfter: openAfter)
                var seen: [[UInt8]] = []
                try tree.forEachUnsafe(reverse: reverse, filter: filter) { key, _ in
                    seen.append(Array(key))
                    filter.seenByBody += 1
                    return seen.count < stopAfter
                }
                #expect(seen == expected)
                // Every entry examined was either skipped and counted by the scan or shown to
                // the filter; long runs of skipped entries still reach the filter.
                #expect(filter.rejectedByScan + filter.admitsCalls == examined)
                #expect(filter.admitsCalls >= filter.rejectedByScan / 1_023)
            }
        }
    }

    @Test("in a scan that rejects every entry, every 1,024th reaches the filter and the rest are counted")
    func everyThousandTwentyFourth() throws {
        let db = try Database.open(file: SimulatedFile(), options: Database.Options(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("index")
            for number in 0..<5_000 { try tree.put(TupleKey.encode([.integer(Int64(number)), .double(Double(number))]), []) }
        }
        try db.view { tx in
            for reverse in [false, true] {
                // Above every double: nothing is in the range.
                let filter = SecondComponentFilter(lower: (TupleKey.encode([.double(1e9)]), true), upper: nil, openAfter: .max)
                try tx.tree("index").forEachUnsafe(reverse: reverse, filter: filter) { _, _ in
                    Issue.record("an entry reached the body")
                    return true
                }
                #expect(filter.admitsCalls == 5_000 / 1_024)
                #expect(filter.rejectedByScan == 5_000 - 5_000 / 1_024)
            }
        }
    }
}
