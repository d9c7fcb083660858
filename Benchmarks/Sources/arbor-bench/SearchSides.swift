import Arbor
import Foundation
import GRDB

/// Names in an Arbor store, with the text indexes asked for: plain, a words index, or words
/// and substrings indexes on `name`.
struct ArborNamesSide {
    enum Indexes: String { case none, words, wordsAndSubstrings }

    let container: PersistentContainer
    let path: String
    /// Seconds the batch insert of every name took.
    let importSeconds: Double

    static func model(_ indexes: Indexes) throws -> ManagedObjectModel {
        let text: [IndexDescription]
        switch indexes {
        case .none: text = []
        case .words: text = [IndexDescription(["name"], kind: .words)]
        case .wordsAndSubstrings: text = [IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)]
        }
        return try ManagedObjectModel(entities: [EntityDescription("Place", attributes: [AttributeDescription("name", .string)], indexes: text)])
    }

    /// A store `search` left behind, opened as it is.
    init(existing path: String, indexes: Indexes) throws {
        self.path = path
        container = try PersistentContainer(name: "names", model: try Self.model(indexes), url: URL(fileURLWithPath: path))
        importSeconds = 0
    }

    init(path: String, names: [String], indexes: Indexes) throws {
        for file in [path, path + "-lock"] { try? FileManager.default.removeItem(atPath: file) }
        self.path = path
        var options = PersistentStore.Options()
        options.durability = .normal  // as SQLite's synchronous=NORMAL in WAL mode
        container = try PersistentContainer(name: "names", model: try Self.model(indexes), url: URL(fileURLWithPath: path), options: options)
        let coordinator = container.persistentStoreCoordinator
        importSeconds = try Clock.seconds {
            var next = 0
            _ = try coordinator.execute(BatchInsertRequest(entityName: "Place") { object in
                guard next < names.count else { return true }
                object.setValue(.string(names[next]), forKey: "name")
                next += 1
                return false
            })
        }
    }

    /// The object IDs of the places whose name satisfies `format` (with `argument`): a words
    /// search answered by the index alone, no row read.
    func searchIDs(_ context: ManagedObjectContext, _ format: String, _ argument: String) throws -> Int {
        try context.performAndWait {
            try context.fetchObjectIDs(FetchRequest(entityName: "Place", predicate: try ObjectPredicate(format: format, argument))).count
        }
    }

    /// The bytes of a compacted copy (no free pages, leaves full), as `VACUUM INTO` gives SQLite's.
    func compactedBytes(in directory: String) throws -> UInt64 {
        let copy = URL(fileURLWithPath: directory + "/compacted-\(UUID().uuidString).arbor")
        defer { try? FileManager.default.removeItem(at: copy) }
        guard let store = container.persistentStoreCoordinator.persistentStores.first else { return 0 }
        return try store.compact(to: copy).compactedBytes
    }

    /// The IDs and names of the places whose name satisfies `format` (with `argument`).
    func search(_ context: ManagedObjectContext, _ format: String, _ argument: String) throws -> Int {
        try context.performAndWait {
            var request = FetchRequest(entityName: "Place", predicate: try ObjectPredicate(format: format, argument))
            request.returnsObjectsAsFaults = false
            var found = 0
            for place in try context.fetch(request) where place.value(forKey: "name") is String { found += 1 }
            return found
        }
    }
}

/// The same names in SQLite through GRDB: a table, and an FTS5 index over it as an app would
/// declare it for word search (`unicode61 remove_diacritics 2`, external content).
struct SQLiteNamesSide {
    let pool: DatabasePool
    let path: String
    let importSeconds: Double

    /// A file `search` left behind, opened as it is.
    init(existing path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA cache_size = -65536") }
        pool = try DatabasePool(path: path, configuration: configuration)
        importSeconds = 0
    }

    init(path: String, names: [String], fts: Bool) throws {
        for file in [path, path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        self.pool = pool
        importSeconds = try Clock.seconds {
            try pool.write { db in
                try db.execute(sql: "CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
                if fts {
                    try db.execute(sql: """
                        CREATE VIRTUAL TABLE names_fts USING fts5(name, content='names', content_rowid='id', tokenize='unicode61 remove_diacritics 2')
                        """)
                }
                let insert = try db.makeStatement(sql: "INSERT INTO names (name) VALUES (?)")
                let index = fts ? try db.makeStatement(sql: "INSERT INTO names_fts (rowid, name) VALUES (?, ?)") : nil
                for name in names {
                    try insert.execute(arguments: [name])
                    try index?.execute(arguments: [db.lastInsertedRowID, name])
                }
            }
        }
    }

    /// The bytes of `VACUUM INTO` a fresh file.
    func compactedBytes() throws -> UInt64 {
        let copy = path + "-vacuum-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [copy]) }
        return (try FileManager.default.attributesOfItem(atPath: copy)[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// The IDs and names FTS5 finds for a query of prefixes (`"wider"* "berl"*`).
    func wordSearch(_ words: [String]) throws -> Int {
        let query = words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }.joined(separator: " ")
        return try pool.read { db in
            var found = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT rowid, name FROM names_fts WHERE names_fts MATCH ?", arguments: [query])
            while let row = try rows.next() {
                if (row[1] as String?) != nil { found += 1 }
            }
            return found
        }
    }

    /// The IDs alone FTS5 finds for a query of prefixes: the index's own cost, no row read.
    func wordSearchIDs(_ words: [String]) throws -> Int {
        let query = words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }.joined(separator: " ")
        return try pool.read { db in
            var found = 0
            let rows = try Int64.fetchCursor(db, sql: "SELECT rowid FROM names_fts WHERE names_fts MATCH ?", arguments: [query])
            while try rows.next() != nil { found += 1 }
            return found
        }
    }

    /// The IDs and names holding `text` (`LIKE '%…%'`: ASCII case-insensitive, a scan).
    func contains(_ text: String) throws -> Int {
        try pool.read { db in
            var found = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT id, name FROM names WHERE name LIKE ?", arguments: ["%" + text + "%"])
            while let row = try rows.next() {
                if (row[1] as String?) != nil { found += 1 }
            }
            return found
        }
    }
}
