import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// A node's keys, stored back to back, behave as an array of keys under every edit a B-tree
/// makes (insert, replace, remove, split off, merge, prepend) and search in byte order.
@Suite("Node key list against an array of keys")
struct KeyListTests {
    static func contents(_ list: KeyList) -> [[UInt8]] { (0..<list.count).map { list[$0] } }

    @Test("random edits keep the same keys, lengths and searches as [[UInt8]]")
    func randomEditsMatchArrayModel() {
        var random = SplitMix64(seed: 0x4B45_594C)
        func key() -> [UInt8] { (0..<Int(random.next() % 12)).map { _ in UInt8(random.next() % 4) } }
        var list = KeyList()
        var model: [[UInt8]] = []
        for step in 0..<20_000 {
            let position = model.isEmpty ? 0 : Int(random.next() % UInt64(model.count))
            switch random.next() % 10 {
            case 0, 1, 2:
                let key = key(), at = Int(random.next() % UInt64(model.count + 1))
                list.insert(key, at: at)
                model.insert(key, at: at)
            case 3:
                let key = key()
                list.append(key)
                model.append(key)
            case 4 where !model.isEmpty:
                let key = key()
                list.replace(at: position, with: key)
                model[position] = key
            case 5 where !model.isEmpty:
                list.remove(at: position)
                model.remove(at: position)
            case 6:
                // Split off a tail and put it back in front (a redistribution's moves).
                let tail = list.extracting(position...)
                list.removeSubrange(position...)
                let modelTail = Array(model[position...])
                model.removeSubrange(position...)
                list.prepend(contentsOf: tail, 0..<tail.count)
                model.insert(contentsOf: modelTail, at: 0)
            case 7:
                // Move a head to another list and back at the end (a merge).
                var other = KeyList([key(), key()])
                var modelOther = Array(Self.contents(other))
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
                #expect(list.byteCount == model.reduce(0) { $0 + $1.count })
                for index in model.indices { #expect(list.length(index) == model[index].count) }
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
            let list = KeyList(sorted)
            for _ in 0..<20 {
                let probe = key()
                let lower = sorted.firstIndex { !$0.lexicographicallyPrecedes(probe) } ?? sorted.count
                let upper = sorted.firstIndex { probe.lexicographicallyPrecedes($0) } ?? sorted.count
                probe.withUnsafeBytes { probe in
                    #expect(list.lowerBound(probe) == lower)
                    #expect(list.upperBound(probe) == upper)
                    if lower < sorted.count { #expect(list.keyEquals(lower, probe) == (sorted[lower] == Array(probe))) }
                }
            }
        }
    }
}
