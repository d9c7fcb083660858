import ArborEngine
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A store in one ArborEngine file: the rows, indexes and joins of the entities of one
/// configuration in copy-on-write B+trees (layout in Spec/object-store.md), with the model they
/// were written with, read through a query planner and a row cache.
///
/// Sendable: its state is the engine's (snapshot readers, one writer) and a locked row cache.
final class BTreeStore: StoreStorage {
    /// The file's location (a descriptive name for stores opened on a `StorageFile`).
    let path: String
    /// The store's UUID, recorded in the file at creation; part of every permanent `ObjectID`.
    let identifier: UUID
    /// `identifier` as IDs hold it (made once: a fetch makes an ID per row).
    let identifierBits: ObjectID.StoreBits
    let configurationName: String
    let isReadOnly: Bool
    /// The options the store was opened with.
    let options: PersistentStore.Options
    let model: ManagedObjectModel
    let database: Database
    let rowCache = RowCache()
    /// The index chosen for each prepared request (see `PlanChoices`).
    let planChoices = PlanChoices()
    /// The read transaction kept between reads (see `SpareReader`).
    let spareReader = SpareReader()
    /// How this store's keys encode integers (its key format).
    let keys: IndexKeys
    let entityNames: Set<String>
    /// Resolves the reference columns of rows read here (kept by loaded objects).
    let references: StoredReferences

    /// Opens (or creates) the store file at `url` for `model`.
    /// - Throws: `StoreError.fileNotFound`, `.notAStoreFile` (a foreign or non-Arbor file),
    ///   `.corruptStore`, `.modelMismatch` (listing each difference; a read-only store or
    ///   `migratesAutomatically` off), `.migrationNotLightweight`, `.migrationFailed`, `.engine`
    ///   for I/O errors.
    ///
    /// **Migration.** When the file's model differs from `model` and the difference is
    /// lightweight — entities, attributes, relationships and indexes added or removed, an
    /// attribute made non-optional with a default, renames by renaming identifier — the store is
    /// migrated in one atomic transaction before it opens (a crash leaves the old store).
    convenience init(url: URL, model: ManagedObjectModel, configuration: String, options: PersistentStore.Options) throws {
        let path = url.filePath
        let exists = Self.fileExists(path)
        if !exists && (options.readOnly || !options.createIfMissing) { throw StoreError.fileNotFound(path: path) }
        let database: Database
        do { database = try Database.open(path: path, options: options.engineOptions) } catch { throw storeError(error, path: path) }
        try self.init(database: database, path: path, model: model, configuration: configuration, options: options)
    }

    /// Whether `path` names a file (through symbolic links, as `FileManager.fileExists` does).
    /// `stat` itself: a process's first use of `FileManager.default` sets up its shared
    /// instance, about 50 µs (2%) of a fresh process's open and first fetch.
    private static func fileExists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Opens a store on any `StorageFile` (an in-memory or fault-injecting file, in tests).
    convenience init(file: StorageFile, name: String, model: ManagedObjectModel, configuration: String,
                     options: PersistentStore.Options) throws {
        let database: Database
        do { database = try Database.open(file: file, options: options.engineOptions) } catch { throw storeError(error, path: name) }
        try self.init(database: database, path: name, model: model, configuration: configuration, options: options)
    }

    private init(database: Database, path: String, model: ManagedObjectModel, configuration: String, options: PersistentStore.Options) throws {
        let readOnly = options.readOnly
        self.options = options
        guard let names = model.entityNames(inConfiguration: configuration) else {
            throw StoreError.notAStoreFile(path: path, detail: "the model has no configuration named \(configuration)")
        }
        self.database = database
        self.path = path
        self.model = model
        self.configurationName = configuration
        self.isReadOnly = readOnly
        self.entityNames = Set(names)
        do {
            (identifier, keys) = try StoreMetadata.openOrInitialize(database, path: path, model: model, readOnly: readOnly,
                                                                    migrate: options.migratesAutomatically, newKeyFormat: options.keyFormat)
            rowCache.observe(snapshot: try database.view { $0.snapshotID })
        } catch { throw storeError(error, path: path) }
        identifierBits = ObjectID.StoreBits(identifier)
        references = StoredReferences(entities: model.infosByCode, store: identifier)
    }

    /// The lightweight migrations this store went through, oldest first.
    /// - Throws: `StoreError` for I/O errors.
    func modelHistory() throws -> [ModelMigrationRecord] {
        do { return try StoreMigration.history(database) } catch { throw storeError(error, path: path) }
    }

    /// Counters of rows read, row-cache hits and faults fired.
    var statistics: StoreStatistics { rowCache.statistics }

    func resetStatistics() { rowCache.resetStatistics() }

    /// The engine's full integrity check of the file (checksums, key order, page ownership).
    /// - Complexity: O(pages).
    func checkIntegrity() -> IntegrityReport { database.checkIntegrity() }

    /// Whether this store holds objects of `entity`.
    func holds(_ info: EntityInfo) -> Bool { entityNames.contains(info.name) }

    func objectID(code: UInt16, key: Int64, location: @autoclosure () -> String) throws -> ObjectID {
        guard let id = references.objectID(code: code, key: key) else {
            throw StoreError.corruptRow(location: location(), detail: "unknown entity code \(code)")
        }
        return id
    }

    // MARK: Reading

    /// The row of `id`, from the row cache when it holds one younger than `maxAge` seconds
    /// (nil: any age), otherwise by one point lookup. Nil when the row does not exist.
    /// - Complexity: O(1) on a cache hit, O(log n) otherwise.
    func row(for id: ObjectID, maxAge: TimeInterval?) throws -> StoredRow? {
        let key = RowKey(id)
        if let cached = rowCache.lookup(key, maxAge: maxAge) { return cached }
        do {
            return try reading { tx in
                rowCache.observe(snapshot: tx.snapshotID)
                guard let row = try readRow(tx, id) else { return nil }
                rowCache.store([(key, row)], snapshot: tx.snapshotID)
                return row
            }
        } catch { throw storeError(error, path: path) }
    }

    func readRow(_ tx: Transaction, _ id: ObjectID) throws -> StoredRow? {
        try tx.tree(id.info.rowTree).withValue(keys.rowKey(id.primaryKey)) { try decodeRow($0, of: id) }
    }

    /// The rows of `ids` (nil where a row is missing), in the order of `ids`, read as
    /// `visitRows` reads them.
    func readRows(_ tx: Transaction, _ ids: [ObjectID]) throws -> [StoredRow?] {
        var rows = [StoredRow?](repeating: nil, count: ids.count)
        try visitRows(tx, ids) { position, row in
            rows[position] = row
            return true
        }
        return rows
    }

    /// Calls `body` with the position in `ids` and the row of each ID whose row exists, in
    /// ascending key order per row tree, until it returns false. One cursor per row tree moves
    /// forward through the keys: consecutive keys (a batch of results) cost a step each, near
    /// keys a search within the current page, and only far keys a descent from the root.
    func visitRows(_ tx: Transaction, _ ids: [ObjectID], _ body: (Int, StoredRow) throws -> Bool) throws {
        // A hierarchy's rows are in one tree: one cursor per root entity, the last one at hand.
        var cursors: [UInt16: Cursor] = [:]
        var last: (root: UInt16, cursor: Cursor)?
        func precedes(_ a: Int, _ b: Int) -> Bool { (ids[a].info.rootCode, ids[a].primaryKey) < (ids[b].info.rootCode, ids[b].primaryKey) }
        let positions = Array(ids.indices)
        let ordered = zip(positions, positions.dropFirst()).allSatisfy { !precedes($1, $0) } ? positions : positions.sorted(by: precedes)
        for position in ordered {
            let id = ids[position]
            let key = keys.rowKey(id.primaryKey)
            let cursor: Cursor
            if let last, last.root == id.info.rootCode {
                cursor = last.cursor
            } else if let open = cursors[id.info.rootCode] {
                cursor = open
            } else {
                cursor = try tx.tree(id.info.rowTree).makeCursor()
                cursors[id.info.rootCode] = cursor
            }
            last = (id.info.rootCode, cursor)
            func isAtKey() -> Bool { cursor.withKey { $0.elementsEqual(key) } ?? false }
            // Consecutive keys: one step; near keys: a search in the current leaf (a seek keeps
            // the levels of the path that still cover the key).
            let advanced = try cursor.isPositioned && cursor.next()
            if !(advanced && isAtKey()) {
                guard try cursor.seek(key), isAtKey() else { continue }
            }
            // Decoded where it lies in its page (no copy of the row's bytes).
            guard let row = try cursor.withValue({ try decodeRow($0, of: id) }) else { continue }
            guard try body(position, row) else { return }
        }
    }

    /// Decodes the stored bytes of the row of `id` in place, checking its entity and column count.
    private func decodeRow(_ bytes: UnsafeRawBufferPointer, of id: ObjectID) throws -> StoredRow {
        // Built only for an error message: a string per row read would cost an allocation.
        func location() -> String { "\(id.info.rowTree)/\(id.primaryKey)" }
        let row = try RowCodec.decode(bytes, tree: id.info.rowTree, key: id.primaryKey)
        guard let info = model.infosByCode[row.entityCode], id.info.includes(info) else {
            throw StoreError.corruptRow(location: location(), detail: "entity code \(row.entityCode) is not \(id.info.name) or a sub-entity")
        }
        try row.checkColumnCount(of: info, tree: id.info.rowTree, key: id.primaryKey)
        return row
    }

    /// The members of the to-many `relationship` of `owner`, in order for ordered relationships.
    /// - Complexity: O(log n + members), one range scan of the foreign-key index or join tree.
    func members(of relationship: EntityInfo.Relationship, owner: ObjectID) throws -> [ObjectID] {
        do {
            return try reading { tx in try members(tx, relationship, owner: owner.primaryKey) }
        } catch { throw storeError(error, path: path) }
    }

    func members(_ tx: Transaction, _ relationship: EntityInfo.Relationship, owner: Int64) throws -> [ObjectID] {
        let tree: String
        let prefix: [UInt8]
        // Foreign-key entries may leave the code of the hierarchy's root out; join entries never do.
        var root: UInt16?
        switch relationship.kind {
        case .toOne: return []
        case .oneToMany:
            guard let destination = model.info(named: relationship.destinationName),
                  let foreignKeys = destination.inverse(of: relationship)?.foreignKeyTree else { return [] }
            tree = foreignKeys
            prefix = keys.ownerPrefix(owner)
            root = destination.rootCode
        case .manyToMany:
            guard let join = relationship.joinTree else { return [] }
            tree = join
            prefix = keys.joinPrefix(side: relationship.joinSide, owner: owner)
        }
        var result: [ObjectID] = []
        try tx.tree(tree).forEach(in: .prefix(prefix)) { key, value in
            let code = root.map { keys.entryCode(from: value, root: $0) } ?? IndexKeys.code(from: value)
            guard let member = IndexKeys.trailingKey(key), let code else {
                throw StoreError.corruptRow(location: "\(tree)", detail: "malformed relationship entry")
            }
            result.append(try objectID(code: code, key: member, location: tree))
            return true
        }
        return result
    }

    /// Every object ID of `entity` (and its sub-entities when `includeSubentities`), in key order.
    func allObjectIDs(of info: EntityInfo, includeSubentities: Bool = true) throws -> [ObjectID] {
        do {
            return try reading { tx in
                var result: [ObjectID] = []
                try tx.tree(info.rowTree).forEach { key, value in
                    guard let pk = IndexKeys.trailingKey(key) else {
                        throw StoreError.corruptRow(location: info.rowTree, detail: "malformed row key")
                    }
                    let row = try RowCodec.decode(value, tree: info.rowTree, key: pk)
                    let matches = includeSubentities ? info.descendantCodes.contains(row.entityCode) : row.entityCode == info.code
                    if matches { result.append(try objectID(code: row.entityCode, key: pk, location: info.rowTree)) }
                    return true
                }
                return result
            }
        } catch { throw storeError(error, path: path) }
    }
}

extension URL {
    /// The file system path, as `path` gives it. `path` first builds a set of bytes inside
    /// Foundation, whose first use in a process searches every loaded protocol conformance
    /// (about 400k instructions, a twentieth of opening a store and its first fetch);
    /// `path(percentEncoded:)` decodes the same path without it, keeping a trailing slash.
    var filePath: String {
        let path = self.path(percentEncoded: false)
        return path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/") ? String(path.dropLast()) : path
    }
}

extension PersistentStore.Options {
    /// The engine's options for a store opened with these.
    var engineOptions: Database.Options {
        var engine = Database.Options(pageSize: pageSize, cacheBytes: cacheBytes, readOnly: readOnly)
        engine.maxDirtyBytes = maxDirtyBytes
        engine.create = !readOnly && createIfMissing
        engine.durability = durability
        engine.writerTimeout = writerTimeout
        return engine
    }
}
