import Dispatch

/// An ArborEngine store: one file of copy-on-write B+trees with snapshot readers and one writer.
///
/// ```swift
/// let db = try Database.open(path: "transit.arbor")
/// try db.update { tx in
///     let stops = try tx.createTreeIfMissing("stops")
///     try stops.put(TupleKey.encode([.int64(42)]), Array("Alexanderplatz".utf8))
/// }
/// let name = try db.view { tx in try tx.tree("stops").get(TupleKey.encode([.int64(42)])) }
/// ```
/// Any number of read transactions (each a consistent snapshot) run alongside at most one write
/// transaction, in this process and in others (through the lock file `<path>-lock`).
/// `Database` is `Sendable`; transactions are confined to the thread that uses them.
public final class Database: Sendable {
    /// How a database is opened.
    public struct Options: Sendable {
        /// Page size for a new file (existing files keep theirs). A power of two, 4 KiB–64 KiB.
        public var pageSize: Int = Limits.defaultPageSize
        /// Bytes of validated pages kept in memory (LRU).
        public var cacheBytes: Int = 64 << 20
        /// Bytes of modified pages a write transaction keeps in memory before writing leaves
        /// early (to free pages that no reader can see yet); bounds a large import's memory.
        public var maxDirtyBytes: Int = 64 << 20
        /// Open without write access (also works on read-only media).
        public var readOnly: Bool = false
        /// Create the file when missing.
        public var create: Bool = true
        /// Use a lock file for the cross-process writer lock and reader table.
        public var useLockFile: Bool = true
        /// When a commit becomes durable.
        public var durability: Durability = .full
        /// How long `beginWrite()` waits for the writer lock while another thread or process
        /// holds it, before it throws `ArborError.writerBusy` (SQLite's busy timeout). nil, the
        /// default, waits as long as the other writer takes: a whole import, with `arbor import`
        /// or `GTFSImporter` writing the store. `sync()` always waits: the sync when the
        /// database is released must not be skipped. A replacer passes its own bound to
        /// `withWriterLock(path:timeout:_:)`.
        public var writerTimeout: Duration?

        public init(pageSize: Int = Limits.defaultPageSize, cacheBytes: Int = 64 << 20, readOnly: Bool = false) {
            self.pageSize = pageSize
            self.cacheBytes = cacheBytes
            self.readOnly = readOnly
        }
    }

    struct State {
        /// The newest commit: what the next write transaction builds on.
        var meta: Meta
        /// What new read transactions see: `meta`, except while a `.full` commit of a group
        /// waits for its sync (a commit is visible once `commit()` could return).
        var readable: Meta
        var poisoned = false
        /// The newest commit this process knows to be on stable storage, with its meta page's
        /// checksum; nil until a sync (a file just opened may hold commits still in the OS cache).
        var durable: (txid: UInt64, checksum: UInt32, slot: PageID)?
        /// The last commit this process made, as (id, meta page checksum).
        var lastCommit: (txid: UInt64, checksum: UInt32)?
        /// This process committed something it has not synced (deferred durability).
        var hasUnsyncedCommit = false
        /// Commits since the newest one known durable (`.normal` syncs when it reaches its limit).
        var unsyncedCommits = 0
        /// A timed sync is queued (`.normal` with an interval).
        var syncScheduled = false
        /// Group commit (see `Database+GroupCommit.swift`): threads waiting for the writer lock,
        /// `.full` commits whose sync was left to them, and those commits' threads.
        var queuedWriters = 0
        var groupTxid: UInt64 = 0
        /// Why a group commit's sync failed (what its waiting commits throw).
        var groupSyncFailure: (any Error)?
        var durabilityWaiters: [(txid: UInt64, signal: DispatchSemaphore)] = []
        /// A group sync is running (its runner then writes and syncs `deferredMeta`, if any).
        var syncInFlight = false
        /// The newest `.full` commit that arrived during a group sync: its meta page waits for
        /// that sync (see `Database+GroupCommit.swift`), with the durable commit its plan protected.
        var deferredMeta: (meta: Meta, plannedDurable: UInt64)?
        /// The id of the newest commit whose meta page is not written yet (0: none).
        var unwrittenMeta: UInt64 = 0
        /// The freelist entries the last writer found pinned (see `loadFreelistEntry`).
        var freelistHint: FreelistHint?
        /// The meta page passed over on open was overwritten (see `retireRejectedMeta`).
        var rejectedMetaRetired = false
        /// `.full` commits of this process wait for a sync.
        var isGroupWaiting: Bool { !poisoned && groupTxid > durableTxid }
        /// The id of the newest commit known durable (0: none).
        var durableTxid: UInt64 { durable?.txid ?? 0 }

        /// Whether commit `txid`'s meta page waits for a group sync's runner (not on disk yet).
        func isUnwritten(_ txid: UInt64) -> Bool { unwrittenMeta != 0 && unwrittenMeta == txid }

        /// `commit` as its meta page holds it (slot and checksum) when the runner has written it.
        func asWritten(_ commit: Meta) -> Meta { meta.txid == commit.txid ? meta : commit }

        /// Records `commit` as the newest one; `durable`, when given, is the newest commit it
        /// synced. Returns whether new readers see it now (a `.full` commit only once synced)
        /// and whether a timed sync must be queued.
        mutating func recordCommit(_ commit: Meta, durable: Meta?, durability: Durability) -> (publishes: Bool, schedulesSync: Bool) {
            meta = commit
            lastCommit = (commit.txid, commit.checksum)
            // A group commit's sync may have covered it already.
            let synced = durable?.txid == commit.txid || durableTxid >= commit.txid
            hasUnsyncedCommit = !synced
            unsyncedCommits = durable == nil ? unsyncedCommits + 1 : (durable?.txid == commit.txid ? 0 : 1)
            let publishes = synced || durability != .full
            if publishes { readable = commit }
            guard hasUnsyncedCommit, !syncScheduled, durability.syncInterval != nil else { return (publishes, false) }
            syncScheduled = true
            return (publishes, true)
        }
    }

    let file: StorageFile
    public let path: String
    public let pageSize: Int
    public let isReadOnly: Bool
    let options: Options
    let cache: PageCache
    let registry: ReaderRegistry
    let state: Locked<State>
    /// Held while a meta page is written (and synced, in a `.full` commit) and during a group
    /// commit's sync; holds the newest meta page this process wrote.
    let metaWrites = Locked<Meta?>(nil)
    /// Catalog records of the newest snapshot read transactions looked trees up in, by name:
    /// the read transactions of one snapshot (every fetch between two commits) skip the catalog
    /// walk. A committed snapshot's records never change, so the snapshot id is the whole key.
    private let treeInfoCache = Locked(TreeInfoCache())
    /// Leaf directories of large trees, shared by read transactions (see `LeafDirectory`).
    private let leafDirectories: Locked<LeafDirectories>
    /// Damage found on open in the newest commit's pages, which made the store open at the
    /// commit before it; reported by `checkIntegrity` while that state is current.
    let openingProblems: [IntegrityReport.Problem]
    /// The transaction the store opened at.
    let openedTransaction: UInt64
    /// The newest meta page when opening passed it over (its commit is incomplete): later reads
    /// of the meta pages ignore it until a commit overwrites it.
    let rejectedAtOpen: Meta?

    /// Opens the store file at `path`, creating it when missing (unless read-only).
    /// - Throws: `ArborError` naming what is wrong: not an Arbor file, a newer format, a
    ///   corrupt or truncated file, an invalid page size, or an I/O error.
    public static func open(path: String, options: Options = Options()) throws -> Database {
        guard Limits.isValidPageSize(options.pageSize) else { throw ArborError.invalidPageSize(options.pageSize) }
        var attempts = 0
        while true {
            let file = try POSIXStorageFile(path: path, readOnly: options.readOnly, create: options.create)
            let lockFile = options.useLockFile ? try LockFile.open(path: path + "-lock") : nil
            do {
                return try Database(file: file, path: path, lockFile: lockFile, options: options)
            } catch ArborError.fileReplaced where attempts < 100 {
                attempts += 1  // the file created was replaced before it was written: open the one there
            }
        }
    }

    /// Opens a store on any `StorageFile` (an in-memory or fault-injecting file in tests).
    /// Without a lock file, readers and writers are coordinated within this process only.
    public static func open(file: StorageFile, options: Options = Options()) throws -> Database {
        guard Limits.isValidPageSize(options.pageSize) else { throw ArborError.invalidPageSize(options.pageSize) }
        return try Database(file: file, path: "<memory>", lockFile: nil, options: options)
    }

    private init(file: StorageFile, path: String, lockFile: LockFile?, options: Options) throws {
        self.file = file
        self.path = path
        self.options = options
        self.isReadOnly = options.readOnly
        let registry = ReaderRegistry(lockFile: lockFile)
        self.registry = registry
        self.cache = PageCache(capacityBytes: options.cacheBytes)
        leafDirectories = Locked(LeafDirectories(budget: max(1 << 20, options.cacheBytes / 8)))
        // Shorter than two meta pages of the smallest size: empty, or being created by another
        // process, which holds the writer lock until both meta pages are written.
        if try file.size() < UInt64(2 * Limits.minPageSize) && !options.readOnly {
            try registry.lockWriter()
            defer { registry.unlockWriter() }
            // While we waited, a replacer (an import) may have renamed a whole store over the
            // empty file we created.
            if let named = file as? POSIXStorageFile, try named.isReplacedAtPath() { throw ArborError.fileReplaced(path: path) }
            if try file.size() == 0 {
                let meta = Meta.initial(pageSize: options.pageSize)
                for number: PageID in 0...1 {
                    try meta.image(number: number).withUnsafeBytes {
                        try file.write($0, at: UInt64(number) * UInt64(options.pageSize))
                    }
                }
                try file.sync()
            }
        }
        let verified = try Self.verifiedState(of: file, path: path, registry: registry)
        var meta = verified.meta
        if let rejected = verified.rejected, let page = rejected.damagedPage {
            openingProblems = [IntegrityReport.Problem(
                page: page, kind: .incompleteCommit,
                detail: "\(rejected.detail); the store opened at transaction \(meta.txid), before it")]
        } else {
            openingProblems = []
        }
        // A lock file behind the file's newest commit (the file was copied in, or its last writer
        // died before publishing) would make every read transaction re-read the meta pages: repair
        // it now, as the next writer would, unless a writer is at work.
        if let lockFile, lockFile.publishedCommit() != meta.txid, registry.tryLockWriter() {
            defer { registry.unlockWriter() }
            meta = try Meta.readCurrent(from: file, path: path, excluding: verified.rejected?.meta)
            if lockFile.publishedCommit() != meta.txid { lockFile.publishCommit(meta.txid) }
        }
        if meta.isCompressed && !options.readOnly { throw ArborError.compressedFileIsReadOnly }
        self.pageSize = meta.pageSize
        self.openedTransaction = meta.txid
        self.rejectedAtOpen = verified.rejected?.meta
        self.state = Locked(State(meta: meta, readable: meta))
    }

    /// The newest complete commit at open (`Meta.readVerified`). Without the writer lock another
    /// process may commit during the check: a later commit can free and reuse a page the meta page
    /// just read lists, or rewrite both meta pages while they are read. So a commit passed over or
    /// an unreadable pair of meta pages is checked again holding the writer lock, when no process
    /// writes: only then is it an incomplete commit or damage. A check during which another
    /// process published a commit is first tried again without waiting for its writer.
    private static func verifiedState(of file: StorageFile, path: String, registry: ReaderRegistry) throws -> (meta: Meta, rejected: Meta.Rejection?) {
        guard let lockFile = registry.lockFile else { return try Meta.readVerified(from: file, path: path) }
        for _ in 0..<4 {
            let published = lockFile.publishedCommit()
            do {
                let verified = try Meta.readVerified(from: file, path: path)
                if verified.rejected == nil { return verified }
            } catch ArborError.noValidMetaPage, ArborError.truncatedFile {}
            if lockFile.publishedCommit() == published { break }
        }
        try registry.lockWriter()
        defer { registry.unlockWriter() }
        return try Meta.readVerified(from: file, path: path)
    }

    /// The validated catalog record of tree `name` in committed snapshot `snapshot`, if cached.
    func cachedTreeInfo(_ name: String, snapshot: UInt64) -> TreeInfo? {
        treeInfoCache.withLock { $0.info(name, snapshot: snapshot) }
    }

    /// Remembers a validated catalog record of a committed snapshot (a newer snapshot replaces
    /// the records of an older one; an older reader's records are not kept).
    func cacheTreeInfo(_ info: TreeInfo, name: String, snapshot: UInt64) {
        treeInfoCache.withLock { $0.keep(info, name: name, snapshot: snapshot) }
    }

    /// About how many lookups cost what one page read does: a leaf directory's build may read
    /// one branch page for each this many lookups made in its tree version.
    static let lookupsPerPageRead = 8

    /// The leaf directory of the tree `info` as `transaction` (a reader) sees it: a kept one
    /// for the same root page, or one built now when this tree version has been asked for
    /// often enough; nil otherwise. Only a build reads from the file: the branch pages not in
    /// memory, as many as the lookups made so far allow.
    func leafDirectory(for info: TreeInfo, in transaction: Transaction) throws -> LeafDirectory? {
        guard info.depth >= 3, case .page(let root)? = try transaction.nodeInMemory(info.root, level: info.depth - 1) else { return nil }
        let stamp = root.txid
        let (kept, requests, budget) = leafDirectories.withLock { directories -> (LeafDirectory?, Int?, Int) in
            if let kept = directories.directory(root: info.root, rootTransaction: stamp) { return (kept, nil, 0) }
            return (nil, directories.noteDemand(root: info.root, rootTransaction: stamp), directories.budget)
        }
        if let kept { return kept }
        // Built outside the lock: other readers go on meanwhile (two may build the same one).
        guard let requests else { return nil }
        // Branch pages not in memory are read for it: a page read costs about what eight
        // lookups do, so the build may read an eighth as many pages as this tree version has
        // had lookups (each request stands for `leafDirectoryThreshold` of them), and never
        // more than twice the directories' budget in bytes (about what a directory that fits
        // the budget needs). A fetch of a few hundred rows right after opening then reads no
        // more branches than its own descents do; a semi-join's thousands of lookups get the
        // directory in their first query.
        let lookups = requests * Transaction.leafDirectoryThreshold
        let mostReads = 2 * budget / pageSize, reads = min(lookups / Self.lookupsPerPageRead, mostReads)
        let missing = try LeafDirectory.branchesNotInMemory(under: root, transaction, upTo: mostReads)
        if missing > reads {
            leafDirectories.withLock { directories in
                if missing > mostReads {
                    directories.noteFailure(root: info.root, rootTransaction: stamp)
                } else {
                    directories.noteShortOfReads(root: info.root, rootTransaction: stamp,
                                                 until: (missing * Self.lookupsPerPageRead + Transaction.leafDirectoryThreshold - 1) / Transaction.leafDirectoryThreshold)
                }
            }
            return nil
        }
        guard let made = try LeafDirectory.build(transaction, info, maxBytes: budget, reads: reads) else {
            leafDirectories.withLock { $0.noteFailure(root: info.root, rootTransaction: stamp) }
            return nil
        }
        leafDirectories.withLock { $0.add(made) }
        return made
    }

    // MARK: Transactions

    /// Starts a read transaction on the newest committed snapshot. It never blocks and is never
    /// blocked by the writer. Call `close()` (or let it deinit) to release the snapshot: an open
    /// reader pins the pages of its snapshot that later commits replace, so the file grows by
    /// up to the snapshot's size while it stays open (not by the versions written after it).
    /// - Complexity: O(1), no system call (the lock file is mapped); a meta-page read when
    ///   another process committed since.
    public func beginRead() throws -> Transaction {
        try beginRead(reusing: nil)
    }

    /// `beginRead()`, taking `spare` — a closed read transaction of this database, no longer
    /// used by anyone — again when it shows the snapshot a new one would show. Its trees and
    /// branch pages are then found without the catalog records or the page cache; nothing
    /// else differs (a snapshot never changes, and it is still the newest: none of its pages
    /// can have been reused).
    /// - Complexity: O(1); as `beginRead()`.
    public func beginRead(reusing spare: Transaction?) throws -> Transaction {
        for _ in 0..<1000 {
            let meta = try currentMeta()
            registry.register(meta.txid)
            // A writer of this process reads the readable commit before the registered readers
            // (`planCommit`): if it did both between our read and our slot, it saw a newer
            // readable commit, which we see now too, and may reuse pages of `meta`: retry.
            if state.withLock({ $0.readable.txid }) != meta.txid {
                registry.unregister(meta.txid)
                continue
            }
            // Another process may have committed between reading the meta and publishing our slot;
            // if so, its successor may already reuse pages of `meta`: retry on the newer snapshot.
            if let lockFile = registry.lockFile, lockFile.publishedCommit() != meta.txid,
               try Meta.readCurrent(from: file, path: path, excluding: rejectedAtOpen).txid != meta.txid {
                registry.unregister(meta.txid)
                continue
            }
            if let spare, spare.database === self, spare.isClosed, !spare.isWritable, spare.meta.txid == meta.txid {
                spare.isClosed = false
                return spare
            }
            return Transaction(database: self, meta: meta)
        }
        throw ArborError.internalInconsistency("could not register a reader: the snapshot changed 1000 times in a row")
    }

    /// Starts the write transaction, waiting while another writer (thread or process) holds it,
    /// for at most `Options.writerTimeout` when it is set.
    /// - Throws: `ArborError.readOnly` on a read-only database, `needsReopen` after a failed commit,
    ///   `fileReplaced` when another file was renamed over the store's path since it was opened,
    ///   `writerBusy` when the writer timeout passed first.
    public func beginWrite() throws -> WriteTransaction {
        guard !isReadOnly else { throw ArborError.readOnly }
        state.withLock { $0.queuedWriters += 1 }
        do {
            try lockWriterWithinTimeout()
        } catch {
            state.withLock { $0.queuedWriters -= 1 }
            throw error
        }
        state.withLock { $0.queuedWriters -= 1 }
        do {
            // Checked holding the writer lock: whoever replaces the file holds it too.
            if let namedFile = file as? POSIXStorageFile, try namedFile.isReplacedAtPath() {
                throw ArborError.fileReplaced(path: path)
            }
            var meta = try refreshMetaForWriter()
            let plan = try planCommit(after: &meta)
            return WriteTransaction(database: self, meta: meta, plan: plan)
        } catch {
            releaseWriter()
            throw error
        }
    }

    /// Takes the writer lock, waiting at most `options.writerTimeout` when it is set.
    /// - Throws: `ArborError.writerBusy` when the timeout passed first.
    func lockWriterWithinTimeout() throws {
        guard let timeout = options.writerTimeout else { return try registry.lockWriter() }
        guard try registry.lockWriter(timeout: timeout) else { throw ArborError.writerBusy(path: path, waited: timeout) }
    }

    /// Runs `body` in a read transaction.
    public func view<R>(_ body: (Transaction) throws -> R) throws -> R {
        let transaction = try beginRead()
        defer { transaction.close() }
        return try body(transaction)
    }

    /// Runs `body` in a write transaction and commits it; aborts if `body` throws.
    public func update<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        let transaction = try beginWrite()
        do {
            let result = try body(transaction)
            try transaction.commit()
            return result
        } catch {
            transaction.abort()
            throw error
        }
    }

    // MARK: State

    /// The newest commit readers may see, re-read from disk when another process committed since.
    func currentMeta() throws -> Meta {
        let cached = state.withLock { $0.readable }
        guard let lockFile = registry.lockFile, lockFile.publishedCommit() != cached.txid else { return cached }
        try adoptDiskMeta()
        return state.withLock { $0.readable }
    }

    private func adoptDiskMeta() throws {
        let disk = try Meta.readCurrent(from: file, path: path, excluding: rejectedAtOpen)
        let changed = state.withLock { state -> Bool in
            guard disk.txid != state.meta.txid else { return false }
            if disk.txid > state.meta.txid {
                state.meta = disk
                state.readable = disk
            }
            return true
        }
        // Another process reused pages: cached images may be stale.
        if changed { cache.removeAll() }
    }

    /// The commit the next write transaction builds on (called holding the writer lock).
    func refreshMetaForWriter() throws -> Meta {
        if state.withLock({ $0.poisoned }) { throw ArborError.needsReopen }
        guard let lockFile = registry.lockFile else { return state.withLock { $0.meta } }
        // Every acknowledged commit is published before its writer returns, so when the lock
        // file names this process's last commit no other process committed since; nor while a
        // group of this process waits for its sync, keeping the lock file's writer lock. (A
        // writer that died between its meta page write and publishing acknowledged nothing: the
        // next commit takes the same id and, by the plan's rule, the same meta page.)
        let (cached, groupWaits) = state.withLock { state -> (Meta?, Bool) in
            guard let last = state.lastCommit, last == (state.meta.txid, state.meta.checksum) else { return (nil, false) }
            return (state.meta, state.isGroupWaiting)
        }
        if let cached, groupWaits || lockFile.publishedCommit() == cached.txid { return cached }
        try adoptDiskMeta()
        let meta = state.withLock { $0.meta }
        // Repair a publication lost when a writer died between its meta sync and publishing.
        if lockFile.publishedCommit() != meta.txid { lockFile.publishCommit(meta.txid) }
        return meta
    }

    deinit {
        if state.withLock({ $0.hasUnsyncedCommit && !$0.poisoned }) { try? sync() }
    }

    /// Publishes a commit: new readers see `meta`; `durable`, when given, is the newest commit
    /// the commit synced.
    ///
    /// A `.full` commit left to its group's sync stays invisible to new readers (here and, through
    /// the lock file, in other processes) until that sync: `noteDurable` publishes it.
    func finishCommit(_ meta: Meta, durable: Meta?) {
        let (publishes, schedulesSync) = state.withLock { $0.recordCommit(meta, durable: durable, durability: options.durability) }
        if publishes { registry.lockFile?.publishCommit(meta.txid) }
        if let durable { noteDurable(durable) }
        if schedulesSync { scheduleSync() }
    }

    /// Commits not known durable once `durable` (synced by the commit under way) is noted.
    func unsyncedCommits(after durable: Meta?) -> Int {
        durable == nil ? state.withLock { $0.unsyncedCommits } : 0
    }

    func poison() {
        let waiters = state.withLock { state in
            state.poisoned = true
            defer { state.durabilityWaiters.removeAll() }
            return state.durabilityWaiters
        }
        for waiter in waiters { waiter.signal.signal() }
    }

    // MARK: Pages

    /// Loads page `id` of a snapshot with `pageCount` pages: from the cache, or from disk with
    /// bounds, checksum and layout validation.
    func loadPage(_ id: PageID, pageCount: UInt32, useCache: Bool = true) throws -> Page {
        try checkTreePointer(id, pageCount: pageCount)
        if useCache, let page = cache.page(id) { return page }
        let page = try readPageFromDisk(id)
        if useCache { cache.insert(page) }
        return page
    }

    /// The page at `id` if the page cache holds it: nothing is read from the file.
    /// - Throws: `pageOutOfRange` for an id outside the file of `pageCount` pages.
    func cachedPage(_ id: PageID, pageCount: UInt32) throws -> Page? {
        try checkTreePointer(id, pageCount: pageCount)
        return cache.page(id)
    }

    /// Checks a page number read from a tree: the meta pages and pages past the end are not
    /// tree pages.
    @inline(__always)
    private func checkTreePointer(_ id: PageID, pageCount: UInt32) throws {
        guard id >= 2, id < pageCount else {
            throw ArborError.pageOutOfRange(page: id, pageCount: pageCount, referencedFrom: "a tree pointer")
        }
    }

    func readPageFromDisk(_ id: PageID) throws -> Page {
        try Page.read(id, from: file, pageSize: pageSize)
    }

    // MARK: Information

    /// Statistics of the newest committed state.
    public func info() throws -> DatabaseInfo {
        try view { try $0.info() }
    }

    /// Page-cache occupancy and hit counts.
    public var cacheStatistics: (bytes: Int, pages: Int, hits: UInt64, misses: UInt64) { cache.statistics }
}

/// A summary of a store file, as of one snapshot.
public struct DatabaseInfo: Sendable, Equatable {
    public var formatVersion: UInt32
    public var pageSize: Int
    public var transactionID: UInt64
    public var pageCount: UInt32
    public var freePages: UInt64
    public var fileSize: UInt64
    public var isCompressed: Bool
    public var trees: [(name: String, info: TreeInfo)]

    public static func == (a: DatabaseInfo, b: DatabaseInfo) -> Bool {
        a.formatVersion == b.formatVersion && a.pageSize == b.pageSize && a.transactionID == b.transactionID
            && a.pageCount == b.pageCount && a.freePages == b.freePages && a.fileSize == b.fileSize
            && a.isCompressed == b.isCompressed && a.trees.elementsEqual(b.trees, by: { $0.name == $1.name && $0.info == $1.info })
    }
}
