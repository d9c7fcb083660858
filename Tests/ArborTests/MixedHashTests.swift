@testable import Arbor
import ArborEngineTestSupport
import Foundation
import Testing

/// Object IDs and row keys hash for sets and dictionaries with `mixedHash`, not `Hasher`: equal
/// values must land together in every table, and keys in a run (primary keys are assigned in
/// order) must spread over a table's buckets.
@Suite struct MixedHashTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [EntityDescription("A", attributes: [AttributeDescription("n", .int64)]),
                                          EntityDescription("B", attributes: [AttributeDescription("n", .int64)])])
    }

    @Test("sets of IDs and dictionaries of row keys agree with a model under random edits", arguments: [UInt64(1), 2, 3])
    func tablesAgreeWithTheModel(seed: UInt64) throws {
        let model = try Self.model()
        let entities = [try #require(model.info(named: "A")), try #require(model.info(named: "B"))]
        let stores = [UUID(), UUID()]
        var random = SplitMix64(seed: seed)
        var ids = Set<ObjectID>()
        var rows: [RowKey: Int] = [:]
        var expectedIDs = Set<String>()
        var expectedRows: [String: Int] = [:]
        for step in 0..<20_000 {
            // Few distinct keys, so that inserts meet present keys and removals find them.
            let entity = entities[Int(random.next() % 2)]
            let key = Int64(random.next() % 600) - 100
            let store = stores[Int(random.next() % 2)]
            let id = ObjectID(info: entity, store: store, key: key)
            let name = "\(entity.name)/\(store)/\(key)"
            let rowName = "\(entity.rootCode)/\(key)"
            if random.next() % 3 == 0 {
                #expect((ids.remove(id) != nil) == (expectedIDs.remove(name) != nil))
                #expect((rows.removeValue(forKey: RowKey(id)) != nil) == (expectedRows.removeValue(forKey: rowName) != nil))
            } else {
                #expect(ids.insert(id).inserted == expectedIDs.insert(name).inserted)
                rows[RowKey(id), default: 0] += step
                expectedRows[rowName, default: 0] += step
            }
        }
        #expect(ids.count == expectedIDs.count)
        #expect(rows.count == expectedRows.count)
        for (key, value) in rows { #expect(expectedRows["\(key.root)/\(key.key)"] == value) }
    }

    @Test("keys in a run spread over a table's buckets")
    func runsSpread() throws {
        let info = try #require(try Self.model().info(named: "A"))
        for seed in [0, 1, 0x5EED, Int.max] {
            var buckets = Set<Int>()
            for key in Int64(1)...65_536 {
                buckets.insert(ObjectID(info: info, store: UUID(uuidString: "00000000-0000-0000-0000-000000000001"), key: key)
                    ._rawHashValue(seed: seed) & 0xFFFF)
            }
            // A random function fills about 63% of 65,536 buckets with as many keys; a hash whose
            // low bits (the bucket) kept too little of the key would crowd a run into few.
            #expect(buckets.count > 35_000, "seed \(seed): \(buckets.count) buckets")
        }
    }
}
