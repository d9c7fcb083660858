import ArborEngineTestSupport
@testable import ArborEngine
import Foundation
import Testing

/// Writers of two handles (as two processes: each its own lock-file mapping and no shared
/// memory) learn which commit is durable through the lock file's durable record, so a handoff
/// needs no extra sync, and an unsynced commit of the other is never taken for durable.
@Suite("The durable commit handed between processes")
struct DurableHandoffTests {
    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    @Test("a full commit of one handle is known durable to the other; a deferred one is not")
    func handoff() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("handoff.arbor")
        var full = Database.Options()
        full.durability = .full
        var deferred = Database.Options()
        deferred.durability = .deferredMetaSync
        let a = try Database.open(path: path, options: full)
        let b = try Database.open(path: path, options: deferred)
        try a.update { tx in try tx.createTree("t").put(Self.key(0), [0]) }
        for round in 1...20 {
            // a's full commit: durable on return, and b knows it without syncing.
            try a.update { tx in try tx.tree("t").put(Self.key(round), [UInt8(round)]) }
            var afterA = try b.currentMeta()
            #expect(b.isKnownDurable(afterA), "round \(round): a's full commit is not known durable to b")
            let planB = try b.planCommit(after: &afterA)
            #expect(planB.slot == afterA.slot ^ 1 && planB.durableTxid == afterA.txid)
            // b's deferred commit: its meta page is not synced, so a must not take it for durable
            // and must write over it, keeping the meta page of the commit before.
            try b.update { tx in try tx.tree("t").put(Self.key(1000 + round), [UInt8(round)]) }
            var afterB = try a.currentMeta()
            #expect(!a.isKnownDurable(afterB), "round \(round): b's deferred commit taken for durable")
            let planA = try a.planCommit(after: &afterB)
            #expect(planA.slot == afterB.slot && planA.durableTxid == afterB.txid - 1)
        }
        let reopened = try Database.open(path: path)
        #expect(try reopened.view { try $0.tree("t").count } == 41)
        #expect(reopened.checkIntegrity().isSound)
    }
}
