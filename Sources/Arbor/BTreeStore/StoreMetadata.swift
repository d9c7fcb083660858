import ArborEngine
import Foundation

/// The store's own records in the `arbor.metadata` tree: UUID, model, model hash and the
/// primary-key counters (Spec/object-store.md, "Metadata").
enum StoreMetadata {
    static let uuidKey = Array("uuid".utf8)
    static let modelKey = Array("model".utf8)
    static let modelHashKey = Array("modelHash".utf8)
    /// One byte: how integers are encoded in keys (`IndexKeys`); absent in stores of format 1.
    static let keyFormatKey = Array("keyFormat".utf8)
    static func primaryKeyKey(root: String) -> [UInt8] { Array("pk.\(root)".utf8) }

    /// Verifies the stored model against `model` and returns the store UUID and key format;
    /// initializes an empty file (metadata, every tree of the model) when allowed.
    /// A store with another model is migrated first when `migrate` allows it and the change is
    /// lightweight (see `StoreMigration`).
    static func openOrInitialize(_ database: Database, path: String, model: ManagedObjectModel, readOnly: Bool,
                                 migrate: Bool = false, newKeyFormat: UInt8 = IndexKeys.currentFormat) throws -> (uuid: UUID, keys: IndexKeys) {
        let (hasMetadata, treeNames) = try database.view { tx in (try tx.hasTree(StoreLayout.metadataTree), try tx.treeNames()) }
        if !hasMetadata {
            guard treeNames.isEmpty else {
                throw StoreError.notAStoreFile(path: path, detail: "an ArborEngine file without an object model (trees: \(treeNames.prefix(5).joined(separator: ", ")))")
            }
            guard !readOnly else { throw StoreError.notAStoreFile(path: path, detail: "the file is empty and the store is read-only") }
            return (try initialize(database, model: model, keyFormat: newKeyFormat), IndexKeys(format: newKeyFormat))
        }
        let (uuid, storedHash, stored, keys) = try database.view { tx -> (UUID, String, ModelSchema?, IndexKeys) in
            let metadata = try tx.tree(StoreLayout.metadataTree)
            guard let uuidBytes = try metadata.get(uuidKey), uuidBytes.count == 16 else {
                throw StoreError.corruptStore(path: path, detail: "the metadata has no valid store UUID")
            }
            guard let hashBytes = try metadata.get(modelHashKey), let storedHash = String(validating: hashBytes, as: UTF8.self) else {
                throw StoreError.corruptStore(path: path, detail: "the metadata has no model hash")
            }
            var keys = IndexKeys(format: 1)
            if let format = try metadata.get(keyFormatKey) {
                guard format.count == 1, (1...IndexKeys.currentFormat).contains(format[0]) else {
                    throw StoreError.corruptStore(path: path, detail: "unsupported key format \(format) (this version reads 1 to \(IndexKeys.currentFormat))")
                }
                keys = IndexKeys(format: format[0])
            }
            var stored: ModelSchema?
            if storedHash != model.versionHash, let bytes = try metadata.get(modelKey) {
                stored = try? JSONDecoder().decode(ModelSchema.self, from: Data(bytes))
            }
            let b = uuidBytes
            return (UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])),
                    storedHash, stored, keys)
        }
        guard storedHash != model.versionHash else { return (uuid, keys) }
        guard let stored else {
            throw StoreError.modelMismatch(path: path, storeHash: storedHash, modelHash: model.versionHash,
                                           differences: ["the stored model could not be decoded"])
        }
        guard migrate && !readOnly else {
            throw StoreError.modelMismatch(path: path, storeHash: storedHash, modelHash: model.versionHash,
                                           differences: stored.differences(to: model.schema))
        }
        try StoreMigration.migrate(database, path: path, stored: stored, storedHash: storedHash, to: model, keys: keys)
        return (uuid, keys)
    }

    private static func initialize(_ database: Database, model: ManagedObjectModel, keyFormat: UInt8) throws -> UUID {
        let uuid = UUID()
        try database.update { tx in
            let metadata = try tx.createTree(StoreLayout.metadataTree)
            try metadata.put(uuidKey, withUnsafeBytes(of: uuid.uuid) { Array($0) })
            try metadata.put(modelKey, try ManagedObjectModel.canonicalJSON(model.schema))
            try metadata.put(modelHashKey, Array(model.versionHash.utf8))
            // Format 1 predates the record: its files have none.
            if keyFormat >= 2 { try metadata.put(keyFormatKey, [keyFormat]) }
            for tree in treeNames(of: model) { _ = try tx.createTreeIfMissing(tree) }
        }
        return uuid
    }

    /// Every tree the model's objects live in.
    static func treeNames(of model: ManagedObjectModel) -> Set<String> {
        var names: Set<String> = []
        for info in model.infos {
            names.insert(info.rowTree)
            for index in info.indexes { names.insert(index.tree) }
            for relationship in info.relationships { if let join = relationship.joinTree { names.insert(join) } }
        }
        return names
    }
}

extension ModelSchema {
    /// Human-readable differences from `self` (stored) to `other` (the app's model).
    public func differences(to other: ModelSchema) -> [String] {
        var result: [String] = []
        let mine = Dictionary(uniqueKeysWithValues: entities.map { ($0.name, $0) })
        let theirs = Dictionary(uniqueKeysWithValues: other.entities.map { ($0.name, $0) })
        for name in mine.keys.sorted() where theirs[name] == nil { result.append("entity \(name) removed") }
        for name in theirs.keys.sorted() where mine[name] == nil { result.append("entity \(name) added") }
        for name in mine.keys.sorted() {
            guard let old = mine[name], let new = theirs[name], old != new else { continue }
            if old.superentity != new.superentity { result.append("\(name): superentity changed") }
            if old.isAbstract != new.isAbstract { result.append("\(name): abstract flag changed") }
            compare(old.attributes, new.attributes, kind: "attribute", entity: name, into: &result)
            compare(old.relationships, new.relationships, kind: "relationship", entity: name, into: &result)
            compare(old.indexes, new.indexes, kind: "index", entity: name, into: &result)
        }
        if configurations != other.configurations { result.append("configurations changed") }
        if result.isEmpty { result.append("the stored model is laid out differently") }
        return result
    }

    private func compare<T: Hashable>(_ old: [T], _ new: [T], kind: String, entity: String, into result: inout [String]) {
        func name(_ value: T) -> String {
            switch value {
            case let attribute as AttributeDescription: return attribute.name
            case let relationship as RelationshipDescription: return relationship.name
            case let index as IndexDescription: return index.name
            default: return "\(value)"
            }
        }
        let oldByName = Dictionary(old.map { (name($0), $0) }, uniquingKeysWith: { a, _ in a })
        let newByName = Dictionary(new.map { (name($0), $0) }, uniquingKeysWith: { a, _ in a })
        for key in oldByName.keys.sorted() where newByName[key] == nil { result.append("\(entity): \(kind) \(key) removed") }
        for key in newByName.keys.sorted() where oldByName[key] == nil { result.append("\(entity): \(kind) \(key) added") }
        for key in oldByName.keys.sorted() where newByName[key] != nil && newByName[key] != oldByName[key] {
            result.append("\(entity): \(kind) \(key) changed")
        }
        if old != new && Set(old.map(name)) == Set(new.map(name)) && old.map(name) != new.map(name) {
            result.append("\(entity): \(kind)s reordered")
        }
    }
}
