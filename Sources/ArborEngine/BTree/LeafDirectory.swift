/// The leaves of one version of a tree in key order, with the separators between them: a point
/// lookup finds its leaf with one binary search over the directory instead of a search in each
/// branch page on its way down (and a page-cache probe for each of those pages).
///
/// A semi-join through a foreign-key index looks up thousands of member rows per fetch, each
/// in a different leaf of a table of millions of rows: the two branch levels above the leaves
/// cost about as much as the leaf itself. The directory replaces them for trees at least three
/// levels deep. It is built once per tree version (see `build`), from the branch pages in
/// memory and a bounded number read for it, and shared by the read transactions that see that
/// version.
///
/// Why it finds the leaf a descent finds: a branch sends a key to its child `i`, the number of
/// its separators <= the key. Listing every branch's separators in order (each between the
/// subtrees it divides) gives the boundaries; when they are sorted, the leaf a descent reaches
/// is the one after the last boundary <= the key (the separators inside a child's subtree lie
/// between the separators around it). `build` checks that they are sorted and gives up
/// otherwise, so a malformed tree is searched by descents as before.
///
/// Identity: a committed page never changes while a reader can reach it, and every change to a
/// tree writes a new root page, stamped with the writing transaction's id. A directory made for
/// root page `root` written by `rootTransaction` is therefore valid wherever that root page,
/// with that stamp, is the tree's root.
final class LeafDirectory: Sendable {
    let root: PageID
    let rootTransaction: UInt64
    /// Boundaries: the first eight bytes of each, big-endian and zero-padded (see
    /// `Page.searchPrefix`), compared first; the bytes only when prefixes tie.
    private let prefixes: [UInt64]
    /// Boundary `i` is `bytes[starts[i] ..< starts[i + 1]]`.
    private let starts: [Int]
    private let bytes: [UInt8]
    /// One more than the boundaries: leaf `i` holds the keys from boundary `i - 1` on.
    private let leaves: [PageID]

    /// Memory held, for the database's budget.
    var memoryBytes: Int { Self.memoryBytes(boundaries: prefixes.count, keyBytes: bytes.count, leaves: leaves.count) }

    /// The memory taken by a directory of `boundaries` boundaries (`keyBytes` bytes in all)
    /// and `leaves` leaves: what the budget counts, while building and once built.
    static func memoryBytes(boundaries: Int, keyBytes: Int, leaves: Int) -> Int {
        boundaries * 8 + (boundaries + 1) * 8 + keyBytes + leaves * 4 + 64
    }

    var leafCount: Int { leaves.count }

    private init(root: PageID, rootTransaction: UInt64, prefixes: [UInt64], starts: [Int], bytes: [UInt8], leaves: [PageID]) {
        self.root = root
        self.rootTransaction = rootTransaction
        self.prefixes = prefixes
        self.starts = starts
        self.bytes = bytes
        self.leaves = leaves
    }

    /// The leaf whose key range covers `key`: the one a descent from the root reaches.
    /// - Complexity: O(log n) for n leaves; integer comparisons, bytes only among ties.
    func leaf(for key: UnsafeRawBufferPointer) -> PageID {
        let target = Page.searchPrefix(key)
        // The number of boundaries <= key, by the same two steps as `Page.childIndex`: first
        // those whose prefix is below the key's, then the ties by their bytes. (A bisection
        // without a tie test in its loop, as there, took more instructions here.)
        var low = 0, high = prefixes.count
        prefixes.withUnsafeBufferPointer { prefixes in
            while low < high {
                let mid = (low &+ high) &>> 1
                if prefixes[mid] < target { low = mid &+ 1 } else { high = mid }
            }
            guard low < prefixes.count, prefixes[low] == target else { return }
            high = prefixes.count
            bytes.withUnsafeBytes { bytes in
                while low < high {
                    let mid = (low &+ high) &>> 1
                    let notAbove = prefixes[mid] != target ? prefixes[mid] < target
                        : compareBytes(UnsafeRawBufferPointer(rebasing: bytes[starts[mid]..<starts[mid &+ 1]]), key) <= 0
                    if notAbove { low = mid &+ 1 } else { high = mid }
                }
            }
        }
        return leaves[low]
    }

    /// The directory of the tree `info` as `transaction` sees it, from the branch pages in
    /// memory and at most `reads` more read from the file (into the page cache, where the
    /// descents that would otherwise read them find them); nil when more branch pages than that
    /// are not in memory, when the root is not, when the tree has fewer than three levels, when
    /// its boundaries are not in order, or when the directory would take more than `maxBytes`
    /// (the walk stops there: a huge tree never allocates one).
    /// - Complexity: O(branch pages + separators); up to `reads` page reads.
    /// - Throws: `corruptPage` for a branch page that is not the node its parent promises (or
    ///   whose checks fail when read), an I/O error from a read.
    static func build(_ transaction: Transaction, _ info: TreeInfo, maxBytes: Int = .max, reads: Int = 0) throws -> LeafDirectory? {
        guard info.root != 0, info.depth >= 3, case .page(let rootPage)? = try transaction.nodeInMemory(info.root, level: info.depth - 1)
        else { return nil }
        var builder = Builder(limit: Int(transaction.meta.pageCount), maxBytes: maxBytes, reads: reads)
        guard try builder.visit(rootPage, transaction) else { return nil }
        return LeafDirectory(root: info.root, rootTransaction: rootPage.txid, prefixes: builder.prefixes,
                             starts: builder.starts, bytes: builder.bytes, leaves: builder.leaves)
    }

    /// How many branch pages under `root` are not in memory, as far as the pages in memory
    /// show (a page missing above level 1 counts as one, its own branches unseen), counted up
    /// to one more than `limit`: the reads a build needs at least (all of them, for a tree of
    /// three levels).
    /// - Complexity: O(branch pages in memory + their children), a page-cache probe each and
    ///   at most as many as the file has pages (a malformed tree may share pages); nothing is read.
    static func branchesNotInMemory(under root: Page, _ transaction: Transaction, upTo limit: Int) throws -> Int {
        var count = MissingBranches(limit: limit, probes: Int(transaction.meta.pageCount))
        try count.visit(root, transaction)
        return count.missing
    }

    private struct MissingBranches {
        var missing = 0
        let limit: Int
        /// Probes left.
        var probes: Int

        mutating func visit(_ branch: Page, _ transaction: Transaction) throws {
            guard branch.level >= 2 else { return }
            // Levels fall by one per step (a checked node): as deep as the tree, at most.
            for child in 0...branch.count {
                guard missing <= limit, probes > 0 else { return }
                probes -= 1
                if case .page(let page)? = try transaction.nodeInMemory(branch.child(child), level: branch.level - 1) {
                    try visit(page, transaction)
                } else {
                    missing += 1
                }
            }
        }
    }

    private struct Builder {
        var prefixes: [UInt64] = []
        var starts: [Int] = [0]
        var bytes: [UInt8] = []
        var leaves: [PageID] = []
        /// A tree has fewer leaves than the file has pages: more means pages are shared
        /// between subtrees (a malformed file), and the walk stops.
        let limit: Int
        /// The memory the directory may take (as `memoryBytes` counts it).
        let maxBytes: Int
        /// Branch pages not in memory that may still be read.
        var reads: Int

        init(limit: Int, maxBytes: Int, reads: Int) {
            self.limit = limit
            self.maxBytes = maxBytes
            self.reads = reads
        }

        var memoryBytes: Int { LeafDirectory.memoryBytes(boundaries: prefixes.count, keyBytes: bytes.count, leaves: leaves.count) }

        /// Adds the boundaries and leaves under `branch`; false when a branch page is neither
        /// in memory nor within the reads left, the boundaries are out of order, or there are
        /// more leaves than pages.
        mutating func visit(_ branch: Page, _ transaction: Transaction) throws -> Bool {
            let childLevel = branch.level - 1
            // Levels fall by one per step (a checked node), so the walk is at most as deep as
            // the tree, whose depth the catalog check limits.
            for child in 0...branch.count {
                if child > 0, !(branch.withKey(child - 1) { add($0) }) { return false }
                let id = branch.child(child)
                if childLevel == 0 {
                    leaves.append(id)
                    if leaves.count > limit || memoryBytes > maxBytes { return false }
                    continue
                }
                guard case .page(let page)? = try branchNode(id, level: childLevel, transaction),
                      try visit(page, transaction) else { return false }
            }
            return true
        }

        /// The branch page `id` from memory, else read while reads are left.
        private mutating func branchNode(_ id: PageID, level: Int, _ transaction: Transaction) throws -> NodeRef? {
            if let inMemory = try transaction.nodeInMemory(id, level: level) { return inMemory }
            guard reads > 0 else { return nil }
            reads -= 1
            return try transaction.node(id, level: level)
        }

        /// Appends a boundary; false when it is below the previous one. Prefixes are in the
        /// keys' order (a key below another has a prefix below or equal to the other's), so
        /// the bytes are compared only when the two prefixes tie.
        private mutating func add(_ key: UnsafeRawBufferPointer) -> Bool {
            let prefix = Page.searchPrefix(key)
            if let lastPrefix = prefixes.last, prefix <= lastPrefix {
                guard prefix == lastPrefix else { return false }
                let previous = starts[starts.count - 2], last = starts[starts.count - 1]
                let order = bytes.withUnsafeBytes { compareBytes(UnsafeRawBufferPointer(rebasing: $0[previous..<last]), key) }
                if order > 0 { return false }
            }
            prefixes.append(prefix)
            bytes.append(contentsOf: key)
            starts.append(bytes.count)
            return true
        }
    }
}

/// The leaf directories of a database's trees, shared by its read transactions: at most a
/// budget of memory (an eighth of the page cache), the newest kept.
struct LeafDirectories {
    private var directories: [LeafDirectory] = []
    private var bytes = 0
    /// Requests for tree versions without a directory: one is tried at the third, so a tree
    /// version read by one transaction only (a writer commits between reads) is never built.
    /// After a build that failed, the next try waits for twice as many requests as the last
    /// wait; one short of reads waits until the requests allow them (`noteShortOfReads`).
    private var demand: [PageID: Demand] = [:]
    let budget: Int

    private struct Demand {
        var rootTransaction: UInt64
        /// Requests so far.
        var count = 0
        /// The request at which to try next.
        var next = 3
        /// The requests the last failure waited for.
        var wait = 3
    }

    init(budget: Int) { self.budget = budget }

    /// The directory of root `root` written by `rootTransaction`, if one is kept.
    func directory(root: PageID, rootTransaction: UInt64) -> LeafDirectory? {
        directories.last { $0.root == root && $0.rootTransaction == rootTransaction }
    }

    /// Counts a request for a missing directory: the number of requests for this tree version
    /// so far when a build should be tried now, else nil.
    mutating func noteDemand(root: PageID, rootTransaction: UInt64) -> Int? {
        var entry = demand[root] ?? Demand(rootTransaction: rootTransaction)
        if entry.rootTransaction != rootTransaction { entry = Demand(rootTransaction: rootTransaction) }
        entry.count += 1
        if demand.count >= 1_024, demand[root] == nil { demand.removeAll() }
        demand[root] = entry
        return entry.count >= entry.next ? entry.count : nil
    }

    /// Notes that building the directory of `root` failed: the next try waits for twice as
    /// many requests as the last wait (a tree whose directory cannot be built is not walked
    /// at each request).
    mutating func noteFailure(root: PageID, rootTransaction: UInt64) {
        guard var entry = demand[root], entry.rootTransaction == rootTransaction else { return }
        entry.wait = min(entry.wait * 2, 1 << 20)
        entry.next = entry.count + entry.wait
        demand[root] = entry
    }

    /// Notes that the build needs more reads than the requests so far allow: the next try
    /// waits for request `requests`.
    mutating func noteShortOfReads(root: PageID, rootTransaction: UInt64, until requests: Int) {
        guard var entry = demand[root], entry.rootTransaction == rootTransaction else { return }
        entry.next = max(entry.count + 1, requests)
        demand[root] = entry
    }

    /// Keeps `directory`, dropping the oldest ones over the budget (and any of the same root).
    mutating func add(_ directory: LeafDirectory) {
        guard directory.memoryBytes <= budget else { return }
        demand[directory.root] = nil
        directories.removeAll { old in
            guard old.root == directory.root else { return false }
            bytes -= old.memoryBytes
            return true
        }
        directories.append(directory)
        bytes += directory.memoryBytes
        while bytes > budget, !directories.isEmpty {
            bytes -= directories.removeFirst().memoryBytes
        }
    }
}
