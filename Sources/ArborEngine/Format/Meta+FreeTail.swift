extension Meta {
    /// Whether every page of this state from `firstMissing` to the end (`pageCount`) is free.
    ///
    /// A file may end before its state's last page: pages allocated at the end and freed again
    /// are never written, and after a power cut the extension made by an unsynced commit may be
    /// lost while a later commit, which freed those pages, reached the disk whole. Such a file
    /// holds every page the state reaches. A file cut short anywhere else does not.
    /// - Complexity: reads the freelist tree once (only when the file is short).
    /// - Throws: `corruptPage` or `pageOutOfRange` for a damaged freelist, I/O errors.
    func pagesAreFree(from firstMissing: PageID, in file: StorageFile) throws -> Bool {
        guard firstMissing < pageCount else { return true }
        var free = Set<PageID>()
        for page in inlineFree where page.page >= firstMissing && page.page < pageCount { free.insert(page.page) }
        if freelist.root != 0 {
            try visitFreelistPages(in: file) { page in
                if page >= firstMissing && page < pageCount { free.insert(page) }
            }
        }
        return free.count == Int(pageCount - firstMissing)
    }

    /// Calls `visit` with every page number the freelist tree lists, reading its pages from
    /// `file` (a page of the tree itself past the end of the file throws `corruptPage`).
    private func visitFreelistPages(in file: StorageFile, _ visit: (PageID) -> Void) throws {
        var stack: [(page: PageID, level: Int)] = [(freelist.root, freelist.depth - 1)]
        var visited = 0
        while let (id, level) = stack.popLast() {
            visited += 1
            guard id >= 2, id < pageCount, visited <= Int(pageCount) else {
                throw ArborError.pageOutOfRange(page: id, pageCount: pageCount, referencedFrom: "the freelist")
            }
            let page = try Page.read(id, from: file, pageSize: pageSize)
            guard page.level == level, (level == 0) == (page.type == .leaf) else {
                throw ArborError.corruptPage(page: id, detail: "freelist page at level \(page.level) where level \(level) belongs")
            }
            guard level == 0 else {
                for index in 0...page.count { stack.append((page.child(index), level - 1)) }
                continue
            }
            for index in 0..<page.count {
                guard case .inline(let bytes) = page.leafValue(index) else {
                    throw ArborError.corruptPage(page: id, detail: "freelist entry \(index) is not inline")
                }
                for free in try FreelistKey.decodePages(bytes, page: id) { visit(free) }
            }
        }
    }
}
