import ArborEngine
import Foundation
import GRDB

/// The ArborEngine side of the engine benchmark.
struct ArborSide {
    let directory: String
    let cacheMiB: Int

    func path(_ name: String) -> String { directory + "/arbor-\(name).arbor" }

    func open(_ name: String, durability: ArborEngine.Database.Durability = .full) throws -> ArborEngine.Database {
        var options = ArborEngine.Database.Options()
        options.cacheBytes = cacheMiB << 20
        options.durability = durability
        return try ArborEngine.Database.open(path: path(name), options: options)
    }

    func insert(_ data: Dataset, order: [Int], name: String) throws -> InsertResult {
        Memory.resetPeak()
        let before = Memory.residentMiB
        var seconds = 0.0
        do {
            let db = try open(name)
            seconds = try Clock.seconds {
                try db.update { tx in
                    let tree = try tx.createTree("kv")
                    for index in order { try tree.put(data.key(index), data.value(index)) }
                }
            }
        }
        let size = (try FileManager.default.attributesOfItem(atPath: path(name))[.size] as? NSNumber)?.doubleValue ?? 0
        return InsertResult(seconds: seconds, peakGrowthMiB: Memory.peakMiB - before, fileMiB: size / 1_048_576)
    }

    /// Per-get latencies in microseconds (each get timed on its own).
    func gets(_ data: Dataset, _ indices: [Int], name: String) throws -> [Double] {
        let db = try open(name)
        var latencies: [Double] = []
        latencies.reserveCapacity(indices.count)
        try db.view { tx in
            let tree = try tx.tree("kv")
            for index in indices {
                let key = data.key(index)
                var found = 0
                latencies.append(try Clock.seconds { found = try tree.get(key)?.count ?? 0 } * 1e6)
                guard found == 100 else { throw BenchError.wrongAnswer("get \(index)") }
            }
        }
        return latencies
    }

    func fullScan(name: String, expected: Int) throws -> Double {
        let db = try open(name)
        return try Clock.seconds {
            var count = 0
            var bytes = 0
            try db.view { tx in
                try tx.tree("kv").forEach { key, value in
                    count += 1
                    bytes &+= key.count &+ value.count
                    return true
                }
            }
            guard count == expected, bytes == expected * 116 else { throw BenchError.wrongAnswer("scan saw \(count)") }
        }
    }

    func ranges(_ data: Dataset, _ starts: [Int], name: String) throws -> Double {
        let db = try open(name)
        return try Clock.seconds {
            try db.view { tx in
                let tree = try tx.tree("kv")
                for start in starts {
                    var seen = 0
                    try tree.forEach(in: KeyRange(lower: .init(data.key(start), inclusive: true))) { _, value in
                        seen += value.isEmpty ? 0 : 1
                        return seen < 100
                    }
                    guard seen > 0 else { throw BenchError.wrongAnswer("range at \(start)") }
                }
            }
        }
    }

    func smallCommits(_ count: Int, name: String, durability: ArborEngine.Database.Durability) throws -> Double {
        let db = try open(name, durability: durability)
        var generator = SplitMix(state: durability == .full ? 199 : 99)
        return try Clock.seconds {
            for _ in 0..<count {
                let key = Dataset.commitKey(&generator)
                try db.update { tx in try tx.tree("kv").put(key, [UInt8](repeating: 1, count: 100)) }
            }
        }
    }
}

/// The SQLite side: GRDB, WITHOUT ROWID table with a BLOB primary key, WAL, synchronous=NORMAL
/// (FULL for the durable small commits).
struct SQLiteSide {
    let directory: String
    let cacheMiB: Int

    init(directory: String, cacheMiB: Int) throws {
        self.directory = directory
        self.cacheMiB = cacheMiB
    }

    func path(_ name: String) -> String { directory + "/sqlite-\(name).sqlite" }

    func open(_ name: String, synchronous: String = "NORMAL") throws -> DatabasePool {
        var configuration = Configuration()
        // Several pools on one file (the concurrent-writers row) wait for each other's writes.
        configuration.busyMode = .timeout(60)
        let cacheKiB = cacheMiB * 1024
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB)")
        }
        let pool = try DatabasePool(path: path(name), configuration: configuration)
        // DatabasePool sets synchronous=NORMAL when it turns WAL on, after prepareDatabase:
        // set the level again on the writer connection, and check it.
        let level = try pool.writeWithoutTransaction { db -> Int in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard level == (synchronous == "FULL" ? 2 : 1) else {
            throw BenchError.wrongAnswer("SQLite synchronous is \(level), expected \(synchronous)")
        }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID")
        }
        return pool
    }

    func insert(_ data: Dataset, order: [Int], name: String) throws -> InsertResult {
        Memory.resetPeak()
        let before = Memory.residentMiB
        var seconds = 0.0
        do {
            let pool = try open(name)
            seconds = try Clock.seconds {
                try pool.write { db in
                    let statement = try db.makeStatement(sql: "INSERT INTO kv (k, v) VALUES (?, ?)")
                    for index in order {
                        statement.setUncheckedArguments([Data(data.key(index)), Data(data.value(index))])
                        try statement.execute()
                    }
                }
            }
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        let size = (try FileManager.default.attributesOfItem(atPath: path(name))[.size] as? NSNumber)?.doubleValue ?? 0
        return InsertResult(seconds: seconds, peakGrowthMiB: Memory.peakMiB - before, fileMiB: size / 1_048_576)
    }

    /// Per-get latencies in microseconds (each get timed on its own).
    func gets(_ data: Dataset, _ indices: [Int], name: String) throws -> [Double] {
        let pool = try open(name)
        var latencies: [Double] = []
        latencies.reserveCapacity(indices.count)
        try pool.read { db in
            let statement = try db.makeStatement(sql: "SELECT v FROM kv WHERE k = ?")
            for index in indices {
                let key = Data(data.key(index))
                var found = 0
                latencies.append(try Clock.seconds { found = try Data.fetchOne(statement, arguments: [key])?.count ?? 0 } * 1e6)
                guard found == 100 else { throw BenchError.wrongAnswer("get \(index)") }
            }
        }
        return latencies
    }

    func fullScan(name: String, expected: Int) throws -> Double {
        let pool = try open(name)
        return try Clock.seconds {
            var count = 0
            var bytes = 0
            try pool.read { db in
                let rows = try Row.fetchCursor(db, sql: "SELECT k, v FROM kv")
                while let row = try rows.next() {
                    let key: Data = row[0]
                    let value: Data = row[1]
                    count += 1
                    bytes &+= key.count &+ value.count
                }
            }
            guard count == expected, bytes == expected * 116 else { throw BenchError.wrongAnswer("scan saw \(count)") }
        }
    }

    func ranges(_ data: Dataset, _ starts: [Int], name: String) throws -> Double {
        let pool = try open(name)
        return try Clock.seconds {
            try pool.read { db in
                let statement = try db.makeStatement(sql: "SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT 100")
                for start in starts {
                    var seen = 0
                    let rows = try Row.fetchCursor(statement, arguments: [Data(data.key(start))])
                    while let row = try rows.next() {
                        let value: Data = row[1]
                        seen += value.isEmpty ? 0 : 1
                    }
                    guard seen > 0 else { throw BenchError.wrongAnswer("range at \(start)") }
                }
            }
        }
    }

    func smallCommits(_ count: Int, name: String, synchronous: String) throws -> Double {
        let pool = try open(name, synchronous: synchronous)
        var generator = SplitMix(state: synchronous == "FULL" ? 199 : 99)
        return try Clock.seconds {
            for _ in 0..<count {
                let key = Dataset.commitKey(&generator)
                try pool.write { db in
                    try db.execute(sql: "INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)",
                                   arguments: [Data(key), Data(repeating: 1, count: 100)])
                }
            }
        }
    }
}

enum BenchError: Error {
    case wrongAnswer(String)
}
