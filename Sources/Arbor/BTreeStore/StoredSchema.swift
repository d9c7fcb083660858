import ArborEngine
import Foundation

/// Reading a store without the app's code: what `arbor schema`, `dump` and `query` build on.
extension PersistentStore {
    /// The model schema stored in the store file at `url`, read without opening it as a store.
    /// - Throws: `StoreError.fileNotFound`, `.notAStoreFile` (not an Arbor file, or an engine
    ///   file without an object model), `.corruptStore` (a damaged catalog or model record),
    ///   `.engine` for I/O errors.
    /// - Complexity: a few page reads.
    public static func storedSchema(at url: URL) throws -> ModelSchema {
        try withStoreFile(at: url) { database, path in try schema(in: database, path: path) }
    }

    /// Opens the existing store file at `url` read-only for `body`, with errors as `StoreError`s.
    private static func withStoreFile<T>(at url: URL, _ body: (Database, String) throws -> T) throws -> T {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError.fileNotFound(path: path) }
        var options = Database.Options()
        options.readOnly = true
        options.create = false
        do { return try body(try Database.open(path: path, options: options), path) } catch { throw storeError(error, path: path) }
    }

    /// The model schema stored in a store on any `StorageFile` (an in-memory file, in tests
    /// and fuzzing).
    /// - Throws: as `storedSchema(at:)`.
    public static func storedSchema(file: StorageFile, name: String = "<memory>") throws -> ModelSchema {
        var options = Database.Options()
        options.readOnly = true
        do { return try schema(in: try Database.open(file: file, options: options), path: name) } catch { throw storeError(error, path: name) }
    }

    /// The lightweight migrations recorded in the store file at `url` (oldest first), read
    /// without opening it as a store.
    /// - Throws: as `storedSchema(at:)`.
    public static func modelHistory(at url: URL) throws -> [ModelMigrationRecord] {
        try withStoreFile(at: url) { database, path in
            _ = try schema(in: database, path: path)  // a store, not any engine file
            return try StoreMigration.history(database)
        }
    }

    private static func schema(in database: Database, path: String) throws -> ModelSchema {
        try database.view { tx in
            guard try tx.hasTree(StoreLayout.metadataTree) else {
                throw StoreError.notAStoreFile(path: path, detail: "an ArborEngine file without an object model")
            }
            guard let bytes = try tx.tree(StoreLayout.metadataTree).get(StoreMetadata.modelKey) else {
                throw StoreError.corruptStore(path: path, detail: "the metadata has no model record")
            }
            do {
                return try JSONDecoder().decode(ModelSchema.self, from: Data(bytes))
            } catch {
                throw StoreError.corruptStore(path: path, detail: "the stored model does not decode: \(error)")
            }
        }
    }
}

extension ManagedObjectModel {
    /// A model for a stored schema, every entity a plain `ManagedObject` (read its properties
    /// with `value(forKey:)`): opens any store file without the app that wrote it.
    /// - Throws: `ModelError` when the schema is not a valid model (a damaged file).
    public convenience init(schema: ModelSchema) throws {
        try self.init(entities: schema.entities.map { entity in
            EntityDescription(entity.name, superentity: entity.superentity, isAbstract: entity.isAbstract,
                              attributes: entity.attributes, relationships: entity.relationships, indexes: entity.indexes,
                              renamingIdentifier: entity.renamingIdentifier)
        }, configurations: schema.configurations)
    }

    /// Every attribute of the entity named `entity`, inherited ones first; nil for an unknown entity.
    public func attributes(ofEntity entity: String) -> [AttributeDescription]? {
        info(named: entity)?.attributes.map(\.description)
    }

    /// Every relationship of the entity named `entity`, inherited ones first.
    public func relationships(ofEntity entity: String) -> [RelationshipDescription]? {
        info(named: entity)?.relationships.map(\.description)
    }

    /// The indexes kept for the entity named `entity`, as (tree name, properties, unique,
    /// normalized, kind), including inherited ones and the automatic foreign-key indexes.
    public func indexes(ofEntity entity: String) -> [(tree: String, properties: [String], isUnique: Bool, isNormalized: Bool,
                                                      kind: IndexDescription.Kind)]? {
        info(named: entity)?.indexes.map { ($0.tree, $0.properties, $0.isUnique, $0.isNormalized, $0.kind) }
    }

    /// The names of the entities, in model order.
    public var entityNames: [String] { infos.map(\.name) }
}

extension BTreeStore {
    /// Writes a compacted copy of the store to `url` (SQLite's `VACUUM INTO`): no free pages,
    /// leaves packed full. With `compress`, leaves are LZ4-compressed and the copy opens
    /// read-only — the form in which to ship a pre-built store with an app. `url` is either the
    /// complete copy or untouched.
    /// - Returns: the sizes of the file before and of the copy, in bytes.
    /// - Throws: `StoreError` for I/O errors or a damaged source.
    /// - Complexity: O(entries); reads the newest snapshot once (writers are not blocked).
    @discardableResult
    func compact(to url: URL, compress: Bool) throws -> (sourceBytes: UInt64, compactedBytes: UInt64) {
        do {
            let report = try database.compact(to: url.path, compress: compress)
            return (report.sourceBytes, report.compactedBytes)
        } catch { throw storeError(error, path: path) }
    }
}
