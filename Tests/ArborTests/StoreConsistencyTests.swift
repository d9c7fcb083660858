@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

/// The object-level consistency check that the batch differentials rely on finds what it must.
@Suite("Store consistency: index, foreign-key and join entries against the rows")
struct StoreConsistencyTests {
    @Test("a sound store has no problem; an extra, a missing and a wrong entry are each found")
    func findsDamage() throws {
        let (stack, _) = try BatchUpdateTests.seeded()
        let fleet = stack.context()
        try fleet.performAndWait {
            let bus = Bus(context: fleet)
            bus.name = "B"
            bus.capacity = 1
            let route = Route(context: fleet)
            route.code = "1"
            route.vehicles = [bus]
            try fleet.save()
        }
        #expect(try stack.store.btree().consistencyProblems() == [])
        let keys = try stack.store.btree().keys
        func damage(_ body: (WriteTransaction) throws -> Void) throws {
            let tx = try stack.store.btree().database.beginWrite()
            try body(tx)
            try tx.commit()
        }
        // An entry no row gives.
        try damage { try $0.tree("index.Stop.name").put(TupleKey.encode([.string("Nowhere"), keys.integer(999)]), []) }
        #expect(try stack.store.btree().consistencyProblems().count == 1)
        try damage { _ = try $0.tree("index.Stop.name").delete(TupleKey.encode([.string("Nowhere"), keys.integer(999)])) }
        #expect(try stack.store.btree().consistencyProblems() == [])
        // A missing foreign-key entry.
        let first = try #require(try stack.store.btree().database.view { try $0.tree("fk.StopTime.stop").entries(limit: 1).first })
        try damage { _ = try $0.tree("fk.StopTime.stop").delete(first.key) }
        #expect(try stack.store.btree().consistencyProblems().count == 1)
        try damage { try $0.tree("fk.StopTime.stop").put(first.key, first.value) }
        // One side of a join entry.
        let join = try #require(try stack.store.btree().database.view { try $0.tree("join.Route.vehicles").entries(limit: 1).first })
        try damage { _ = try $0.tree("join.Route.vehicles").delete(join.key) }
        #expect(try stack.store.btree().consistencyProblems().contains { $0.contains("sides differ") })
    }
}
