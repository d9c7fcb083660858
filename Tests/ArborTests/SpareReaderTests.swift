@testable import Arbor
import ArborEngine
import ArborTestSupport
import Dispatch
import Foundation
import Testing

/// A store keeps the read transaction its last read closed (`SpareReader`) and opens it again
/// for the next read of the same snapshot; a commit, a transaction something still refers to,
/// or a read on another thread at the same time gets a new one — and every read sees the
/// newest snapshot, as with a new transaction each time.
@Suite("The kept read transaction: reused within a snapshot, never seen stale")
struct SpareReaderTests {
    static func stack() throws -> (TemporaryDirectory, PersistentStoreCoordinator, BTreeStore) {
        let directory = TemporaryDirectory("arbor-tests")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Fixtures.fullModel())
        let store = try coordinator.addPersistentStore(at: directory.file("spare.arbor"))
        return (directory, coordinator, try store.btree())
    }

    /// Saves a stop per name, numbered from `first`.
    static func save(_ coordinator: PersistentStoreCoordinator, names: [String], first: Int = 0) throws {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for (offset, name) in names.enumerated() {
                let stop = Stop(context: context)
                let number = first + offset
                (stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude) = (Int64(number), "S\(number)", name, 52.5, 13.4)
            }
            try context.save()
        }
    }

    @Test("reads of one snapshot share a transaction; a commit gives the next read a new one, showing it")
    func reusedWithinSnapshot() throws {
        let (_, coordinator, store) = try Self.stack()
        try Self.save(coordinator, names: ["Alex"])
        let first = try store.reading { ($0.snapshotID, ObjectIdentifier($0)) }
        let second = try store.reading { ($0.snapshotID, ObjectIdentifier($0)) }
        #expect(second == first)
        try Self.save(coordinator, names: ["Zoo"], first: 1)
        let third = try store.reading { ($0.snapshotID, ObjectIdentifier($0)) }
        #expect(third.0 > first.0)  // (a new transaction: a kept one shows only its own snapshot)
        // Fetches see each commit, through the kept transaction or a new one.
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        for round in 0..<3 {
            let count = try context.performAndWait { try context.count(for: FetchRequest(entityName: "Stop")) }
            #expect(count == 2 + round)
            try Self.save(coordinator, names: ["More \(round)"], first: 2 + round)
        }
    }

    @Test("every read of one snapshot reuses the one kept transaction, not every other read")
    func reusedByEveryRead() throws {
        let (_, coordinator, store) = try Self.stack()
        try Self.save(coordinator, names: ["Alex"])
        // Weak: a strong reference here would make the transaction look shared when a read ends.
        weak var first: Transaction?
        try store.reading { first = $0 }
        for read in 0..<6 {
            #expect(try store.reading { $0 === first }, "read \(read) had a transaction of its own")
        }
        #expect(first != nil)
    }

    @Test("a transaction something still refers to after its read is not kept, and is closed")
    func escapedTransactionNotKept() throws {
        let (_, coordinator, store) = try Self.stack()
        try Self.save(coordinator, names: ["Alex"])
        let escaped = try store.reading { $0 }
        #expect(throws: ArborError.transactionClosed) { _ = try escaped.tree("anything") }
        let next = try store.reading { ObjectIdentifier($0) }
        #expect(next != ObjectIdentifier(escaped))
        #expect(try store.reading { ObjectIdentifier($0) } == next)
    }

    @Test("a read inside a read, and reads on several threads at once, each have a transaction of their own")
    func concurrentReads() throws {
        let (_, coordinator, store) = try Self.stack()
        try Self.save(coordinator, names: (0..<50).map { "Stop \($0)" })
        let (outer, inner) = try store.reading { outer in (ObjectIdentifier(outer), try store.reading { ObjectIdentifier($0) }) }
        #expect(outer != inner)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            for round in 0..<40 {
                let limit = (worker + round) % 50
                let found = try? context.performAndWait {
                    var request = FetchRequest(entityName: "Stop")
                    request.predicate = try ObjectPredicate(format: "identifier < \(limit)")
                    return try context.fetch(request, as: Stop.self).count
                }
                let ok = found == limit
                if !ok { failures.withLock { $0 += 1 } }
                context.reset()
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }
}
