import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// A node's keys and values, stored back to back, behave as arrays under every edit a B-tree
/// makes (insert, replace, remove, split off, merge, prepend); keys search in byte order.
@Suite("Packed node cells against arrays")
struct PackedBytesTests {
    struct Flagged: Equatable {
        var bytes: [UInt8]
        var flagged: Bool
    }

    /// Splits the cells from `position` off and puts them back in front, in the list and in
    /// its array model alike (what redistributing two leaves does).
    static func rotateTail<Cells: PackedCells, Element>(_ cells: inout Cells, _ model: inout [Element], from position: Int) {
        let tail = cells.extracting(position...)
        cells.removeSubrange(position...)
        let modelTail = Array(model[position...])
        model.removeSubrange(position...)
        cells.prepend(contentsOf: tail, 0..<tail.count)
        model.insert(contentsOf: modelTail, at: 0)
    }

    static func contents(_ list: PackedBytes) -> [Flagged] { (0..<list.count).map { Flagged(bytes: list[$0], flagged: list.isFlagged($0)) } }

    @Test("random edits keep the same strings, flags and lengths as an array")
    func randomEditsMatchArrayModel() {
        var random = SplitMix64(seed: 0x4B45_594C)
        func key() -> Flagged {
            Flagged(bytes: (0..<Int(random.next() % 12)).map { _ in UInt8(random.next() % 4) }, flagged: random.next() % 3 == 0)
        }
        var list = PackedBytes()
        var model: [Flagged] = []
        for step in 0..<20_000 {
            let position = model.isEmpty ? 0 : Int(random.next() % UInt64(model.count))
            switch random.next() % 10 {
            case 0, 1, 2:
                let key = key(), at = Int(random.next() % UInt64(model.count + 1))
                list.insert(key.bytes, at: at, flagged: key.flagged)
                model.insert(key, at: at)
            case 3:
                let key = key()
                list.append(key.bytes, flagged: key.flagged)
                model.append(key)
            case 4 where !model.isEmpty:
                let key = key()
                list.replace(at: position, with: key.bytes, flagged: key.flagged)
                model[position] = key
            case 5 where !model.isEmpty:
                list.remove(at: position)
                model.remove(at: position)
            case 6:
                // Split off a tail and put it back in front (a redistribution's moves).
                Self.rotateTail(&list, &model, from: position)
            case 7:
                // Move a head to another list and back at the end (a merge).
                var other = PackedBytes([key().bytes, key().bytes])
                var modelOther = Self.contents(other)
                other.append(contentsOf: list, 0..<position)
                modelOther += model[0..<position]
                list.removeSubrange(..<position)
                model.removeSubrange(..<position)
                list.append(contentsOf: other)
                model += modelOther
            case 8 where model.count > 64:
                let end = position + Int(random.next() % UInt64(model.count - position + 1))
                list.removeSubrange(position..<end)
                model.removeSubrange(position..<end)
            default:
                break
            }
            if step % 97 == 0 || model.count < 8 {
                #expect(Self.contents(list) == model, "after step \(step)")
                #expect(list.byteCount == model.reduce(0) { $0 + $1.bytes.count })
                for index in model.indices { #expect(list.length(index) == model[index].bytes.count) }
            }
        }
        #expect(Self.contents(list) == model)
    }

    @Test("lowerBound and upperBound find a key's place among sorted keys, as a linear scan does")
    func searchMatchesLinearScan() {
        var random = SplitMix64(seed: 0x5EA2C4)
        func key() -> [UInt8] { (0..<Int(random.next() % 6)).map { _ in UInt8(random.next() % 3) * 0x7F } }
        for _ in 0..<300 {
            let sorted = (0..<Int(random.next() % 40)).map { _ in key() }.sorted { $0.lexicographicallyPrecedes($1) }
            let list = PackedBytes(sorted)
            for _ in 0..<20 {
                let probe = key()
                let lower = sorted.firstIndex { !$0.lexicographicallyPrecedes(probe) } ?? sorted.count
                let upper = sorted.firstIndex { probe.lexicographicallyPrecedes($0) } ?? sorted.count
                probe.withUnsafeBytes { probe in
                    #expect(list.lowerBound(probe) == lower)
                    #expect(list.upperBound(probe) == upper)
                    if lower < sorted.count { #expect(list.bytesEqual(lower, probe) == (sorted[lower] == Array(probe))) }
                }
            }
        }
    }

    @Test("leaf values (empty, inline, overflow references) survive the same edits, with their cell sizes")
    func leafValuesMatchArrayModel() {
        var random = SplitMix64(seed: 0x1EAF)
        func value() -> LeafValue {
            if random.next() % 4 == 0 {
                return .overflow(OverflowRef(firstPage: UInt32(truncatingIfNeeded: random.next()), rawLength: Int(random.next() % (1 << 40)),
                                             storedLength: Int(random.next() % (1 << 40)), compressed: random.next() % 2 == 0))
            }
            return .inline((0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        var values = LeafValues()
        var model: [LeafValue] = []
        for step in 0..<5_000 {
            let position = model.isEmpty ? 0 : Int(random.next() % UInt64(model.count))
            switch random.next() % 6 {
            case 0, 1:
                let value = value(), at = Int(random.next() % UInt64(model.count + 1))
                values.insert(value, at: at)
                model.insert(value, at: at)
            case 2 where !model.isEmpty:
                let value = value()
                values.replace(at: position, with: value)
                model[position] = value
            case 3 where !model.isEmpty:
                values.remove(at: position)
                model.remove(at: position)
            case 4:
                Self.rotateTail(&values, &model, from: position)
            default:
                let value = value()
                values.append(value)
                model.append(value)
            }
            if step % 53 == 0 {
                #expect(values.indices.map { values[$0] } == model, "after step \(step)")
                for index in model.indices {
                    #expect(values.cellBytes(index) == model[index].cellBytes)
                    let inline = values.withInline(index) { Array($0) }
                    if case .inline(let bytes) = model[index] { #expect(inline == bytes) } else { #expect(inline == nil) }
                }
            }
        }
    }
}

/// The edits `PackedBytes` and `LeafValues` share, for test helpers that run on both.
protocol PackedCells {
    var count: Int { get }
    func extracting(_ range: PartialRangeFrom<Int>) -> Self
    mutating func removeSubrange(_ range: PartialRangeFrom<Int>)
    mutating func prepend(contentsOf other: Self, _ range: Range<Int>)
}

extension PackedBytes: PackedCells {}
extension LeafValues: PackedCells {}
