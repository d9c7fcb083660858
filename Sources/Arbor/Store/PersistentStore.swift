import ArborEngine
import Foundation

/// One store under a coordinator (Core Data's `NSPersistentStore`): the objects of the
/// entities of one configuration, in a file or in memory.
///
/// Sendable: its storage is (snapshot readers, one writer at a time).
public final class PersistentStore: Sendable {
    /// Where a store keeps its objects (Core Data's store types).
    public enum StoreType: String, Sendable {
        /// A file of copy-on-write B+trees (Spec/file-format.md): durable, shared between
        /// processes, indexed.
        case file = "Arbor"
        /// Memory only (Core Data's `NSInMemoryStoreType`): the same model, predicates and
        /// results, no file; every fetch evaluates its predicate on each object of the
        /// entity, and the store is gone when its last reference is.
        case inMemory = "InMemory"
    }

    /// How to open a store.
    public struct Options: Sendable {
        public var readOnly = false
        /// Create the file when it does not exist (ignored when read-only).
        public var createIfMissing = true
        public var durability: Database.Durability = .full
        /// How long a save (or a batch request) waits while another context's save or another
        /// process (an `arbor import`, a `GTFSImporter`) writes the store, before it throws
        /// `StoreError.engine(.writerBusy)` and writes nothing; the context keeps its changes
        /// for a later save. nil, the default, waits as long as the other writer takes. (SQLite's
        /// `busy_timeout` bounds a wait for its write lock the same way.) It also bounds
        /// `replacePersistentStore(at:withStoreAt:)`'s wait for this store's file.
        public var writerTimeout: Duration?
        /// The engine's page cache size.
        public var cacheBytes = 64 << 20
        /// Bytes of modified pages a save keeps in memory before writing leaves early (to bound
        /// a large batch insert's memory). A leaf written early and changed again in the same
        /// transaction is written again: a bulk import into indexes larger than this budget,
        /// whose entries arrive in random key order, writes their leaves many times over.
        public var maxDirtyBytes = 64 << 20
        /// Page size of a new file.
        public var pageSize = Limits.defaultPageSize
        /// Migrate a store written with another model when the change is lightweight (the
        /// default, as for Core Data's persistent containers); false: refuse with `.modelMismatch`.
        public var migratesAutomatically = true
        /// The key format of a new file; older formats stay readable and writable, and tests
        /// make format-1 files to prove it.
        var keyFormat = IndexKeys.currentFormat
        public init(readOnly: Bool = false, createIfMissing: Bool = true) {
            self.readOnly = readOnly
            self.createIfMissing = createIfMissing
        }
    }

    public let type: StoreType
    /// The file's location; a descriptive name for a store in memory or on a `StorageFile`.
    public let path: String
    /// The store's UUID, part of every permanent `ObjectID` of its objects (recorded in the
    /// file at creation).
    public let identifier: UUID
    public let configurationName: String
    public let isReadOnly: Bool
    /// The options the store was opened with.
    public let options: Options
    let model: ManagedObjectModel
    let entityNames: Set<String>
    /// The entities of `model` in `entityNames`, by code: `holds` compares an entity of the
    /// model with its entry instead of hashing its name at every fetch.
    private let heldEntities: EntityCodeTable
    /// Resolves the reference columns of rows read here (kept by loaded objects).
    let references: StoredReferences
    /// Where the rows are.
    let storage: any StoreStorage

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
    public convenience init(url: URL, model: ManagedObjectModel, configuration: String = ManagedObjectModel.defaultConfiguration,
                            options: Options = Options()) throws {
        let store = try BTreeStore(url: url, model: model, configuration: configuration, options: options)
        self.init(type: .file, storage: store, path: store.path, identifier: store.identifier, model: model,
                  configuration: configuration, options: options)
    }

    /// Opens a store on any `StorageFile` (an in-memory or fault-injecting file, in tests).
    public convenience init(file: StorageFile, name: String = "<memory>", model: ManagedObjectModel,
                            configuration: String = ManagedObjectModel.defaultConfiguration, options: Options = Options()) throws {
        let store = try BTreeStore(file: file, name: name, model: model, configuration: configuration, options: options)
        self.init(type: .file, storage: store, path: name, identifier: store.identifier, model: model,
                  configuration: configuration, options: options)
    }

    /// A new, empty store in memory (Core Data's `NSInMemoryStoreType`) for the entities of
    /// `configuration`. `options.readOnly` makes a store nothing can be saved to.
    /// - Throws: `StoreError.notAStoreFile` when the model has no such configuration.
    public convenience init(inMemoryWith model: ManagedObjectModel, configuration: String = ManagedObjectModel.defaultConfiguration,
                            name: String = "<in-memory>", options: Options = Options()) throws {
        let identifier = UUID()
        let store = try InMemoryStore(model: model, configuration: configuration, identifier: identifier, name: name,
                                      readOnly: options.readOnly)
        self.init(type: .inMemory, storage: store, path: name, identifier: identifier, model: model,
                  configuration: configuration, options: options)
    }

    private init(type: StoreType, storage: any StoreStorage, path: String, identifier: UUID, model: ManagedObjectModel,
                 configuration: String, options: Options) {
        self.type = type
        self.storage = storage
        self.path = path
        self.identifier = identifier
        self.model = model
        configurationName = configuration
        isReadOnly = options.readOnly
        self.options = options
        let names = Set(model.entityNames(inConfiguration: configuration) ?? [])
        entityNames = names
        heldEntities = EntityCodeTable(model.infos.filter { names.contains($0.name) })
        references = StoredReferences(entities: model.infosByCode, store: identifier)
    }

    /// The B-tree store behind a file store (nil in memory).
    var fileStorage: BTreeStore? { storage as? BTreeStore }

    /// Whether this store holds objects of `entity`.
    /// O(1) for an entity of the store's model; by name for another model's (an ID from elsewhere).
    func holds(_ info: EntityInfo) -> Bool {
        if model.infosByCode[info.code] === info { return heldEntities[info.code] != nil }
        return entityNames.contains(info.name)
    }

    /// The lightweight migrations this store went through, oldest first (none in memory).
    /// - Throws: `StoreError` for I/O errors.
    public func modelHistory() throws -> [ModelMigrationRecord] {
        try fileStorage?.modelHistory() ?? []
    }

    /// Counters of rows read, row-cache hits and faults fired.
    public var statistics: StoreStatistics { storage.statistics }

    public func resetStatistics() { storage.resetStatistics() }

    /// The engine's full integrity check of the file (checksums, key order, page ownership);
    /// an empty, sound report for a store in memory.
    /// - Complexity: O(pages).
    public func checkIntegrity() -> IntegrityReport { fileStorage?.checkIntegrity() ?? IntegrityReport() }

    /// Writes a compacted copy of the store file to `url` (SQLite's `VACUUM INTO`): no free
    /// pages, leaves packed full. With `compress`, leaves are LZ4-compressed and the copy opens
    /// read-only — the form in which to ship a pre-built store with an app. `url` is either the
    /// complete copy or untouched.
    /// - Returns: the sizes of the file before and of the copy, in bytes.
    /// - Throws: `StoreError` for I/O errors or a damaged source; `.unsupported` for a store in
    ///   memory (it has no file to copy).
    /// - Complexity: O(entries); reads the newest snapshot once (writers are not blocked).
    @discardableResult
    public func compact(to url: URL, compress: Bool = false) throws -> (sourceBytes: UInt64, compactedBytes: UInt64) {
        guard let fileStorage else { throw StoreError.unsupported("\(path) is in memory: it has no file to compact") }
        return try fileStorage.compact(to: url, compress: compress)
    }

    /// Runs `body` holding the writer lock of the store file at `url`, without opening it: every
    /// save to that file, in any process, waits until `body` returns.
    ///
    /// Hold it to replace the file whole — read it, write a new version beside it, rename that
    /// over it — without losing another process's save made meanwhile. A store opened on the old
    /// file goes on reading it, and its next save throws `StoreError.engine(.fileReplaced)`
    /// instead of writing where no one looks: open the store again.
    /// Do not save to the same file from the calling thread inside `body` (it would wait forever).
    /// - Parameters:
    ///   - url: the store file.
    ///   - timeout: how long to wait for another writer to finish (see `Options.writerTimeout`);
    ///     nil waits as long as it takes.
    ///   - body: the work done holding the lock.
    /// - Throws: `StoreError.engine(.writerBusy)` when `timeout` passed first (`body` did not
    ///   run); `StoreError.engine` when the lock file cannot be opened; what `body` throws.
    @discardableResult
    public static func withWriterLock<R>(at url: URL, timeout: Duration? = nil, _ body: () throws -> R) throws -> R {
        do {
            return try Database.withWriterLock(path: url.path, timeout: timeout, body)
        } catch let error as ArborError {
            throw storeError(error, path: url.path)
        }
    }
}
