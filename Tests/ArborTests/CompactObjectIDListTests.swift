@testable import Arbor
import ArborEngineTestSupport
import Testing

/// The ID list of batched results gives back exactly what was appended, whether all IDs share
/// an entity and store (keys only) or not (from the first that differs on).
@Suite struct CompactObjectIDListTests {
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func givesBackWhatWasAppended(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var list = CompactObjectIDList()
        var model: [CompactObjectID] = []
        // Long uniform runs, then now and then another entity, store, or an unsaved object.
        let uniformRun = Int(random.next() % 50)
        for index in 0..<300 {
            let other = index >= uniformRun && random.next() % 7 == 0
            let id = CompactObjectID(key: Int64(bitPattern: random.next()), code: other ? UInt16(random.next() % 3) : 7,
                                     store: other ? Int32(random.next() % 3) - 1 : 0)
            list.append(id)
            model.append(id)
            #expect(list.count == model.count)
        }
        #expect(Array(list) == model)
        #expect(Array(CompactObjectIDList(model)) == model)
        #expect(CompactObjectIDList().isEmpty)
    }
}
