@testable import ArborEngine
import ArborEngineTestSupport
import Dispatch
import Testing

/// Leaf directories against descents: the directory of a tree finds the leaf a descent from
/// the root finds, for every kind of key (present, absent, a boundary itself, before and after
/// all); in-memory lookups through directories answer as `get` across commits that rewrite the
/// tree and reuse its pages.
@Suite("Leaf directories: the leaf a descent finds, in one search")
struct LeafDirectoryTests {
    /// Long keys with a long common start (long separators, small branches: three levels come
    /// soon; their first eight bytes tie), keys that share their first eight bytes in a few
    /// groups, and short ones that differ only in trailing
    /// zero bytes ([1], [1, 0], [1, 0, 0]: equal padded prefixes).
    static func key(_ number: Int) -> [UInt8] {
        switch number % 5 {
        case 0: return [1] + [UInt8](repeating: 0, count: number % 7)
        case 1: return [2, UInt8(number % 3)] + [UInt8](repeating: 0, count: 6) + withUnsafeBytes(of: UInt32(number).bigEndian, Array.init)
        default:
            // A long common start: separators must be as long, so branches hold few.
            return [UInt8](repeating: 0x40, count: 150) + withUnsafeBytes(of: UInt32(number).bigEndian, Array.init)
        }
    }

    static func value(_ number: Int, _ round: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: number), UInt8(truncatingIfNeeded: round)] }

    /// Creates tree "t" in `db` with `numbers`' keys and their first values, returned as the model.
    static func filled(_ db: Database, _ numbers: some Sequence<Int>) throws -> [[UInt8]: [UInt8]] {
        var model: [[UInt8]: [UInt8]] = [:]
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in numbers {
                try tree.put(Self.key(number), Self.value(number, 0))
                model[Self.key(number)] = Self.value(number, 0)
            }
        }
        return model
    }

    /// One commit of 300 random puts and removes in tree "t" (pages freed and reused, the root
    /// replaced), applied to `model` too.
    static func change(_ db: Database, _ model: inout [[UInt8]: [UInt8]], round: Int, random: inout SplitMix64) throws {
        try db.update { tx in
            let tree = try tx.tree("t")
            for _ in 0..<300 {
                let number = Int(random.next() % 9_000)
                if random.next() % 3 == 0 {
                    _ = try tree.delete(Self.key(number))
                    model[Self.key(number)] = nil
                } else {
                    try tree.put(Self.key(number), Self.value(number, round))
                    model[Self.key(number)] = Self.value(number, round)
                }
            }
        }
    }

    /// The page a descent from the root reaches for `key`.
    static func leafByDescent(_ tx: Transaction, _ info: TreeInfo, _ key: [UInt8]) throws -> PageID? {
        guard case .page(let page) = try key.withUnsafeBytes({ try tx.descendedLeaf(covering: $0, in: info) }) else { return nil }
        return page.id
    }

    @Test("the directory's leaf is the descent's for present, absent and boundary keys")
    func leafMatchesDescent() throws {
        let file = SimulatedFile()
        let db = try Database.open(file: file, options: .init(pageSize: 4096))
        var random = SplitMix64(seed: 7)
        var keys: [[UInt8]] = []
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<9_000 where random.next() % 4 != 0 {
                let key = Self.key(number)
                try tree.put(key, Self.value(number, 0))
                keys.append(key)
            }
        }
        try db.view { tx in
            let tree = try tx.tree("t")
            #expect(tree.info.depth >= 3)
            // Every page in memory: the scan reads the leaves, the descents the branches.
            _ = try tree.entries()
            for key in keys { _ = try Self.leafByDescent(tx, tree.info, key) }
            let built = try LeafDirectory.build(tx, tree.info)
            let directory = try #require(built)
            #expect(directory.leafCount > 100)
            // Within a memory limit, or not built at all (the walk stops at the limit).
            #expect(try LeafDirectory.build(tx, tree.info, maxBytes: directory.memoryBytes) != nil)
            #expect(try LeafDirectory.build(tx, tree.info, maxBytes: directory.memoryBytes - 1) == nil)
            var probes = keys
            for number in 0..<3_000 {
                let base = Self.key(Int(random.next() % 10_000))
                probes.append(base)
                probes.append(base + [0])
                probes.append(Array(base.dropLast()))
                if number % 10 == 0 { probes.append([UInt8](repeating: UInt8(random.next() % 256), count: 1 + number % 12)) }
            }
            probes.append([0])
            probes.append([UInt8](repeating: 0xFF, count: 200))
            for probe in probes {
                let viaDirectory = probe.withUnsafeBytes { directory.leaf(for: $0) }
                #expect(viaDirectory == (try Self.leafByDescent(tx, tree.info, probe)), "key \(probe.prefix(12))")
            }
        }
    }

    @Test("built only for trees of three levels or more, reading no more branch pages than allowed")
    func buildNeedsDepthAndReads() throws {
        let file = SimulatedFile()
        var db: Database? = try Database.open(file: file, options: .init(pageSize: 4096))
        try db?.update { tx in
            let small = try tx.createTree("small")
            for number in 0..<500 { try small.put(Self.key(number), Self.value(number, 0)) }
            let large = try tx.createTree("large")
            for number in 0..<9_000 { try large.put(Self.key(number), Self.value(number, 0)) }
        }
        try db?.view { tx in
            let small = try tx.tree("small")
            #expect(small.info.depth < 3)
            _ = try small.entries()
            #expect(try LeafDirectory.build(tx, small.info) == nil)
        }
        db = nil
        // Reopened with a cache of a few pages: the branches are not all in memory.
        let reopened = try Database.open(file: file, options: .init(pageSize: 4096, cacheBytes: 4 * 4096))
        try reopened.view { tx in
            let large = try tx.tree("large")
            _ = try large.entries()
            #expect(try LeafDirectory.build(tx, large.info) == nil)
            #expect(try LeafDirectory.build(tx, large.info, reads: 1) == nil)
            // Reading what is missing, it finds the leaves the descents find.
            let built = try LeafDirectory.build(tx, large.info, reads: 10_000)
            let directory = try #require(built)
            #expect(directory.leafCount > 100)
            for number in stride(from: 0, to: 9_500, by: 3) {
                let key = Self.key(number)
                #expect(key.withUnsafeBytes { directory.leaf(for: $0) } == (try Self.leafByDescent(tx, large.info, key)))
            }
        }
    }

    /// Reads for a directory scale with the lookups made: a cold reader's few hundred lookups
    /// in one part of a tree with many branches read no branch page for it (a first fetch after
    /// opening pays for its own descents only); lookups spread over the tree get it once an
    /// eighth of their number covers the branches still missing.
    @Test("a build reads branch pages only as the lookups made allow")
    func readsScaleWithLookups() throws {
        let file = SimulatedFile()
        var db: Database? = try Database.open(file: file, options: .init(pageSize: 4096))
        // Twenty-byte keys that differ in their last bytes (separators as long: about 140 a
        // branch) and values of 900 bytes (four entries a leaf): three levels, about 60
        // branches above the leaves.
        func key(_ number: Int) -> [UInt8] { [UInt8](repeating: 0x40, count: 12) + withUnsafeBytes(of: UInt64(number).bigEndian, Array.init) }
        let count = 34_000
        let value = [UInt8](repeating: 3, count: 900)
        try db?.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<count { try tree.put(key(number), value) }
        }
        db = nil
        let reopened = try Database.open(file: file, options: .init(pageSize: 4096))
        try reopened.view { tx in
            let tree = try tx.tree("t")
            #expect(tree.info.depth == 3)
            let threshold = Transaction.leafDirectoryThreshold
            // Lookups in the first hundredth of the keys: their descents read a branch or two.
            for number in 0..<(3 * (threshold + 1)) { #expect(try tree.get(key(number * 7 % (count / 100))) == value) }
            guard case .page(let root) = try tx.node(tree.info.root, level: tree.info.depth - 1) else {
                Issue.record("the root is a page")
                return
            }
            let missing = try LeafDirectory.branchesNotInMemory(under: root, tx, upTo: 1_000)
            #expect(try LeafDirectory.branchesNotInMemory(under: root, tx, upTo: 5) == 6)
            #expect(missing > 3 * threshold / 8, "branches missing: \(missing) of \(root.count + 1)")
            #expect(tree.box.leafDirectory == nil)
            var lookups = 0
            var random = SplitMix64(seed: 11)
            while tree.box.leafDirectory == nil, lookups < 40 * threshold {
                #expect(try tree.get(key(Int(random.next() % UInt64(count)))) == value)
                lookups += 1
            }
            #expect(tree.box.leafDirectory != nil, "after \(lookups) lookups")
        }
    }

    /// A tree whose boundaries are out of order across pages (each page in order by itself):
    /// the first separator of the root's second child lowered below the root's first separator,
    /// once to a lower search prefix, once to the same prefix with lower bytes after it. The
    /// build notices and gives no directory, so lookups keep their descents.
    @Test("a tree whose separators are out of order gets no directory", arguments: [false, true])
    func outOfOrderSeparators(tiedPrefix: Bool) throws {
        let file = SimulatedFile()
        var db: Database? = try Database.open(file: file, options: .init(pageSize: 4096))
        // One long common start: every separator's first eight bytes are the same.
        func longKey(_ number: Int) -> [UInt8] { [UInt8](repeating: 0x40, count: 150) + withUnsafeBytes(of: UInt32(number).bigEndian, Array.init) }
        try db?.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<9_000 { try tree.put(longKey(number), [1]) }
        }
        var found: (info: TreeInfo, secondChild: PageID, built: Bool)?
        try db?.view { tx in
            let info = try tx.tree("t").info
            guard info.depth >= 3, case .page(let root) = try tx.node(info.root, level: info.depth - 1) else { return }
            found = (info, root.child(1), try LeafDirectory.build(tx, info, reads: 10_000) != nil)
        }
        let (info, secondChild, builtBefore) = try #require(found)
        #expect(builtBefore)
        db = nil
        var image = file.currentBytes
        let pageStart = Int(secondChild) * 4096
        let (start, length) = try image.withUnsafeBytes { file in
            try Page.validated(id: secondChild, image: UnsafeRawBufferPointer(rebasing: file[pageStart..<(pageStart + 4096)]), verifyChecksum: true).keyLocation(0)
        }
        for offset in (tiedPrefix ? 8 : 0)..<length { image[pageStart + start + offset] = 0 }
        resealPage(&image, page: Int(secondChild))
        let damaged = try Database.open(file: SimulatedFile(bytes: image), options: .init(pageSize: 4096))
        let built = try damaged.view { tx in
            _ = try tx.node(info.root, level: info.depth - 1)  // the root in memory: the build starts there
            return try LeafDirectory.build(tx, info, reads: 10_000)
        }
        #expect(built == nil)
    }

    /// A database opened cold: the first reader's lookups read their pages and get the
    /// directory at the third request, its missing branch pages read for it, and then answer
    /// as the model (in memory or, for leaves not read yet, by `get`).
    @Test("a cold reader gets the directory, its missing branch pages read for it")
    func coldReaderGetsDirectory() throws {
        let file = SimulatedFile()
        // Written by a database that is closed as the call returns.
        let model = try Self.filled(try Database.open(file: file, options: .init(pageSize: 4096)), 0..<8_000)
        let reopened = try Database.open(file: file, options: .init(pageSize: 4096))
        try reopened.view { tx in
            let tree = try tx.tree("t")
            var lookups = 0, notInMemory = 0
            while tree.box.leafDirectory == nil, lookups < 10 * Transaction.leafDirectoryThreshold {
                let key = Self.key(lookups * 37 % 9_000)
                let answer = try key.withUnsafeBytes { try tree.withValueInMemory(forKey: $0) { Array($0) } }
                if case .found(let value) = answer { #expect(value == model[key]) }
                if case .notInMemory = answer {
                    notInMemory += 1
                    #expect(try tree.get(key) == model[key])
                }
                lookups += 1
            }
            #expect(notInMemory > 0)
            #expect(tree.box.leafDirectory != nil)
            // The gets count as lookups too: the third request comes sooner.
            #expect(lookups <= 3 * (Transaction.leafDirectoryThreshold + 1))
            for number in stride(from: 0, to: 9_000, by: 7) {
                let key = Self.key(number)
                let answer = try key.withUnsafeBytes { try tree.withValueInMemory(forKey: $0) { Array($0) } }
                switch answer {
                case .found(let value): #expect(value == model[key])
                case .absent: #expect(model[key] == nil)
                case .notInMemory: #expect(try tree.get(key) == model[key])
                }
            }
        }
    }

    /// Rounds of random puts and removes (pages are freed and reused, roots replaced), each
    /// followed by read transactions that each look up hundreds of keys in memory: past the
    /// threshold they go through the tree version's directory, built at its third request.
    @Test("in-memory lookups through directories answer as get across commits", arguments: [UInt64(1), 2])
    func lookupsMatchGetAcrossCommits(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096))
        var model = try Self.filled(db, 0..<8_000)
        var throughDirectory = 0
        for round in 1...6 {
            try Self.change(db, &model, round: round, random: &random)
            for _ in 0..<5 {
                try db.view { tx in
                    let tree = try tx.tree("t")
                    _ = try tree.entries()  // every page in memory
                    for _ in 0..<400 {
                        let key = Self.key(Int(random.next() % 9_000))
                        let answer = try key.withUnsafeBytes { try tree.withValueInMemory(forKey: $0) { Array($0) } }
                        switch answer {
                        case .found(let value): #expect(value == model[key], "round \(round)")
                        case .absent: #expect(model[key] == nil, "round \(round)")
                        case .notInMemory: Issue.record("round \(round): every page is in memory")
                        }
                    }
                    if tree.box.leafDirectory != nil { throughDirectory += 1 }
                }
            }
        }
        // Each version is asked for by five transactions: the last three use its directory.
        #expect(throughDirectory >= 12)
    }

    /// Point lookups and first entries of ranges (a SUBQUERY's probe) find their leaf through
    /// the directory once a read transaction has made enough lookups: across commits that
    /// replace the tree's pages, each answers as a sorted model of the tree does, for keys
    /// present, absent, between leaves and past the last key.
    @Test("gets and first entries of ranges through directories answer as the model across commits", arguments: [UInt64(3), 4])
    func pointLookupsMatchModel(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096))
        var model = try Self.filled(db, (0..<8_000).filter { $0 % 5 != 0 })
        /// The model's first entry with a key from `lower` (inclusive or not) to `upper`.
        func firstEntry(_ sorted: [[UInt8]], from lower: [UInt8], _ lowerInclusive: Bool, to upper: [UInt8]?, _ upperInclusive: Bool) -> [UInt8]? {
            var low = 0, high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                let order = compareBytes(sorted[middle], lower)
                if order < 0 || (order == 0 && !lowerInclusive) { low = middle + 1 } else { high = middle }
            }
            guard low < sorted.count else { return nil }
            if let upper {
                let order = compareBytes(sorted[low], upper)
                guard order < 0 || (order == 0 && upperInclusive) else { return nil }
            }
            return sorted[low]
        }
        var throughDirectory = 0
        for round in 1...5 {
            try Self.change(db, &model, round: round, random: &random)
            let sorted = model.keys.sorted { compareBytes($0, $1) < 0 }
            for _ in 0..<4 {
                try db.view { tx in
                    let tree = try tx.tree("t")
                    _ = try tree.entries()  // every branch in memory, so that the directory can be built
                    for _ in 0..<300 {
                        let base = Self.key(Int(random.next() % 9_500))
                        let lower = [base, base + [0], Array(base.dropLast())][Int(random.next() % 3)]
                        #expect(try tree.get(lower) == model[lower], "round \(round): get")
                        let lowerInclusive = random.next() % 2 == 0, upperInclusive = random.next() % 2 == 0
                        let upper: [UInt8]? = random.next() % 4 == 0 ? nil : Self.key(Int(random.next() % 9_500))
                        var found: [UInt8]?
                        let answer = try lower.withUnsafeBytes { lowerBytes in
                            try (upper ?? []).withUnsafeBytes { upperBytes in
                                try tree.withFirstEntry(from: lowerBytes, inclusive: lowerInclusive, to: upper == nil ? nil : upperBytes,
                                                        inclusive: upperInclusive) { key, _ in
                                    found = Array(key)
                                    return true
                                }
                            }
                        }
                        let expected = firstEntry(sorted, from: lower, lowerInclusive, to: upper, upperInclusive)
                        #expect(found == expected, "round \(round): first entry from \(lower.suffix(4)) to \(String(describing: upper?.suffix(4)))")
                        #expect((answer != nil) == (expected != nil))
                    }
                    if tree.box.leafDirectory != nil { throughDirectory += 1 }
                }
            }
        }
        // Each version is read by four transactions: the last two at least use its directory.
        #expect(throughDirectory >= 8)
    }

    /// A store keeps its last read transaction, with its trees' boxes, for the next read: a box
    /// asks for the directory again after each `leafDirectoryThreshold` lookups, so one long
    /// reader (or many reads through a kept transaction) gets the directory built at the third request.
    @Test("one transaction's lookups in one tree get the directory at its third request")
    func longReaderGetsDirectory() throws {
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096))
        let model = try Self.filled(db, 0..<8_000)  // some numbers share a key: the last put stays
        try db.view { tx in
            let tree = try tx.tree("t")
            _ = try tree.entries()  // every page in memory
            var lookups = 0
            while tree.box.leafDirectory == nil, lookups < 10 * Transaction.leafDirectoryThreshold {
                let key = Self.key(lookups * 37 % 9_000)
                #expect(try tree.get(key) == model[key])
                lookups += 1
            }
            #expect(tree.box.leafDirectory != nil)
            #expect(lookups == 3 * (Transaction.leafDirectoryThreshold + 1))
            for number in stride(from: 0, to: 9_000, by: 7) {
                let key = Self.key(number)
                #expect(try tree.get(key) == model[key])
            }
        }
    }

    @Test("a tree version is built at its third request, and after a failed build at twice as many")
    func demandAndBackoff() {
        var directories = LeafDirectories(budget: 1 << 20)
        // Whether each request, in turn, should build.
        func requests(_ count: Int, rootTransaction: UInt64) -> [Bool] {
            (0..<count).map { _ in directories.noteDemand(root: 9, rootTransaction: rootTransaction) != nil }
        }
        #expect(requests(3, rootTransaction: 4) == [false, false, true])
        directories.noteFailure(root: 9, rootTransaction: 4)
        #expect(requests(6, rootTransaction: 4) == [false, false, false, false, false, true])
        directories.noteFailure(root: 9, rootTransaction: 4)
        #expect(requests(12, rootTransaction: 4) == Array(repeating: false, count: 11) + [true])
        // Another version of the tree under the same root page number starts again.
        #expect(requests(3, rootTransaction: 5) == [false, false, true])
        // Short of reads: the next try comes at the request named, which reports the count.
        directories.noteShortOfReads(root: 9, rootTransaction: 5, until: 7)
        #expect(requests(3, rootTransaction: 5) == [false, false, false])
        #expect(directories.noteDemand(root: 9, rootTransaction: 5) == 7)
    }

    /// Readers on four threads, each in its own transactions, look up keys in memory while a
    /// writer commits: directories are built, shared and replaced concurrently (run under
    /// ThreadSanitizer by `make tsan`), and every answer is the one of the reader's snapshot.
    @Test("readers on several threads share directories while a writer commits")
    func concurrentReaders() throws {
        let db = try Database.open(file: SimulatedFile(), options: .init(pageSize: 4096))
        try db.update { tx in
            let tree = try tx.createTree("t")
            for number in 0..<8_000 { try tree.put(Self.key(number), Self.value(number, 0)) }
        }
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<4 {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                var random = SplitMix64(seed: UInt64(thread))
                do {
                    for _ in 0..<12 {
                        try db.view { tx in
                            let tree = try tx.tree("t")
                            _ = try tree.entries()
                            for _ in 0..<200 {
                                let key = Self.key(Int(random.next() % 8_000))
                                let answer = try key.withUnsafeBytes { try tree.withValueInMemory(forKey: $0) { Array($0) } }
                                let stored = try tree.get(key)
                                switch answer {
                                case .found(let value) where value == stored: break
                                case .absent where stored == nil: break
                                default: failures.withLock { $0.append("thread \(thread): \(answer) vs \(String(describing: stored))") }
                                }
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("thread \(thread): \(error)") }
                }
            }
        }
        for round in 1...6 {
            try db.update { tx in
                let tree = try tx.tree("t")
                for number in stride(from: round, to: 8_000, by: 37) { try tree.put(Self.key(number), Self.value(number, round)) }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
    }
}
