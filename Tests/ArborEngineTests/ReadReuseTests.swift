@testable import ArborEngine
import ArborEngineTestSupport
import Testing

/// `Database.beginRead(reusing:)`: a closed read transaction is opened again only for the
/// snapshot a new one would show, of its own database; otherwise a new transaction is begun.
@Suite("Reusing a closed read transaction for the same snapshot")
struct ReadReuseTests {
    /// A new store `name` in a new directory, with tree "t" holding one entry ([1]: [1]).
    static func storeWithOneEntry(_ name: String) throws -> (TemporaryDirectory, Database) {
        let directory = TemporaryDirectory()
        let db = try Database.open(path: directory.file(name))
        try db.update { tx in try tx.createTree("t").put([1], [1]) }
        return (directory, db)
    }

    @Test("reused for the same snapshot only: not after a commit, not open, not of another database, not a writer")
    func reuseRules() throws {
        let (directory, db) = try Self.storeWithOneEntry("reuse.arbor")

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
        let (directory, db) = try Self.storeWithOneEntry("handles.arbor")
        let path = directory.file("handles.arbor")
        let kept = try db.beginRead()
        kept.close()
        try Database.open(path: path).update { tx in try tx.tree("t").put([3], [3]) }
        let next = try db.beginRead(reusing: kept)
        #expect(next !== kept)
        #expect(try next.tree("t").get([3]) == [3])
    }
}
