@testable import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Database.beginRead(reusing:)`: a closed read transaction is opened again only for the
/// snapshot a new one would show, of its own database; otherwise a new transaction is begun.
@Suite("Reusing a closed read transaction for the same snapshot")
struct ReadReuseTests {
    @Test("reused for the same snapshot only: not after a commit, not open, not of another database, not a writer")
    func reuseRules() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("reuse.arbor")
        let db = try Database.open(path: path)
        try db.update { tx in try tx.createTree("t").put([1], [1]) }

        let first = try db.beginRead()
        #expect(try db.beginRead(reusing: first) !== first)  // still open: not taken
        first.close()
        let again = try db.beginRead(reusing: first)
        #expect(again === first)
        #expect(try again.tree("t").get([1]) == [1])
        again.close()

        try db.update { tx in try tx.tree("t").put([2], [2]) }
        let newer = try db.beginRead(reusing: first)
        #expect(newer !== first)
        #expect(try newer.tree("t").get([2]) == [2])
        newer.close()

        let other = try Database.open(path: directory.file("other.arbor"))
        #expect(try other.beginRead(reusing: newer) !== newer)

        let writer = try db.beginWrite()
        writer.abort()
        #expect(try db.beginRead(reusing: writer) !== writer)
    }

    @Test("a commit by another handle (another process) is seen: the kept transaction is not reused")
    func otherHandleCommit() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("handles.arbor")
        let db = try Database.open(path: path)
        try db.update { tx in try tx.createTree("t").put([1], [1]) }
        let kept = try db.beginRead()
        kept.close()
        try Database.open(path: path).update { tx in try tx.tree("t").put([3], [3]) }
        let next = try db.beginRead(reusing: kept)
        #expect(next !== kept)
        #expect(try next.tree("t").get([3]) == [3])
    }
}
