import ArborEngine
import ArborEngineTestSupport
import Testing

@Suite("Compaction (VACUUM INTO) and compressed read-only files")
struct CompactionTests {
    func makeFragmented(_ path: String) throws -> Database {
        let db = try Database.open(path: path)
        try db.update { tx in
            try fill(try tx.createTree("stops"), count: 20_000, valueLength: 50)
            let blobs = try tx.createTree("blobs")
            for i in 0..<20 { try blobs.put(key(i), Array(String(repeating: "Görlitzer Bahnhof \(i) ", count: 300).utf8)) }
        }
        try db.update { tx in
            let stops = try tx.tree("stops")
            for i in stride(from: 0, to: 20_000, by: 2) { try stops.delete(key(i)) }
        }
        return db
    }

    @Test("a compacted copy holds the same entries in fewer pages", arguments: [false, true])
    func compact(compress: Bool) throws {
        let directory = TemporaryDirectory()
        let db = try makeFragmented(directory.file("source.arbor"))
        let target = directory.file(compress ? "packed.arbor" : "compact.arbor")
        let report = try db.compact(to: target, compress: compress)
        #expect(report.compactedBytes < report.sourceBytes)
        if compress { #expect(report.compressedLeaves > 0) }
        var options = Database.Options()
        options.readOnly = true
        let copy = try Database.open(path: target, options: options)
        #expect(copy.checkIntegrity().isSound, "\(copy.checkIntegrity())")
        for name in ["stops", "blobs"] {
            let original = try db.view { try $0.tree(name).entries() }
            let copied = try copy.view { try $0.tree(name).entries() }
            #expect(original.count == copied.count)
            #expect(zip(original, copied).allSatisfy { $0.key == $1.key && $0.value == $1.value })
        }
        let counted = try copy.view { try $0.tree("stops").count(in: .halfOpen(key(100), key(200))) }
        #expect(counted == 50)
        #expect(try copy.info().freePages == 0)
        print("compaction (compress: \(compress)): \(report.sourceBytes) -> \(report.compactedBytes) bytes, \(report.leaves) leaves")
        if compress {
            #expect(throws: ArborError.compressedFileIsReadOnly) { try Database.open(path: target) }
        } else {
            try Database.open(path: target).update { tx in try fill(try tx.tree("stops"), count: 10, start: 50_000) }
        }
    }

    @Test("read-only open works when the file and its directory are not writable")
    func readOnlyOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("ro.arbor")
        _ = try Database.open(path: path).update { tx in try fill(try tx.createTree("t"), count: 100) }
        var options = Database.Options()
        options.readOnly = true
        options.useLockFile = false
        let db = try Database.open(path: path, options: options)
        #expect(try db.view { try $0.tree("t").count } == 100)
        #expect(throws: ArborError.readOnly) { try db.beginWrite() }
    }
}
