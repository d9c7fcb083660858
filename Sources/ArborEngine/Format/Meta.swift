/// The root of one B+tree and its statistics, as stored in the catalog and the meta page.
public struct TreeInfo: Equatable, Sendable {
    /// Root page, or 0 for an empty tree.
    public var root: PageID
    /// Levels from root to leaves (0 for an empty tree, 1 for a single leaf).
    public var depth: Int
    /// Number of entries.
    public var count: UInt64

    public static let empty = TreeInfo(root: 0, depth: 0, count: 0)

    static let encodedSize = 16

    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.encodedSize)
        bytes.appendU32(root)
        bytes.appendU32(UInt32(depth))
        bytes.appendU64(count)
        return bytes
    }

    static func decode(_ bytes: [UInt8], context: String) throws -> TreeInfo {
        guard bytes.count == encodedSize else {
            throw ArborError.corruptPage(page: 0, detail: "\(context): tree record of \(bytes.count) bytes, expected \(encodedSize)")
        }
        return bytes.withUnsafeBytes { raw in
            TreeInfo(root: raw.u32(0), depth: Int(raw.u32(4)), count: raw.u64(8))
        }
    }
}

/// A page a commit wrote and the checksum its header carries, as listed in a meta page so that
/// a commit made with one sync can be checked for completeness on open.
struct CommitPage: Equatable, Sendable {
    var page: PageID
    var checksum: UInt32
}

/// A free page listed in a meta page instead of the freelist tree (see `Meta.inlineFree`).
struct InlineFreePage: Equatable, Sendable {
    var page: PageID
    /// The transaction that freed it (0: reusable at once).
    var freedBy: UInt64
    /// The transaction that wrote it (0 when unknown or reusable at once).
    var birth: UInt64
}

/// A decoded meta page: the state of the file as of one committed transaction.
struct Meta: Equatable, Sendable {
    static let magic: [UInt8] = Array("ARBORDB\u{0}".utf8)
    static let formatVersion: UInt32 = 4

    enum Offset {
        static let magic = 24, version = 32, pageSize = 36, flags = 40, pageCount = 44
        static let catalog = 48, freelist = 64, freePages = 80
        static let commitPageCount = 88, inlineFreeCount = 92, commitPages = 96
        /// Inline free pages follow the largest commit page list, 20 bytes each.
        static func inlineFree(pageSize: Int) -> Int { commitPages + 8 * maxCommitPages(pageSize: pageSize) }
    }

    /// The most free pages a meta page lists itself (97 for 4 KiB pages).
    static func maxInlineFree(pageSize: Int) -> Int { (pageSize - Offset.inlineFree(pageSize: pageSize)) / 20 }

    /// The most pages a meta page lists: a commit that wrote more syncs its pages before its meta
    /// page instead, so that checking a file on open never reads more than this many pages.
    static func maxCommitPages(pageSize: Int) -> Int { min(256, (pageSize - Offset.commitPages) / 8) }

    enum Flag {
        /// Leaves are LZ4-compressed; the file is read-only.
        static let compressed: UInt32 = 1
    }

    var txid: UInt64
    var pageSize: Int
    var flags: UInt32
    /// Pages in use: every page number below this belongs to a tree, the freelist or the metas.
    var pageCount: UInt32
    var catalog: TreeInfo
    var freelist: TreeInfo
    /// Total pages listed in the freelist.
    var freePages: UInt64
    /// Pages this meta page's state reaches that were written after the newest commit known to
    /// be durable when it was written; empty when they were synced before it (format version 3).
    var commitPages: [CommitPage] = []
    /// Free pages the meta page lists itself (format version 4), so that a small commit's frees
    /// need no freelist tree write; counted in `freePages`.
    var inlineFree: [InlineFreePage] = []
    /// The meta page (0 or 1) this state was read from or written to.
    var slot: PageID = 0
    /// The checksum of that meta page's image: with `txid`, it tells this commit apart from
    /// another with the same id (a commit lost to a power cut and made again).
    var checksum: UInt32 = 0
    /// The format version the meta page was written with (a writer writes `formatVersion`).
    var version: UInt32 = Meta.formatVersion

    var isCompressed: Bool { flags & Flag.compressed != 0 }

    static func initial(pageSize: Int) -> Meta {
        Meta(txid: 0, pageSize: pageSize, flags: 0, pageCount: 2, catalog: .empty, freelist: .empty, freePages: 0)
    }

    /// The full page image of this meta stored as page `number` (0 or 1).
    /// - Precondition: `commitPages` and `inlineFree` fit (`maxCommitPages`, `maxInlineFree`).
    func image(number: PageID) -> [UInt8] {
        precondition(commitPages.count <= Meta.maxCommitPages(pageSize: pageSize), "too many commit pages for a meta page")
        precondition(inlineFree.count <= Meta.maxInlineFree(pageSize: pageSize), "too many inline free pages for a meta page")
        var page = [UInt8](repeating: 0, count: pageSize)
        page.withUnsafeMutableBytes { buffer in
            buffer[PageHeader.type] = PageType.meta.rawValue
            buffer.putU32(number, at: PageHeader.pageNumber)
            buffer.putU64(txid, at: PageHeader.txid)
            for (index, byte) in Meta.magic.enumerated() { buffer[Offset.magic + index] = byte }
            buffer.putU32(Meta.formatVersion, at: Offset.version)
            buffer.putU32(UInt32(pageSize), at: Offset.pageSize)
            buffer.putU32(flags, at: Offset.flags)
            buffer.putU32(pageCount, at: Offset.pageCount)
            for (offset, info) in [(Offset.catalog, catalog), (Offset.freelist, freelist)] {
                buffer.putU32(info.root, at: offset)
                buffer.putU32(UInt32(info.depth), at: offset + 4)
                buffer.putU64(info.count, at: offset + 8)
            }
            buffer.putU64(freePages, at: Offset.freePages)
            buffer.putU32(UInt32(commitPages.count), at: Offset.commitPageCount)
            for (index, entry) in commitPages.enumerated() {
                buffer.putU32(entry.page, at: Offset.commitPages + 8 * index)
                buffer.putU32(entry.checksum, at: Offset.commitPages + 8 * index + 4)
            }
            buffer.putU32(UInt32(inlineFree.count), at: Offset.inlineFreeCount)
            let inlineOffset = Offset.inlineFree(pageSize: pageSize)
            for (index, free) in inlineFree.enumerated() {
                buffer.putU32(free.page, at: inlineOffset + 20 * index)
                buffer.putU64(free.freedBy, at: inlineOffset + 20 * index + 4)
                buffer.putU64(free.birth, at: inlineOffset + 20 * index + 12)
            }
            sealPage(buffer)
        }
        return page
    }

    /// Decodes and validates meta page `number` from `image`.
    /// - Throws: `notAnArborFile` (wrong magic), `unsupportedFormatVersion`, or `corruptPage`.
    static func decode(_ image: UnsafeRawBufferPointer, number: PageID) throws -> Meta {
        guard image.count >= Limits.minPageSize else {
            throw ArborError.corruptPage(page: number, detail: "meta page is truncated (\(image.count) bytes)")
        }
        guard Array(image[Offset.magic..<(Offset.magic + 8)]) == magic else {
            throw ArborError.notAnArborFile(path: "")
        }
        let version = image.u32(Offset.version)
        guard version <= formatVersion else {
            throw ArborError.unsupportedFormatVersion(found: version, supported: formatVersion)
        }
        let pageSize = Int(image.u32(Offset.pageSize))
        guard Limits.isValidPageSize(pageSize), pageSize == image.count else {
            throw ArborError.corruptPage(page: number, detail: "meta page records invalid page size \(pageSize)")
        }
        try verifyPageChecksum(id: number, image: image, what: "meta checksum")
        guard image[PageHeader.type] == PageType.meta.rawValue, image.u32(PageHeader.pageNumber) == number, version >= 1 else {
            throw ArborError.corruptPage(page: number, detail: "meta page header is inconsistent")
        }
        func tree(_ offset: Int) -> TreeInfo {
            TreeInfo(root: image.u32(offset), depth: Int(image.u32(offset + 4)), count: image.u64(offset + 8))
        }
        var meta = Meta(
            txid: image.u64(PageHeader.txid), pageSize: pageSize, flags: image.u32(Offset.flags),
            pageCount: image.u32(Offset.pageCount), catalog: tree(Offset.catalog), freelist: tree(Offset.freelist),
            freePages: image.u64(Offset.freePages), slot: number, checksum: image.u32(PageHeader.checksum), version: version)
        guard meta.pageCount >= 2 else {
            throw ArborError.corruptPage(page: number, detail: "meta page records \(meta.pageCount) pages")
        }
        if version >= 3 {
            let count = Int(image.u32(Offset.commitPageCount))
            guard count <= maxCommitPages(pageSize: pageSize) else {
                throw ArborError.corruptPage(page: number, detail: "meta page lists \(count) commit pages")
            }
            meta.commitPages.reserveCapacity(count)
            for index in 0..<count {
                let entry = CommitPage(page: image.u32(Offset.commitPages + 8 * index),
                                       checksum: image.u32(Offset.commitPages + 8 * index + 4))
                guard entry.page >= 2, entry.page < meta.pageCount else {
                    throw ArborError.corruptPage(page: number, detail: "meta page lists commit page \(entry.page) outside 2..<\(meta.pageCount)")
                }
                meta.commitPages.append(entry)
            }
        }
        if version >= 4 {
            let count = Int(image.u32(Offset.inlineFreeCount))
            guard count <= maxInlineFree(pageSize: pageSize) else {
                throw ArborError.corruptPage(page: number, detail: "meta page lists \(count) free pages itself")
            }
            let offset = Offset.inlineFree(pageSize: pageSize)
            meta.inlineFree.reserveCapacity(count)
            for index in 0..<count {
                let free = InlineFreePage(page: image.u32(offset + 20 * index), freedBy: image.u64(offset + 20 * index + 4),
                                          birth: image.u64(offset + 20 * index + 12))
                guard free.page >= 2, free.page < meta.pageCount, free.freedBy <= meta.txid, free.birth <= meta.txid else {
                    throw ArborError.corruptPage(page: number, detail: "meta page lists free page \(free.page) (freed by \(free.freedBy), born \(free.birth)) outside its state")
                }
                meta.inlineFree.append(free)
            }
        }
        for (name, info) in [("catalog", meta.catalog), ("freelist", meta.freelist)] {
            let rootValid = info.root == 0 ? info.depth == 0 : (info.root >= 2 && info.root < meta.pageCount)
            guard rootValid, info.depth <= Limits.maxTreeDepth else {
                throw ArborError.corruptPage(page: number, detail: "meta page \(name) root \(info.root) depth \(info.depth) is invalid")
            }
        }
        return meta
    }

    /// Reads both meta pages and returns the valid one with the highest transaction id.
    /// A torn or corrupt meta page falls back to the other one. Does not check commit pages
    /// (see `readVerified`): within one boot every page written before a meta page is readable.
    /// `excluding` is a meta page found incomplete on open, passed over while it is still there.
    static func readCurrent(from file: StorageFile, path: String, excluding rejected: Meta? = nil) throws -> Meta {
        let (all, fileSize) = try readCandidates(from: file, path: path)
        let candidates = all.filter {
            guard let rejected else { return true }
            return ($0.slot, $0.txid, $0.checksum) != (rejected.slot, rejected.txid, rejected.checksum)
        }
        guard let best = candidates.max(by: { $0.txid < $1.txid }) else {
            throw ArborError.internalInconsistency("no meta page candidate")
        }
        try checkLength(of: file, measured: fileSize, for: best)
        return best
    }

    /// What opening found about the newest commit when it did not use it.
    struct Rejection: Sendable {
        var meta: Meta
        /// A listed page that received a write but not the one listed (a torn write or damage);
        /// nil when the commit's pages simply never reached the disk.
        var damagedPage: PageID?
        var detail: String
    }

    /// The current state as `readCurrent` chooses it, after checking that every page its meta
    /// page lists holds what the commit wrote; a meta page whose commit did not reach the disk
    /// whole (a power cut during a one-sync commit) is passed over for the other one.
    /// - Complexity: reads at most `maxCommitPages` pages per meta page.
    /// - Throws: as `readCandidates`; `truncatedFile` when the file is too short for every
    ///   candidate; `noValidMetaPage` when no candidate's commit is complete.
    static func readVerified(from file: StorageFile, path: String) throws -> (meta: Meta, rejected: Rejection?) {
        let (all, fileSize) = try readCandidates(from: file, path: path)
        let candidates = all.sorted { $0.txid > $1.txid }
        var rejected: Rejection?
        var problems: [String] = []
        for candidate in candidates {
            let check = try candidate.checkCommitPages(in: file, fileSize: fileSize)
            guard let check else {
                try checkLength(of: file, measured: fileSize, for: candidate)
                return (candidate, rejected)
            }
            if rejected == nil { rejected = check }
            problems.append("meta page \(candidate.slot) (transaction \(candidate.txid)): \(check.detail)")
        }
        if let newest = candidates.first { try checkLength(of: file, measured: fileSize, for: newest) }
        throw ArborError.noValidMetaPage(detail: problems.joined(separator: "; "))
    }

    /// Nil when every listed page has the checksum the commit gave it, verifies and names itself;
    /// otherwise the first page that does not. A page past the end of the file, all zeros, or
    /// holding another intact image never received this commit's write; a page that fails its
    /// own checksum is reported as damaged (a torn write or damage, which cannot be told apart).
    func checkCommitPages(in file: StorageFile, fileSize: UInt64) throws -> Rejection? {
        guard !commitPages.isEmpty else { return nil }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        defer { buffer.deallocate() }
        var fileSize = fileSize
        for entry in commitPages {
            let offset = UInt64(entry.page) * UInt64(pageSize)
            // Measured before the meta pages were read: a writer may have grown the file since.
            if offset + UInt64(pageSize) > fileSize { fileSize = try file.size() }
            guard offset + UInt64(pageSize) <= fileSize,
                  try file.read(into: buffer, at: offset) == pageSize else {
                return Rejection(meta: self, damagedPage: nil, detail: "page \(entry.page) is past the end of the file")
            }
            let image = UnsafeRawBufferPointer(buffer)
            let stored = image.u32(PageHeader.checksum)
            if stored == entry.checksum, image.u32(PageHeader.pageNumber) == entry.page, image.u64(PageHeader.txid) <= txid,
               PageChecksum.compute(UnsafeRawBufferPointer(rebasing: image[4...])) == stored {
                continue
            }
            if !image.contains(where: { $0 != 0 }) {
                return Rejection(meta: self, damagedPage: nil, detail: "page \(entry.page) was never written")
            }
            // An intact image of an earlier write: the commit's write never landed. (Its id may
            // equal this commit's: a transaction that wrote pages early and never committed used
            // the id this commit took after it.) An intact image of a later write: this commit
            // was not durable, a later one freed the page and reused it, and this meta page is
            // an older write of its slot than the later commits' (possible only after a power
            // cut under normal durability, whose floor is the durable commit).
            let intact = PageChecksum.compute(UnsafeRawBufferPointer(rebasing: image[4...])) == stored
            if intact, image.u32(PageHeader.pageNumber) == entry.page {
                let later = image.u64(PageHeader.txid) > txid
                return Rejection(meta: self, damagedPage: nil,
                                 detail: "page \(entry.page) holds \(later ? "a later commit's" : "an earlier") image")
            }
            return Rejection(meta: self, damagedPage: entry.page,
                             detail: "page \(entry.page) does not hold what transaction \(txid) wrote there (a torn write or damage)")
        }
        return nil
    }

    /// Both meta pages that are valid, each with its slot, and the file's size when read.
    /// - Throws: when neither is: `notAnArborFile`, `unsupportedFormatVersion`, `truncatedFile`
    ///   or `noValidMetaPage`.
    static func readCandidates(from file: StorageFile, path: String) throws -> (metas: [Meta], fileSize: UInt64) {
        let fileSize = try file.size()
        guard fileSize >= UInt64(Limits.minPageSize) else {
            // Too short for a meta page: truncated if it starts like one, otherwise foreign.
            var start = [UInt8](repeating: 0, count: Offset.magic + 8)
            let read = try start.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
            guard read == start.count, Array(start[Offset.magic...]) == magic else { throw ArborError.notAnArborFile(path: path) }
            throw ArborError.truncatedFile(expectedBytes: UInt64(2 * Limits.minPageSize), actualBytes: fileSize)
        }
        var candidates: [Meta] = []
        var problems: [ArborError] = []
        func attempt(number: PageID, pageSize: Int) {
            let offset = UInt64(number) * UInt64(pageSize)
            guard offset + UInt64(pageSize) <= fileSize else { return }
            var image = [UInt8](repeating: 0, count: pageSize)
            do {
                let read = try image.withUnsafeMutableBytes { try file.read(into: $0, at: offset) }
                guard read == pageSize else { return }
                candidates.append(try image.withUnsafeBytes { try decode($0, number: number) })
            } catch let error as ArborError {
                problems.append(error)
            } catch {
                problems.append(.io(operation: "read meta page", errno: 0))
            }
        }
        // Page 0's header tells the page size; if page 0 is damaged, probe every legal size for page 1.
        var header = [UInt8](repeating: 0, count: 64)
        _ = try header.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
        let recordedSize = header.withUnsafeBytes { Int($0.u32(Offset.pageSize)) }
        if Limits.isValidPageSize(recordedSize) { attempt(number: 0, pageSize: recordedSize) }
        if let first = candidates.first {
            attempt(number: 1, pageSize: first.pageSize)
        } else {
            var size = Limits.minPageSize
            while size <= Limits.maxPageSize {
                attempt(number: 1, pageSize: size)
                if !candidates.isEmpty { break }
                size <<= 1
            }
        }
        guard !candidates.isEmpty else {
            if let version = problems.first(where: { if case .unsupportedFormatVersion = $0 { return true } else { return false } }) {
                throw version
            }
            if problems.allSatisfy({ $0 == .notAnArborFile(path: "") }) { throw ArborError.notAnArborFile(path: path) }
            throw ArborError.noValidMetaPage(detail: problems.map(\.description).joined(separator: "; "))
        }
        return (candidates, fileSize)
    }

    /// Throws `truncatedFile` when the file is shorter than `meta`'s pages and a page it lacks
    /// is not free (see `pagesAreFree`).
    private static func checkLength(of file: StorageFile, measured: UInt64, for meta: Meta) throws {
        let needed = UInt64(meta.pageCount) * UInt64(meta.pageSize)
        guard measured < needed else { return }
        // The size was measured before the meta pages were read: a writer may have grown the
        // file and committed in between, so a short file is measured again.
        let current = try file.size()
        guard current < needed else { return }
        let firstMissing = PageID(current / UInt64(meta.pageSize))
        guard try meta.pagesAreFree(from: firstMissing, in: file) else {
            throw ArborError.truncatedFile(expectedBytes: needed, actualBytes: current)
        }
    }
}
