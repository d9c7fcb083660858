import ArborEngineTestSupport
@testable import ArborEngine
import Foundation
import Testing

/// A file whose first `size()` answers as the file was before a writer grew it: what a reader
/// sees when a commit lands between its measuring the file and its reading the meta pages.
final class StaleSizeFile: StorageFile, @unchecked Sendable {
    let base: SimulatedFile
    private let stale: Locked<UInt64?>

    init(_ base: SimulatedFile, staleSize: UInt64) {
        self.base = base
        stale = Locked(staleSize)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int { try base.read(into: buffer, at: offset) }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws { try base.write(bytes, at: offset) }
    func sync() throws { try base.sync() }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func size() throws -> UInt64 {
        if let once = stale.withLock({ value -> UInt64? in defer { value = nil }; return value }) { return once }
        return try base.size()
    }
}

@Suite("Meta pages read while a writer commits")
struct MetaReadRaceTests {
    @Test("a file grown between measuring it and reading the meta pages is not reported truncated")
    func grownFileIsNotTruncated() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file)
        try db.update { tx in
            let tree = try tx.createTree("t")
            for i in 0..<2_000 { try tree.put(TupleKey.encode([.integer(Int64(i))]), Array(repeating: 7, count: 40)) }
        }
        let size = try file.size()
        let meta = try Meta.readCurrent(from: StaleSizeFile(file, staleSize: size - 4 * 4096), path: "grown")
        #expect(UInt64(meta.pageCount) * UInt64(meta.pageSize) <= size)
        // A file that is really short still is.
        #expect(throws: ArborError.self) {
            try Meta.readCurrent(from: SimulatedFile(bytes: Array(file.currentBytes.prefix(Int(size) - 4 * 4096))), path: "short")
        }
    }
}
