/// Which tree a page belongs to.
public enum TreeRole: Sendable, Hashable, CustomStringConvertible {
    case catalog
    case freelist
    case named(String)

    public var description: String {
        switch self {
        case .catalog: return "catalog"
        case .freelist: return "freelist"
        case .named(let name): return "tree \"\(name)\""
        }
    }
}

/// What a page of the file is used for.
public enum PageOwner: Sendable, Equatable, CustomStringConvertible {
    case meta
    /// A node of a tree at `level` (0 = leaf).
    case node(tree: TreeRole, level: Int)
    /// An overflow page of a value in `tree`.
    case overflow(tree: TreeRole)
    /// A free page, freed by transaction `freedBy` (0: reusable at once).
    case free(freedBy: UInt64)

    public var description: String {
        switch self {
        case .meta: return "meta page"
        case .node(let tree, let level): return "\(tree) \(level == 0 ? "leaf" : "branch (level \(level))")"
        case .overflow(let tree): return "an overflow value of \(tree)"
        case .free(let freedBy): return "the freelist (freed by transaction \(freedBy))"
        }
    }
}

/// The result of `Database.checkIntegrity()`: every problem found, each naming its page.
public struct IntegrityReport: Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// A page failed to load: checksum, header or layout.
        case corruptPage = "corrupt page"
        /// Keys out of order inside a page or outside the bounds its parent gives.
        case keyOrder = "key order"
        /// A page referenced twice (two trees, a tree and the freelist, or a cycle).
        case doubleUse = "page used twice"
        /// A page below the page count owned by nothing.
        case leakedPage = "leaked page"
        /// An overflow chain that is broken, too short or does not decompress.
        case overflowChain = "overflow chain"
        /// Entry count or depth different from what the catalog or meta page records.
        case statistics = "statistics"
        /// A malformed catalog or freelist entry.
        case catalog = "catalog"
        case freelist = "freelist"
        /// A page the newest meta page lists holds something else than that commit wrote there
        /// (not merely an older image): the store opened at the commit before.
        case incompleteCommit = "damaged newest commit"
    }

    public struct Problem: Sendable, CustomStringConvertible, Equatable {
        public var page: PageID?
        public var kind: Kind
        public var detail: String
        public var description: String {
            (page.map { "page \($0): " } ?? "") + "\(kind.rawValue): \(detail)"
        }
    }

    public var problems: [Problem] = []
    /// What owns each page below the page count, as found by the walk (nil: nothing).
    public var pageOwners: [PageOwner?] = []
    public var pagesChecked = 0
    public var treesChecked = 0
    public var entriesChecked: UInt64 = 0

    /// An empty report: no problem, nothing checked yet.
    public init() {}

    /// True when no problem was found.
    public var isSound: Bool { problems.isEmpty }

    public var description: String {
        if isSound { return "ok: \(treesChecked) trees, \(entriesChecked) entries, \(pagesChecked) pages" }
        return problems.map(\.description).joined(separator: "\n")
    }
}

extension Database {
    /// Walks every tree, overflow chain and the freelist of the newest snapshot and verifies
    /// checksums, key order within and across pages, that every page is owned exactly once,
    /// and the counts the catalog records. Never throws for a damaged file: damage is reported.
    /// - Complexity: O(pages in the file).
    public func checkIntegrity() -> IntegrityReport {
        do {
            return try view { transaction in
                var checker = IntegrityChecker(transaction: transaction)
                var report = checker.run()
                if transaction.meta.txid == openedTransaction { report.problems += openingProblems }
                return report
            }
        } catch {
            var report = IntegrityReport()
            report.problems.append(.init(page: nil, kind: .corruptPage, detail: "\(error)"))
            return report
        }
    }
}

/// Walks one snapshot for `checkIntegrity`.
struct IntegrityChecker {
    let transaction: Transaction
    var report = IntegrityReport()
    /// Owner per page, nil when unowned.
    var owners: [PageOwner?]

    init(transaction: Transaction) {
        self.transaction = transaction
        owners = [PageOwner?](repeating: nil, count: Int(transaction.meta.pageCount))
        if owners.count >= 2 { owners[0] = .meta; owners[1] = .meta }
    }

    mutating func problem(_ page: PageID?, _ kind: IntegrityReport.Kind, _ detail: String) {
        report.problems.append(.init(page: page, kind: kind, detail: detail))
    }

    /// Records that `owner` uses `page`; false (and a problem) when it is out of range or taken.
    mutating func claim(_ page: PageID, by owner: PageOwner) -> Bool {
        guard Int(page) < owners.count, page >= 2 else {
            problem(page, .corruptPage, "\(owner) refers to page \(page), outside 2..<\(owners.count)")
            return false
        }
        if let previous = owners[Int(page)] {
            problem(page, .doubleUse, "used by \(previous) and by \(owner)")
            return false
        }
        owners[Int(page)] = owner
        report.pagesChecked += 1
        return true
    }

    mutating func run() -> IntegrityReport {
        let meta = transaction.meta
        // Catalog: check it as a tree and read every entry.
        var trees: [(String, TreeInfo)] = []
        walkTree(.catalog, info: meta.catalog) { key, value, page, checker in
            let name = String(decoding: key, as: UTF8.self)
            guard case .inline(let bytes) = value, let info = try? TreeInfo.decode(bytes, context: name) else {
                checker.problem(page, .catalog, "catalog entry \"\(name)\" is malformed")
                return
            }
            trees.append((name, info))
        }
        for (name, info) in trees {
            guard info.root == 0 ? info.depth == 0 : (info.depth >= 1 && info.depth <= Limits.maxTreeDepth) else {
                problem(info.root, .catalog, "tree \"\(name)\" records root \(info.root) with depth \(info.depth)")
                continue
            }
            walkTree(.named(name), info: info) { _, _, _, _ in }
        }
        // Freelist: a tree whose values list free pages.
        var listed: UInt64 = 0
        walkTree(.freelist, info: meta.freelist) { key, value, page, checker in
            guard let (freedBy, _) = FreelistKey.decode(key), case .inline(let bytes) = value,
                  let pages = try? FreelistKey.decodePages(bytes, page: page) else {
                checker.problem(page, .freelist, "malformed freelist entry")
                return
            }
            guard freedBy <= meta.txid else {
                checker.problem(page, .freelist, "entry freed by future transaction \(freedBy)")
                return
            }
            for free in pages { _ = checker.claim(free, by: .free(freedBy: freedBy)) }
            listed += UInt64(pages.count)
        }
        for free in meta.inlineFree {
            _ = claim(free.page, by: .free(freedBy: free.freedBy))
            listed += 1
        }
        if listed != meta.freePages {
            problem(nil, .statistics, "the meta page records \(meta.freePages) free pages, the freelist lists \(listed)")
        }
        for page in 2..<owners.count where owners[page] == nil {
            problem(PageID(page), .leakedPage, "not referenced by any tree or the freelist")
        }
        report.pageOwners = owners
        return report
    }

    /// Checks a whole tree and calls `visit` for each entry.
    mutating func walkTree(_ role: TreeRole, info: TreeInfo,
                           visit: (_ key: [UInt8], _ value: LeafValue, _ page: PageID, inout IntegrityChecker) -> Void) {
        report.treesChecked += 1
        let name = role.description
        guard info.root != 0 else {
            if info.count != 0 { problem(nil, .statistics, "\(name) is empty but records \(info.count) entries") }
            return
        }
        var entries: UInt64 = 0
        walkNode(info.root, level: info.depth - 1, lower: nil, upper: nil, role: role, entries: &entries, visit: visit)
        report.entriesChecked += entries
        if entries != info.count {
            problem(info.root, .statistics, "\(name) records \(info.count) entries, holds \(entries)")
        }
    }

    private mutating func walkNode(
        _ id: PageID, level: Int, lower: [UInt8]?, upper: [UInt8]?, role: TreeRole, entries: inout UInt64,
        visit: (_ key: [UInt8], _ value: LeafValue, _ page: PageID, inout IntegrityChecker) -> Void
    ) {
        guard claim(id, by: .node(tree: role, level: level)) else { return }
        let owner = role.description
        let ref: NodeRef
        do { ref = try transaction.node(id, level: level) } catch {
            problem(id, .corruptPage, "\(owner): \(error)")
            return
        }
        var previous: [UInt8]?
        for index in 0..<ref.count {
            let key = ref.key(index)
            if let previous, compareBytes(previous, key) >= 0 {
                problem(id, .keyOrder, "\(owner): key \(index) is not greater than key \(index - 1)")
            }
            if let lower, compareBytes(key, lower) < 0 {
                problem(id, .keyOrder, "\(owner): key \(index) is below its parent's separator")
            }
            if let upper, compareBytes(key, upper) >= 0 {
                problem(id, .keyOrder, "\(owner): key \(index) is not below its parent's next separator")
            }
            previous = key
        }
        if level == 0 {
            for index in 0..<ref.count {
                let value = ref.leafValue(index)
                if case .overflow(let overflow) = value { checkOverflow(overflow, leaf: id, role: role) }
                visit(ref.key(index), value, id, &self)
            }
            entries += UInt64(ref.count)
            return
        }
        for index in 0...ref.count {
            let childLower = index == 0 ? lower : ref.key(index - 1)
            let childUpper = index == ref.count ? upper : ref.key(index)
            walkNode(ref.child(index), level: level - 1, lower: childLower, upper: childUpper,
                     role: role, entries: &entries, visit: visit)
        }
    }

    private mutating func checkOverflow(_ overflow: OverflowRef, leaf: PageID, role: TreeRole) {
        let owner = role.description
        var id = overflow.firstPage
        let pages = overflow.pageCount(pageSize: transaction.meta.pageSize)
        for _ in 0..<pages {
            guard claim(id, by: .overflow(tree: role)) else { return }
            do { id = try transaction.overflowPage(id).extra } catch {
                problem(id, .overflowChain, "\(owner): \(error)")
                return
            }
        }
        if id != 0 { problem(leaf, .overflowChain, "\(owner): chain continues past its recorded length") }
        do { _ = try transaction.readOverflow(overflow) } catch {
            problem(overflow.firstPage, .overflowChain, "\(owner): \(error)")
        }
    }
}
