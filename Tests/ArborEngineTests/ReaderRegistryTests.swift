@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// The lock-file slot a handle publishes for its readers: the oldest and newest snapshots they
/// use, as another handle (another process) sees them; the handle itself knows each snapshot.
@Suite("Reader registry: the published range spans the oldest and newest snapshots of the handle's readers")
struct ReaderRegistryTests {
    /// Random reads begun and closed on one handle, in any order, with commits on another in
    /// between: after each step the writer's handle sees the oldest snapshot of the open
    /// readers (none when all are closed), as a list of the open readers says.
    @Test("random begins, closes and commits against a list of open readers")
    func publishedSlotFollowsOldestReader() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("registry.arbor")
        let writer = try Database.open(path: path)
        try writer.update { tx in try tx.createTree("t").put([0], [0]) }
        let readerHandle = try Database.open(path: path)
        var random = SplitMix64(seed: 17)
        var open: [Transaction] = []
        for step in 0..<400 {
            switch random.next() % 4 {
            case 0: try writer.update { tx in try tx.tree("t").put([UInt8(step % 251)], [UInt8(step % 7)]) }
            case 1: open.append(try readerHandle.beginRead())
            default:
                guard !open.isEmpty else { continue }
                open.remove(at: Int(random.next() % UInt64(open.count))).close()
            }
            let snapshots = open.map(\.snapshotID)
            let expected = snapshots.min()
            #expect(try writer.registry.oldestSnapshot() == expected, "step \(step): \(snapshots)")
            #expect(try readerHandle.registry.oldestSnapshot() == expected)
            let published = expected.flatMap { oldest in snapshots.max().map { oldest...$0 } }
            #expect(try writer.registry.readerSnapshots() == (published.map { [$0] } ?? []), "step \(step)")
            #expect(Set(try readerHandle.registry.readerSnapshots()) == Set(snapshots.map { $0...$0 }))
        }
        for transaction in open { transaction.close() }
        #expect(try writer.registry.oldestSnapshot() == nil)
    }

    @Test("a process's readers per snapshot, counted as a dictionary counts them")
    func snapshotReadersMatchADictionary() {
        var random = SplitMix64(seed: 29)
        var readers = SnapshotReaders()
        var reference: [UInt64: Int] = [:]
        for step in 0..<3_000 {
            let txid = random.next() % 12
            if random.next() % 2 == 0 {
                readers.add(txid)
                reference[txid, default: 0] += 1
            } else {
                let expected: Bool? = reference[txid].map { $0 == 1 }
                if let count = reference[txid] { reference[txid] = count > 1 ? count - 1 : nil }
                #expect(readers.remove(txid) == expected, "step \(step)")
            }
            #expect(Set(readers.snapshots) == Set(reference.keys) && readers.snapshots.count == reference.count, "step \(step)")
            #expect(readers.oldest == reference.keys.min() && readers.newest == reference.keys.max())
        }
    }
}
