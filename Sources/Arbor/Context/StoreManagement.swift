import ArborEngine
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where and how to open one store (Core Data's `NSPersistentStoreDescription`).
public struct PersistentStoreDescription: Sendable {
    public var url: URL
    /// The model configuration whose entities the store holds.
    public var configuration: String
    public var options: PersistentStore.Options

    /// A file store (`.file`, the default) or a store in memory (`.inMemory`, whose `url`
    /// only names it).
    public var type: PersistentStore.StoreType = .file

    public init(url: URL, configuration: String = ManagedObjectModel.defaultConfiguration, readOnly: Bool = false) {
        self.url = url
        self.configuration = configuration
        options = PersistentStore.Options(readOnly: readOnly)
    }

    /// A store in memory (Core Data's `NSInMemoryStoreType`) for the entities of `configuration`.
    public static func inMemory(configuration: String = ManagedObjectModel.defaultConfiguration) -> PersistentStoreDescription {
        var description = PersistentStoreDescription(url: URL(fileURLWithPath: "/dev/null"), configuration: configuration)
        description.type = .inMemory
        return description
    }
}

extension PersistentStoreCoordinator {
    /// Opens and adds the store `description` names.
    /// - Throws: `StoreError` (missing file when read-only, foreign or corrupt file, model mismatch).
    @discardableResult
    public func addPersistentStore(with description: PersistentStoreDescription) throws -> PersistentStore {
        switch description.type {
        case .file:
            return try addPersistentStore(at: description.url, configuration: description.configuration, options: description.options)
        case .inMemory:
            let store = try PersistentStore(inMemoryWith: managedObjectModel, configuration: description.configuration,
                                            options: description.options)
            try add(store)
            return store
        }
    }

    /// The added store whose file is at `url`, if any.
    public func persistentStore(for url: URL) -> PersistentStore? {
        let path = url.standardizedFileURL.path
        return persistentStores.first { URL(fileURLWithPath: $0.path).standardizedFileURL.path == path }
    }

    /// Deletes the store file at `url` and its lock file, removing the store from this
    /// coordinator first when it was added. A missing file is not an error.
    /// - Throws: `StoreError.engine` when the file cannot be removed.
    public func destroyPersistentStore(at url: URL) throws {
        if let store = persistentStore(for: url) { remove(store) }
        for path in [url.path, url.path + "-lock"] where FileManager.default.fileExists(atPath: path) {
            guard unlink(path) == 0 else { throw StoreError.engine(.io(operation: "unlink \(path)", errno: errno)) }
        }
    }

    /// Replaces the store file at `destination` with a copy of the store at `source` (which must
    /// be a store of this coordinator's model). The copy is written beside `destination` and
    /// renamed over it, so `destination` is the old store or the whole new one, never a mix.
    /// The rename happens holding `destination`'s writer lock: another process's save to it ends
    /// before, or fails with `StoreError.engine(.fileReplaced)` after (it must reopen the store).
    /// When `destination` was added to this coordinator, it is opened again afterwards, with the
    /// same configuration and options, and its `writerTimeout` bounds the wait for that lock.
    /// - Throws: `StoreError` when `source` cannot be opened as a store of the model, or on I/O
    ///   errors; `StoreError.engine(.writerBusy)` when the lock was not free within the
    ///   destination's writer timeout (nothing was replaced).
    public func replacePersistentStore(at destination: URL, withStoreAt source: URL) throws {
        let sourceStore = try PersistentStore(url: source, model: managedObjectModel, options: PersistentStore.Options(readOnly: true))
        let current = persistentStore(for: destination)
        try PersistentStore.withWriterLock(at: destination, timeout: current?.options.writerTimeout) {
            try sourceStore.compact(to: destination)  // written to a temporary file, then renamed
        }
        if let current {
            remove(current)
            try addPersistentStore(at: destination, configuration: current.configurationName, options: current.options)
        }
    }

    /// Copies `store` into a new file at `url`, removes `store` from this coordinator and adds
    /// the copy in its place, with the same configuration and options (Core Data's "Save As").
    ///
    /// - A file store is copied compacted and keeps its store UUID, so object IDs stay valid;
    ///   the old file is left as it was.
    /// - A store in memory is written object by object (`StoreCopy`): its objects get new IDs in
    ///   the file (fetch them again, or map old IDs through their attributes), and it keeps
    ///   its objects until it is released.
    ///
    /// Either way the copy is written beside `url` and renamed into place once complete, so
    /// `url` is the whole store or nothing, and on any error the coordinator keeps `store`.
    /// - Returns: the new store.
    /// - Throws: `StoreError` when `url` exists or cannot be written.
    @discardableResult
    public func migratePersistentStore(_ store: PersistentStore, to url: URL) throws -> PersistentStore {
        guard !FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError.engine(.io(operation: "migrate to \(url.path): the file exists", errno: EEXIST))
        }
        switch store.type {
        case .file: try store.compact(to: url)
        case .inMemory: try writeFile(of: store, to: url)
        }
        remove(store)
        var options = store.options
        options.createIfMissing = false
        do {
            return try addPersistentStore(at: url, configuration: store.configurationName, options: options)
        } catch {
            try? add(store)  // put the old one back: the coordinator keeps working
            throw error
        }
    }

    /// Writes every object of `store` into a new store file at `url`, through a temporary file
    /// beside it that is synced, then renamed into place.
    private func writeFile(of store: PersistentStore, to url: URL) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).migrating-\(UUID().uuidString.prefix(8))")
        defer {
            try? FileManager.default.removeItem(at: temporary)
            try? FileManager.default.removeItem(atPath: temporary.path + "-lock")
        }
        let copy = try StoreCopy(from: store)
        var options = store.options
        options.readOnly = false
        options.createIfMissing = true
        options.durability = .full
        do {  // the file store is released (closed) before the rename
            let file = try PersistentStore(url: temporary, model: managedObjectModel, configuration: store.configurationName, options: options)
            try copy.write(into: file)
        }
        guard rename(temporary.path, url.path) == 0 else {
            throw StoreError.engine(.io(operation: "rename to \(url.path)", errno: errno))
        }
    }
}

extension PersistentContainer {
    /// A container over several stores, one per description (for example a read-only seed store
    /// and a writable user store, each holding the entities of its configuration).
    /// - Throws: `StoreError` for the first store that cannot be opened.
    public convenience init(name: String, model: ManagedObjectModel, descriptions: [PersistentStoreDescription]) throws {
        try self.init(name: name, model: model, stores: descriptions)
    }
}
