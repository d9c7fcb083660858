import ArborEngine
import Foundation

/// One lightweight migration a store went through, as recorded in its metadata.
public struct ModelMigrationRecord: Codable, Sendable, Equatable {
    /// The hash of the model the store had before.
    public var fromVersionHash: String
    /// The hash of the model it was migrated to.
    public var toVersionHash: String
    /// When the migration committed.
    public var date: Date
    /// Each change, in words ("entity Stop renamed to Station", "Stop.code added", …).
    public var changes: [String]
}

/// Lightweight migration (Spec/object-store.md §9): one write transaction that rewrites the
/// rows whose bytes change, rebuilds the indexes whose entries change, carries join trees and
/// key counters over, drops what the new model no longer has and records the model history.
/// A crash before the commit leaves the old store; the commit switches to the new one at once.
enum StoreMigration {
    static let historyKey = Array("modelHistory".utf8)
    /// JSON array of "Entity.attribute": derived attributes whose values a migration left to
    /// compute (Spec/object-store.md §9, step 7).
    static let pendingDerivationsKey = Array("pendingDerivations".utf8)
    /// Entries read per step while rewriting a tree in place.
    static let chunkSize = 4_096

    /// Migrates the store in `database` from `stored` to `model`.
    /// - Throws: `StoreError.migrationNotLightweight` (nothing written) listing each change that
    ///   is not lightweight; `StoreError.migrationFailed` when the data does not fit the new model
    ///   (a new unique index over duplicate values); engine errors.
    static func migrate(_ database: Database, path: String, stored: ModelSchema, storedHash: String,
                        to model: ManagedObjectModel, keys: IndexKeys) throws {
        let oldModel: ManagedObjectModel
        do { oldModel = try ManagedObjectModel(schema: stored) } catch {
            throw StoreError.corruptStore(path: path, detail: "the stored model is not a valid model: \(error)")
        }
        let plan = MigrationPlan(old: oldModel, new: model)
        guard plan.refusals.isEmpty else { throw StoreError.migrationNotLightweight(path: path, changes: plan.refusals) }
        try database.update { tx in
            var migration = Migration(tx: tx, plan: plan, path: path, keys: keys)
            try migration.run()
            let metadata = try tx.tree(StoreLayout.metadataTree)
            var history = decodeHistory(try metadata.get(historyKey))
            history.append(ModelMigrationRecord(fromVersionHash: storedHash, toVersionHash: model.versionHash,
                                                date: Date(), changes: plan.changes))
            try metadata.put(historyKey, try encodeHistory(history))
            try metadata.put(StoreMetadata.modelKey, try ManagedObjectModel.canonicalJSON(model.schema))
            try metadata.put(StoreMetadata.modelHashKey, Array(model.versionHash.utf8))
            if !plan.pendingDerivations.isEmpty {
                // Still pending from an earlier migration: kept, if the new model still has them.
                let earlier = decodePending(try metadata.get(pendingDerivationsKey)).filter { name in
                    let parts = name.split(separator: ".").map(String.init)
                    return parts.count == 2 && model.info(named: parts[0])?.attribute(named: parts[1])?.description.derivation != nil
                }
                let pending = Array(Set(earlier + plan.pendingDerivations)).sorted()
                try metadata.put(pendingDerivationsKey, Array(try JSONEncoder().encode(pending)))
            }
        }
    }

    /// The derived attributes a migration left to compute ("Entity.attribute"); none when the
    /// record is missing or unreadable (the values then stay as the migration left them).
    static func pendingDerivations(_ database: Database) throws -> [String] {
        try database.view { tx in decodePending(try tx.tree(StoreLayout.metadataTree).get(pendingDerivationsKey)) }
    }

    /// Forgets the pending derived attributes, once computed.
    static func clearPendingDerivations(_ database: Database) throws {
        try database.update { tx in _ = try tx.tree(StoreLayout.metadataTree).delete(pendingDerivationsKey) }
    }

    private static func decodePending(_ bytes: [UInt8]?) -> [String] {
        guard let bytes else { return [] }
        return (try? JSONDecoder().decode([String].self, from: Data(bytes))) ?? []
    }

    /// The migrations recorded in the store, oldest first.
    static func history(_ database: Database) throws -> [ModelMigrationRecord] {
        try database.view { tx in decodeHistory(try tx.tree(StoreLayout.metadataTree).get(historyKey)) }
    }

    /// The history record's JSON (dates in ISO 8601); a missing or unreadable record is an empty
    /// history — it is informative, never needed to open the store.
    static func decodeHistory(_ bytes: [UInt8]?) -> [ModelMigrationRecord] {
        guard let bytes else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (try? decoder.decode([ModelMigrationRecord].self, from: Data(bytes))) ?? []
    }

    static func encodeHistory(_ history: [ModelMigrationRecord]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(history))
    }
}

/// The work of one migration inside its write transaction.
private struct Migration {
    let tx: WriteTransaction
    let plan: MigrationPlan
    let path: String
    /// The store's key format (kept: a migration rewrites entries in the format they had).
    let keys: IndexKeys
    var old: ManagedObjectModel { plan.old }
    var new: ManagedObjectModel { plan.new }
    /// Keys of rows whose entity was removed from a hierarchy that stays, by old root name.
    var dropped: [String: Set<Int64>] = [:]
    /// New roots whose rows changed (their indexes are rebuilt).
    var changedRoots: Set<String> = []

    init(tx: WriteTransaction, plan: MigrationPlan, path: String, keys: IndexKeys) {
        self.tx = tx
        self.keys = keys
        self.plan = plan
        self.path = path
    }

    mutating func run() throws {
        try findDroppedRows()
        let roots = new.infos.filter { $0.superentityName == nil }
        for root in roots where try migrateRows(root) { changedRoots.insert(root.name) }
        try migrateJoins()
        try migrateCounters()
        // Trees the new model has no use for go; the ones it needs and lacks are created; then
        // the indexes whose entries changed are rebuilt from the migrated rows.
        let needed = StoreMetadata.treeNames(of: new).union([StoreLayout.metadataTree])
        for name in try tx.treeNames() where !needed.contains(name) { try tx.dropTree(name) }
        for root in roots { try rebuildIndexes(of: root) }
        for name in needed.sorted() { _ = try tx.createTreeIfMissing(name) }
    }

    func isDropped(_ code: UInt16, _ key: Int64) -> Bool {
        guard let root = old.infosByCode[code]?.rootName, let keys = dropped[root] else { return false }
        return keys.contains(key)
    }

    /// Collects the rows of removed entities whose hierarchy stays (references to them become nil).
    mutating func findDroppedRows() throws {
        for info in old.infos where info.superentityName == nil && plan.successor[info.name] != nil {
            let removed = Set(old.infos.filter { info.includes($0) && plan.successor[$0.name] == nil }.map(\.code))
            guard !removed.isEmpty, try tx.hasTree(info.rowTree) else { continue }
            var keys: Set<Int64> = []
            try tx.tree(info.rowTree).forEachUnsafe { key, value in
                guard let code = RowCodec.entityCode(ofRow: value), let pk = IndexKeys.integer(in: key, at: 0) else {
                    throw StoreError.corruptRow(location: info.rowTree, detail: "malformed row key or header")
                }
                if removed.contains(code) { keys.insert(pk) }
                return true
            }
            dropped[info.name] = keys
        }
    }

    /// Rewrites the rows of the hierarchy `root` continues; true when any row changed.
    func migrateRows(_ root: EntityInfo) throws -> Bool {
        guard let originName = plan.predecessor[root.name], let origin = old.info(named: originName),
              try tx.hasTree(origin.rowTree) else {
            return false
        }
        // With dropped rows anywhere, references in any hierarchy may need to become nil.
        if dropped.isEmpty, plan.keepsRows(of: root, origin: origin) { return false }
        let source = try tx.tree(origin.rowTree)
        let inPlace = origin.rowTree == root.rowTree
        let target = inPlace ? source : try tx.createTreeIfMissing(root.rowTree)
        var changed = !inPlace
        var range = KeyRange.all
        while true {
            let chunk = try source.entries(in: range, limit: StoreMigration.chunkSize)
            guard let last = chunk.last else { break }
            for (key, value) in chunk {
                let location = "\(origin.rowTree)/\(IndexKeys.trailingKey(key) ?? -1)"
                let row = try RowCodec.decode(value, context: location)
                guard let migrated = plan.migrate(row, isDropped: isDropped) else {
                    if inPlace { _ = try source.delete(key) }
                    changed = true
                    continue
                }
                let bytes = RowCodec.encode(migrated)
                if inPlace && bytes == value { continue }
                try target.put(key, bytes)
                changed = true
            }
            range = KeyRange(lower: .init(last.key, inclusive: false))
        }
        return changed
    }

    /// Rebuilds each index of the hierarchy `root` whose entries may differ from the old tree's.
    func rebuildIndexes(of root: EntityInfo) throws {
        let members = new.infos.filter { root.includes($0) }
        var rebuilt: [(index: EntityInfo.Index, codes: Set<UInt16>)] = []
        for info in members {
            let inherited = Set(info.superentityName.flatMap(new.info(named:))?.indexes.map(\.tree) ?? [])
            for index in info.indexes where !inherited.contains(index.tree) {
                guard changedRoots.contains(root.name) || !keepsIndex(index, of: info) else { continue }
                if try tx.hasTree(index.tree) { try tx.dropTree(index.tree) }
                _ = try tx.createTree(index.tree)
                rebuilt.append((index, info.descendantCodes))
            }
        }
        guard !rebuilt.isEmpty, try tx.hasTree(root.rowTree) else { return }
        // Entries are gathered, sorted and inserted in key order: each insert then appends to
        // the last leaf, several times faster than inserting in row order.
        var entries = rebuilt.map { _ in SortedEntries() }
        // A text index's logical entries, written as posting blocks (`PostingTree`).
        var textEntries = rebuilt.map { _ in PostingChanges() }
        try tx.tree(root.rowTree).forEach { key, value in
            guard let pk = IndexKeys.trailingKey(key) else {
                throw StoreError.corruptRow(location: root.rowTree, detail: "malformed row key")
            }
            let row = try RowCodec.decode(value, tree: root.rowTree, key: pk)
            for (position, entry) in rebuilt.enumerated() where entry.codes.contains(row.entityCode) {
                if entry.index.isText {
                    if let text = IndexKeys.text(of: entry.index, in: row.columns) {
                        textEntries[position].add(text, kind: entry.index.kind, key: pk)
                    }
                    continue
                }
                guard let indexKey = keys.indexKey(entry.index, columns: row.columns, key: pk) else { continue }
                let prefixLength = entry.index.isUnique ? keys.uniquePrefix(entry.index, columns: row.columns)?.count ?? 0 : 0
                entries[position].append(indexKey, code: row.entityCode, uniquePrefixLength: prefixLength)
            }
            return true
        }
        for (position, entry) in rebuilt.enumerated() {
            let tree = try tx.tree(entry.index.tree)
            if entry.index.isText {
                try PostingTree(tree: tree, keys: keys).apply(textEntries[position])
                continue
            }
            var previousUnique: ArraySlice<UInt8>?
            for item in entries[position].sorted() {
                let key = entries[position].key(item)
                // Sorted, equal unique prefixes are neighbours (nil values have no prefix).
                if item.uniquePrefixLength > 0 {
                    let prefix = key.prefix(item.uniquePrefixLength)
                    if prefix == previousUnique {
                        throw StoreError.migrationFailed(path: path, detail: "the unique index \(entry.index.name) of \(root.name) "
                            + "cannot be built: two rows have equal \(entry.index.properties.joined(separator: ", "))")
                    }
                    previousUnique = prefix
                }
                try tree.put(Array(key), keys.entryValue(item.code, root: root.code))
            }
        }
    }

    /// Whether the old tree of `index` already holds exactly its entries: same tree, same
    /// properties (through renames), same kind.
    func keepsIndex(_ index: EntityInfo.Index, of info: EntityInfo) -> Bool {
        guard let originName = plan.predecessor[info.name], let origin = old.info(named: originName),
              let previous = origin.indexes.first(where: { $0.tree == index.tree }) else { return false }
        let originsOfProperties = index.properties.map { plan.propertyOrigins["\(info.name).\($0)"] ?? "?" }
        return originsOfProperties == previous.properties && previous.isUnique == index.isUnique
            && previous.isNormalized == index.isNormalized && previous.kind == index.kind && previous.isForeignKey == index.isForeignKey
            && (previous.orderSlot == nil) == (index.orderSlot == nil)
    }

    /// Carries every many-to-many join tree over: renamed trees are copied, entry sides follow
    /// the new naming, member codes are remapped, entries of dropped rows go.
    func migrateJoins() throws {
        var results: [(tree: String, entries: [(key: [UInt8], value: [UInt8])]?)] = []
        var seen: Set<String> = []
        for info in new.infos {
            for relationship in info.relationships where relationship.kind == .manyToMany && relationship.joinSide == 0 {
                guard let tree = relationship.joinTree, seen.insert(tree).inserted else { continue }
                results.append((tree, try migratedJoinEntries(info, relationship)))
            }
        }
        for (tree, entries) in results {
            guard let entries else { continue }  // unchanged in place
            if try tx.hasTree(tree) { try tx.dropTree(tree) }
            let target = try tx.createTree(tree)
            for (key, value) in entries.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) { try target.put(key, value) }
        }
    }

    /// The entries the new join tree of `relationship` gets; nil when the old tree can stay as it is.
    func migratedJoinEntries(_ info: EntityInfo, _ relationship: EntityInfo.Relationship) throws -> [(key: [UInt8], value: [UInt8])]? {
        guard let tree = relationship.joinTree else { return nil }
        guard let originEntity = plan.predecessor[info.name], let originName = plan.propertyOrigins["\(info.name).\(relationship.description.name)"],
              let originInfo = old.info(named: originEntity), let previous = originInfo.relationship(named: originName),
              let oldTree = previous.joinTree, try tx.hasTree(oldTree) else {
            return []  // a new relationship: an empty tree
        }
        let ownerRoot = [originInfo.rootName, old.info(named: previous.destinationName)?.rootName ?? ""]
        var entries: [(key: [UInt8], value: [UInt8])] = []
        var changed = oldTree != tree
        try tx.tree(oldTree).forEach { key, value in
            guard let components = try? TupleKey.decode(key), components.count == 4,
                  case .uint8(let side) = components[0], let owner = components[1].integerValue,
                  let order = components[2].integerValue, let member = components[3].integerValue,
                  let code = IndexKeys.code(from: value) else {
                throw StoreError.corruptRow(location: oldTree, detail: "malformed join entry")
            }
            let direction = side == previous.joinSide ? 0 : 1
            let ownerRootName = ownerRoot[direction]
            guard let newCode = plan.codes[code], !isDropped(code, member), !(dropped[ownerRootName]?.contains(owner) ?? false) else {
                changed = true
                return true
            }
            let newSide = UInt8(direction)
            if newSide != side || newCode != code { changed = true }
            entries.append((keys.joinKey(side: newSide, owner: owner, order: order, member: member), IndexKeys.codeValue(newCode)))
            return true
        }
        return changed ? entries : nil
    }

    /// Renames the primary-key counters of renamed roots and removes those of removed roots.
    func migrateCounters() throws {
        let metadata = try tx.tree(StoreLayout.metadataTree)
        var values: [String: [UInt8]] = [:]
        for info in old.infos where info.superentityName == nil {
            if let value = try metadata.get(StoreMetadata.primaryKeyKey(root: info.name)) { values[info.name] = value }
            _ = try metadata.delete(StoreMetadata.primaryKeyKey(root: info.name))
        }
        for info in new.infos where info.superentityName == nil {
            if let origin = plan.predecessor[info.name], let value = values[origin] {
                try metadata.put(StoreMetadata.primaryKeyKey(root: info.name), value)
            }
        }
    }
}

/// Index entries gathered for sorting: keys in one buffer (no allocation per entry).
private struct SortedEntries {
    struct Item {
        var offset: Int
        var length: Int
        var code: UInt16
        /// The length of the key's unique prefix (0: not unique, or a nil value).
        var uniquePrefixLength: Int
    }
    var bytes: [UInt8] = []
    var items: [Item] = []

    mutating func append(_ key: [UInt8], code: UInt16, uniquePrefixLength: Int) {
        items.append(Item(offset: bytes.count, length: key.count, code: code, uniquePrefixLength: uniquePrefixLength))
        bytes.append(contentsOf: key)
    }

    func key(_ item: Item) -> ArraySlice<UInt8> { bytes[item.offset..<item.offset + item.length] }

    func sorted() -> [Item] {
        bytes.withUnsafeBufferPointer { buffer in
            items.sorted { a, b in
                let x = UnsafeBufferPointer(rebasing: buffer[a.offset..<a.offset + a.length])
                let y = UnsafeBufferPointer(rebasing: buffer[b.offset..<b.offset + b.length])
                return x.lexicographicallyPrecedes(y)
            }
        }
    }
}
