@testable import ArborEngine
import ArborEngineTestSupport
import Testing

/// A file may end before the last page of its state when the pages it lacks are free (allocated
/// at the end and freed again, or an unsynced extension lost in a power cut); a file that lacks
/// a page its state reaches is truncated (Spec/file-format.md, section 3).
@Suite("A file shorter than its state")
struct FileLengthTests {
    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    static func rewrite(_ db: Database, _ keys: Range<Int>, value: UInt8) throws {
        try db.update { tx in
            let tree = try tx.tree("t")
            for number in keys { try tree.put(key(number), Array(repeating: value, count: 40)) }
        }
    }

    @Test("a power cut loses an unsynced extension whose pages a later commit freed: the later commit opens")
    func lostExtensionOfFreedPages() throws {
        let file = SimulatedFile()
        var options = Database.Options()
        options.durability = .normal(Database.SyncSchedule(commits: 1_000_000))
        let db = try Database.open(file: file, options: options)
        try db.update { tx in _ = try tx.createTree("t") }
        try Self.rewrite(db, 0..<3_000, value: 1)
        // A reader keeps the first version's pages from reuse while the next commit frees them.
        let reader = try db.beginRead()
        try Self.rewrite(db, 0..<3_000, value: 2)
        try db.sync()
        // Nothing reusable: this commit's copies extend the file, and it is not synced.
        let durableSize = file.currentBytes.count
        try Self.rewrite(db, 0..<300, value: 3)
        #expect(file.currentBytes.count > durableSize)
        let lastWriteOfExtension = file.unsyncedWriteCount
        reader.close()
        // Now the first version's pages are reusable: the next commit takes them and frees the
        // pages at the end of the file that the previous one wrote.
        try Self.rewrite(db, 0..<300, value: 4)
        let info = try db.info()
        let image = file.crashImage { $0 >= lastWriteOfExtension }
        // What the test is about: the newest state ends past the end of what reached the disk.
        #expect(image.count < Int(info.pageCount) * info.pageSize)

        let recovered = SimulatedFile(bytes: image)
        let reopened = try Database.open(file: recovered)
        #expect(try reopened.info().transactionID == info.transactionID)
        #expect(try reopened.view { try $0.tree("t").get(Self.key(0)) } == Array(repeating: 4, count: 40))
        #expect(try reopened.view { try $0.tree("t").count } == 3_000)
        #expect(reopened.checkIntegrity().isSound)
        // The next commit works on the short file, and what it writes is read back.
        try Self.rewrite(reopened, 0..<3_000, value: 5)
        let again = try Database.open(file: SimulatedFile(bytes: recovered.currentBytes))
        #expect(try again.view { try $0.tree("t").get(Self.key(2_999)) } == Array(repeating: 5, count: 40))
    }

    /// The number of the last page `db`'s state reaches.
    static func lastReachedPage(_ db: Database) -> Int? {
        let owners = db.checkIntegrity().pageOwners
        return owners.indices.last { index in
            guard index >= 2, let owner = owners[index] else { return false }
            if case .free = owner { return false }
            return true
        }
    }

    @Test("a file cut short of free pages only opens at its state")
    func freeTailMayBeMissing() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in _ = try tx.createTree("t") }
        try Self.rewrite(db, 0..<3_000, value: 1)
        // Dropping the tree frees its pages; the commit's own pages go to the end of the file
        // (the dropped pages stay protected until it is durable). The next commit reuses the
        // dropped pages and frees the ones at the end.
        try db.update { tx in try tx.dropTree("t") }
        try db.update { tx in try tx.createTree("u").put(Self.key(1), [1]) }
        let pageSize = try db.info().pageSize
        let lastReached = try #require(Self.lastReachedPage(db))
        let bytes = file.currentBytes
        #expect(bytes.count > (lastReached + 1) * pageSize, "no free page after the last reached one")

        let opened = try Database.open(file: SimulatedFile(bytes: Array(bytes.prefix((lastReached + 1) * pageSize))))
        #expect(try opened.info().transactionID == db.info().transactionID)
        #expect(try opened.view { try $0.tree("u").get(Self.key(1)) } == [1])
        #expect(opened.checkIntegrity().isSound)
    }

    @Test("a file cut short of a page its state reaches is truncated")
    func truncatedState() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        // More pages than a meta page lists: the commit syncs them and lists none, so opening
        // has no list to fall back by.
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<30_000 { try tree.put(Self.key(number), Array(repeating: 1, count: 40)) }
        }
        let pageSize = try db.info().pageSize
        let lastReached = try #require(Self.lastReachedPage(db))
        let cut = Array(file.currentBytes.prefix(lastReached * pageSize + pageSize / 2))
        #expect {
            _ = try Database.open(file: SimulatedFile(bytes: cut))
        } throws: { error in
            guard case ArborError.truncatedFile = error else { return false }
            return true
        }
    }
}
