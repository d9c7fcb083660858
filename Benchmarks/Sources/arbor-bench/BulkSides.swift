import Arbor
import Foundation
import GRDB

/// A stop as an importer receives it: its feed ID, a unique number, a name and a place.
struct IncomingStop {
    var identifier: Int64
    var name: String
    var latitude: Double
    var longitude: Double
    var stopID: String { "S\(identifier)" }

    /// Stops 0..<count with names of `edition`; the stored ones are the even identifiers.
    static func batch(_ count: Int, edition: String) -> [IncomingStop] {
        (0..<count).map { number -> IncomingStop in
            let latitude: Double = 52 + Double(number % 1000) / 1000
            let longitude: Double = 13 + Double(number / 1000) / 1000
            return IncomingStop(identifier: Int64(number), name: "\(edition) \(number)", latitude: latitude, longitude: longitude)
        }
    }
}

final class BulkStop: ManagedObject {
    @Attribute("identifier") var identifier: Int64
    @Attribute("stopID") var stopID: String
    @Attribute("name") var name: String
    @Attribute("latitude") var latitude: Double
    @Attribute("longitude") var longitude: Double
}

/// Stops with two uniqueness constraints (identifier, stopID), as an importer's store has:
/// Arbor's model and SQLite's table with the same indexes.
struct ArborStopsSide {
    let container: PersistentContainer

    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("Stop", class: BulkStop.self,
                              attributes: [AttributeDescription("identifier", .int64), AttributeDescription("stopID", .string),
                                           AttributeDescription("name", .string), AttributeDescription("latitude", .double),
                                           AttributeDescription("longitude", .double)],
                              uniquenessConstraints: [["identifier"], ["stopID"]]),
        ])
    }

    /// A new store at `path` holding the stored half (even identifiers) of `stops`.
    init(path: String, stored stops: [IncomingStop]) throws {
        for file in [path, path + "-lock"] { try? FileManager.default.removeItem(atPath: file) }
        var options = PersistentStore.Options()
        options.durability = .normal  // as SQLite's synchronous=NORMAL in WAL mode
        container = try PersistentContainer(name: "stops", model: try Self.model(), url: URL(fileURLWithPath: path), options: options)
        var next = 0
        let even = stops.filter { $0.identifier % 2 == 0 }
        _ = try container.persistentStoreCoordinator.execute(BatchInsertRequest(entityName: "Stop") { object in
            guard next < even.count else { return true }
            Self.fill(&object, even[next])
            next += 1
            return false
        })
    }

    /// A new managed stop in `context` with `incoming`'s values.
    static func insert(_ incoming: IncomingStop, into context: ManagedObjectContext) {
        let stop = BulkStop(context: context)
        stop.identifier = incoming.identifier
        stop.stopID = incoming.stopID
        stop.name = incoming.name
        stop.latitude = incoming.latitude
        stop.longitude = incoming.longitude
    }

    static func fill(_ object: inout BatchInsertObject, _ stop: IncomingStop) {
        object.setValue(.int(stop.identifier), forKey: "identifier")
        object.setValue(.string(stop.stopID), forKey: "stopID")
        object.setValue(.string(stop.name), forKey: "name")
        object.setValue(.double(stop.latitude), forKey: "latitude")
        object.setValue(.double(stop.longitude), forKey: "longitude")
    }

    /// Core Data's find-or-create: per batch, one fetch of the batch's identifiers with IN,
    /// the found objects updated, the rest inserted, one save. Returns how many were found.
    func findOrCreate(_ stops: [IncomingStop], batch: Int) throws -> Int {
        let context = container.newBackgroundContext()
        return try context.performAndWait {
            var found = 0
            for start in stride(from: 0, to: stops.count, by: batch) {
                let part = stops[start..<min(start + batch, stops.count)]
                let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier IN %@", part.map(\.identifier)))
                var existing: [Int64: BulkStop] = [:]
                for stop in try context.fetch(request, as: BulkStop.self) { existing[stop.identifier] = stop }
                for incoming in part {
                    if let stop = existing[incoming.identifier] {
                        found += 1
                        stop.name = incoming.name
                    } else {
                        Self.insert(incoming, into: context)
                    }
                }
                try context.save()
                context.reset()
            }
            return found
        }
    }

    /// Find-or-create with batch requests: per batch, one fetch of the batch's identifiers with
    /// IN (their object IDs, no objects), then one upsert that updates those found and inserts
    /// the rest. Returns how many were found.
    func findOrCreateWithBatchRequests(_ stops: [IncomingStop], batch: Int) throws -> Int {
        let context = container.newBackgroundContext()
        let coordinator = container.persistentStoreCoordinator
        return try context.performAndWait {
            var found = 0
            for start in stride(from: 0, to: stops.count, by: batch) {
                let part = stops[start..<min(start + batch, stops.count)]
                let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier IN %@", part.map(\.identifier)))
                let existing = try context.fetchObjectIDs(request)
                found += existing.count
                var next = part.startIndex
                var upsert = BatchInsertRequest(entityName: "Stop") { object in
                    guard next < part.endIndex else { return true }
                    Self.fill(&object, part[next])
                    next += 1
                    return false
                }
                upsert.conflictRule = .update
                upsert.conflictConstraint = ["identifier"]
                _ = try coordinator.execute(upsert)
            }
            return found
        }
    }

    /// The same with one fetch per record (what the batched pattern replaces).
    func findOrCreateOneByOne(_ stops: [IncomingStop], batch: Int) throws -> Int {
        let context = container.newBackgroundContext()
        let template = try ObjectPredicate(format: "identifier == $identifier")
        return try context.performAndWait {
            var found = 0
            for (index, incoming) in stops.enumerated() {
                var request = FetchRequest(entityName: "Stop", predicate: template.withSubstitutionVariables(["identifier": .int(incoming.identifier)]))
                request.fetchLimit = 1
                if let stop = try context.fetch(request, as: BulkStop.self).first {
                    found += 1
                    stop.name = incoming.name
                } else {
                    Self.insert(incoming, into: context)
                }
                if (index + 1) % batch == 0 {
                    try context.save()
                    context.reset()
                }
            }
            try context.save()
            return found
        }
    }

    /// One batch insert that updates the stored stops by stopID (an upsert); returns how many
    /// it updated.
    func upsert(_ stops: [IncomingStop]) throws -> Int {
        var next = 0
        var request = BatchInsertRequest(entityName: "Stop") { object in
            guard next < stops.count else { return true }
            Self.fill(&object, stops[next])
            next += 1
            return false
        }
        request.conflictRule = .update
        request.conflictConstraint = ["stopID"]
        return try container.persistentStoreCoordinator.execute(request).updatedCount
    }

    var count: Int {
        let context = container.newBackgroundContext()
        return (try? context.performAndWait { try context.count(for: FetchRequest(entityName: "Stop")) }) ?? -1
    }
}

/// The same stops in SQLite through GRDB: the table Core Data would create, with unique
/// indexes on identifier and stopID.
struct SQLiteStopsSide {
    let pool: DatabasePool

    init(path: String, stored stops: [IncomingStop]) throws {
        for file in [path, path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE ZSTOP (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZIDENTIFIER INTEGER, ZSTOPID VARCHAR, ZNAME VARCHAR,
                                    ZLATITUDE FLOAT, ZLONGITUDE FLOAT);
                CREATE UNIQUE INDEX ZSTOP_ZIDENTIFIER ON ZSTOP (ZIDENTIFIER);
                CREATE UNIQUE INDEX ZSTOP_ZSTOPID ON ZSTOP (ZSTOPID);
                """)
            let insert = try db.makeStatement(sql: "INSERT INTO ZSTOP (Z_ENT, Z_OPT, ZIDENTIFIER, ZSTOPID, ZNAME, ZLATITUDE, ZLONGITUDE) VALUES (1, 1, ?, ?, ?, ?, ?)")
            for stop in stops where stop.identifier % 2 == 0 {
                insert.setUncheckedArguments([stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude])
                try insert.execute()
            }
        }
    }

    /// Per batch, in one transaction: `SELECT … WHERE ZIDENTIFIER IN (…)`, then an UPDATE per
    /// found row and an INSERT per new one. Returns how many were found.
    func findOrCreate(_ stops: [IncomingStop], batch: Int) throws -> Int {
        var found = 0
        for start in stride(from: 0, to: stops.count, by: batch) {
            let part = stops[start..<min(start + batch, stops.count)]
            try pool.write { db in
                let list = part.map { String($0.identifier) }.joined(separator: ",")
                var existing: [Int64: Int64] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT Z_PK, ZIDENTIFIER FROM ZSTOP WHERE ZIDENTIFIER IN (\(list))") {
                    existing[row["ZIDENTIFIER"]] = row["Z_PK"]
                }
                let update = try db.cachedStatement(sql: "UPDATE ZSTOP SET ZNAME = ?, Z_OPT = Z_OPT + 1 WHERE Z_PK = ?")
                let insert = try db.cachedStatement(sql: "INSERT INTO ZSTOP (Z_ENT, Z_OPT, ZIDENTIFIER, ZSTOPID, ZNAME, ZLATITUDE, ZLONGITUDE) VALUES (1, 1, ?, ?, ?, ?, ?)")
                for incoming in part {
                    if let key = existing[incoming.identifier] {
                        found += 1
                        update.setUncheckedArguments([incoming.name, key])
                        try update.execute()
                    } else {
                        insert.setUncheckedArguments([incoming.identifier, incoming.stopID, incoming.name, incoming.latitude, incoming.longitude])
                        try insert.execute()
                    }
                }
            }
        }
        return found
    }

    /// `INSERT … ON CONFLICT(ZSTOPID) DO UPDATE` per stop, in one transaction; returns how many
    /// rows it changed.
    func upsert(_ stops: [IncomingStop]) throws -> Int {
        try pool.write { db in
            let statement = try db.makeStatement(sql: """
                INSERT INTO ZSTOP (Z_ENT, Z_OPT, ZIDENTIFIER, ZSTOPID, ZNAME, ZLATITUDE, ZLONGITUDE) VALUES (1, 1, ?, ?, ?, ?, ?)
                ON CONFLICT(ZSTOPID) DO UPDATE SET ZNAME = excluded.ZNAME, ZLATITUDE = excluded.ZLATITUDE, ZLONGITUDE = excluded.ZLONGITUDE,
                                                   ZIDENTIFIER = excluded.ZIDENTIFIER, Z_OPT = Z_OPT + 1
                """)
            var changed = 0
            for stop in stops {
                statement.setUncheckedArguments([stop.identifier, stop.stopID, stop.name, stop.latitude, stop.longitude])
                try statement.execute()
                changed += db.changesCount
            }
            return changed
        }
    }

    var count: Int { (try? pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM ZSTOP") ?? -1 }) ?? -1 }
}
