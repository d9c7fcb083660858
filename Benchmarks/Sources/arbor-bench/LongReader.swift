import ArborEngine
import Foundation
import GRDB

/// The "long reader" rows: 3,000 entries (16-byte keys, 100-byte values) rewritten 40 times, one
/// transaction per rewrite, with and without one reader open from before the first rewrite to
/// after the last. Reported: the store's size on disk (SQLite: database plus WAL, whose
/// checkpoints cannot pass the reader).
enum LongReader {
    static let entries = 3_000
    static let rewrites = 40

    /// Bytes on disk after the rewrites, with the reader and without.
    static func arbor(_ side: ArborSide) throws -> (withReader: Double, withoutReader: Double) {
        func run(pinned: Bool) throws -> Double {
            let name = "long-reader-\(pinned)"
            let db = try side.open(name)
            try db.update { tx in try fill(try tx.createTree("kv"), round: 0) }
            let reader = pinned ? try db.beginRead() : nil
            let first = try reader?.tree("kv").get(key(0))
            for round in 1...rewrites { try db.update { tx in try fill(try tx.tree("kv"), round: round) } }
            if let reader {
                guard try reader.tree("kv").get(key(0)) == first else { throw BenchError.wrongAnswer("the long reader lost its snapshot") }
                reader.close()
            }
            return try size(side.path(name))
        }
        return (try run(pinned: true), try run(pinned: false))
    }

    static func sqlite(_ side: SQLiteSide) throws -> (withReader: Double, withoutReader: Double) {
        func run(pinned: Bool) throws -> Double {
            let name = "long-reader-\(pinned)"
            let pool = try side.open(name)
            try pool.write { db in try fill(db, round: 0) }
            let started = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            let readerDone = DispatchSemaphore(value: 0)
            if pinned {
                Thread.detachNewThread {
                    try? pool.read { db in
                        _ = try Data.fetchOne(db, sql: "SELECT v FROM kv WHERE k = ?", arguments: [Data(key(0))])
                        started.signal()
                        finished.wait()
                    }
                    readerDone.signal()
                }
                started.wait()
            }
            for round in 1...rewrites { try pool.write { db in try fill(db, round: round) } }
            if pinned {
                finished.signal()
                readerDone.wait()
            }
            let total = try size(side.path(name)) + ((try? size(side.path(name) + "-wal")) ?? 0)
            try pool.close()
            return total
        }
        return (try run(pinned: true), try run(pinned: false))
    }

    private static func key(_ index: Int) -> [UInt8] {
        var key = [UInt8](repeating: 0x6B, count: 16)
        withUnsafeBytes(of: UInt64(index).bigEndian) { for (offset, byte) in $0.enumerated() { key[8 + offset] = byte } }
        return key
    }

    private static func value(_ index: Int, round: Int) -> [UInt8] {
        [UInt8](repeating: UInt8(truncatingIfNeeded: index &+ round), count: 100)
    }

    private static func fill(_ tree: ArborEngine.Tree, round: Int) throws {
        for index in 0..<entries { try tree.put(key(index), value(index, round: round)) }
    }

    private static func fill(_ db: GRDB.Database, round: Int) throws {
        let statement = try db.cachedStatement(sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)")
        for index in 0..<entries {
            try statement.execute(arguments: [Data(key(index)), Data(value(index, round: round))])
        }
    }

    private static func size(_ path: String) throws -> Double {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0
    }
}
