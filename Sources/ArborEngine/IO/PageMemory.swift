import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory for the images of pages held in memory (`Page.bytes`), carved from runs of 2 MiB
/// aligned to 2 MiB, which the kernel may back with one huge page each (`MADV_HUGEPAGE`).
///
/// A run marked for a huge page is made on a background thread, ahead of its need (a spare
/// run: see `prepareSpare`), never by a reader: the kernel takes and zeroes the huge page at
/// the run's first touch, in the thread that touches it. After the process had churned through
/// a few gigabytes (`arbor-bench transit-profile --iterate-first-arbor`), that first touch held
/// up one query in twenty of the compound SUBQUERY for about 5 ms (p95 4.7 to 5.0 ms, 0.9 to
/// 1.2 ms with spares), with no compaction counted in `/proc/vmstat`. A run needed before its
/// spare is ready is left to small pages and faulted in ahead of its carving instead (as the
/// process's first run always is: see `mapRun`).
///
/// Why: a query that probes an index once per candidate reaches leaves all over a page cache
/// of tens of megabytes. With each image a separate allocation of the C library's, nearly every
/// such leaf lay in a 4 KiB page of memory that the CPU's address translation had not seen
/// lately, and each first touch waited for a page-table walk on top of the cache miss. Backed
/// by huge pages, 64 MiB of images need 32 translations instead of 16,384. The compound
/// SUBQUERY of `arbor-bench transit` took 9% less time with the C library's heap on huge pages
/// (glibc's `glibc.malloc.hugetlb=1`) and 7.5% less with this pool; its first queries after
/// opening, which read most of their leaves from the file, about a quarter less, as a fresh
/// 4 KiB page of heap no longer faults in for each image read.
///
/// Sizes that are a multiple of 4 KiB up to 64 KiB (every page size) come from the pool, each
/// size from its own list of freed blocks, else from the run being carved; others, and any
/// size when the system refuses a run, from the C library. A freed block goes back to its
/// size's list, and a run whose blocks are all free again is returned to the system (unless it
/// is the one being carved), so the pool holds about what the page caches of the process hold.
/// `deallocate` tells a pooled block from the C library's by its run's address.
///
/// Under AddressSanitizer (the fuzz targets) every block comes from the C library, so that a
/// read past a page's end still meets a poisoned guard, not the next page.
final class PageMemory: Sendable {
    static let shared = PageMemory()

    static let runBytes = 2 << 20
    static let granule = 4096
    static let largestPooled = 64 << 10

    private struct State {
        /// Freed blocks (addresses) by size: list `i` holds blocks of `i` granules.
        var free = [[UInt]](repeating: [], count: largestPooled / granule + 1)
        /// The part of the newest run not carved yet.
        var next: UInt = 0
        var end: UInt = 0
        /// The runs mapped, by start, with the blocks in use in each (a page read and a page
        /// freed each look their run up: a bisection of a few dozen starts costs fewer
        /// instructions than hashing into a dictionary).
        var runs = RunTable()
        /// Set when the system refused a run: later allocations go to the C library.
        var exhausted = false
        /// Runs carved so far.
        var mapped = 0
        /// In a run left to small pages, the end of its part faulted in so far (`prefaultBytes`
        /// at a time, ahead of the carving); 0 in a run marked for huge pages.
        var prefaulted: UInt = 0
        /// A run marked for huge pages and faulted in on a background thread, taken when the
        /// run being carved runs out (0: none).
        var spare: UInt = 0
        /// Whether a spare run is being made.
        var preparing = false
    }

    /// How much of a run left to small pages is faulted in at a time, in one system call.
    static let prefaultBytes = 64 << 10

    private let state = Locked(State())
    /// Whether blocks come from the pool (not under AddressSanitizer).
    private let pools: Bool

    init(pools: Bool = !PageMemory.addressSanitizerIsLoaded) {
        self.pools = pools
    }

    deinit {
        let spare = state.withLock { $0.spare }
        if spare != 0, let start = UnsafeMutableRawPointer(bitPattern: spare) { munmap(start, Self.runBytes) }
    }

    /// Whether the process runs under AddressSanitizer: its runtime's entry point is loaded.
    static var addressSanitizerIsLoaded: Bool {
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(process) }
        return dlsym(process, "__asan_init") != nil
    }

    /// A block of `byteCount` bytes, aligned to 8 bytes at least; release it with `deallocate`.
    /// - Complexity: O(1) amortized: one lock; a system call for each new run of 2 MiB.
    func allocate(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        guard pools, byteCount > 0, byteCount <= Self.largestPooled, byteCount % Self.granule == 0,
              let taken = state.withLock({ Self.take(byteCount, from: &$0) }),
              let base = UnsafeMutableRawPointer(bitPattern: taken.address) else {
            return UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 8)
        }
        // Outside the lock: the range lies in the block's run, which the block keeps mapped.
        if let range = taken.prefault { Self.prefault(range) }
        if taken.needsSpare { DispatchQueue.global(qos: .utility).async { self.prepareSpare() } }
        return UnsafeMutableRawBufferPointer(start: base, count: byteCount)
    }

    /// Releases `buffer`, a block `allocate` returned (with the same count).
    /// - Complexity: O(1), one lock; when the block was the last in use of a run that is not
    ///   being carved, O(free blocks) to take the run's blocks off the lists, and a system call.
    func deallocate(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        let address = UInt(bitPattern: base)
        let run = Self.run(of: address)
        let pooled = state.withLock { state -> Bool in
            guard let position = state.runs.position(of: run) else { return false }
            guard state.runs.live[position] > 1 || run == state.end &- UInt(Self.runBytes) else {
                // The run's last block in use: the run goes back to the system.
                Self.release(run, in: &state)
                return true
            }
            state.runs.live[position] -= 1
            state.free[buffer.count / Self.granule].append(address)
            return true
        }
        if !pooled { buffer.deallocate() }
    }

    /// Blocks on the free lists, blocks in use and runs mapped (for tests).
    var statistics: (freeBlocks: Int, blocksInUse: Int, runs: Int) {
        state.withLock { state in
            (state.free.reduce(0) { $0 + $1.count }, state.runs.live.reduce(0, +), state.runs.starts.count)
        }
    }

    /// The spare run's start (0: none) and whether one is being made (for tests).
    var spare: (start: UInt, preparing: Bool) { state.withLock { ($0.spare, $0.preparing) } }

    /// Makes a spare run: mapped, marked for huge pages and faulted in here, on a background
    /// thread, so that the kernel's work to bring in a huge page (taking and zeroing 2 MiB)
    /// holds up no reader. Called when `take` asks for it.
    private func prepareSpare() {
        let run = Self.mapRun(huge: true)
        if let run { Self.faultIn(run..<(run + UInt(Self.runBytes))) }
        let unused = state.withLock { state -> UInt? in
            // Refused: not asked for again (carving goes on with small-page runs).
            guard let run else { return nil }
            state.preparing = false
            guard state.spare == 0 else { return run }
            state.spare = run
            return nil
        }
        if let unused, let start = UnsafeMutableRawPointer(bitPattern: unused) { munmap(start, Self.runBytes) }
    }

    /// Returns `run` to the system, taking its blocks off the free lists.
    private static func release(_ run: UInt, in state: inout State) {
        state.runs.remove(run)
        for size in state.free.indices { state.free[size].removeAll { Self.run(of: $0) == run } }
        if let start = UnsafeMutableRawPointer(bitPattern: run) { munmap(start, runBytes) }
    }

    /// The start of the run holding `address`.
    private static func run(of address: UInt) -> UInt { address & ~UInt(runBytes - 1) }

    /// A freed block of `size` bytes, else one carved from the current run (a new run when it
    /// has too little left: the spare, else one left to small pages), with the part of a
    /// small-page run to fault in ahead of it, and whether a spare run should be made now (once
    /// the process's first run is half carved, and from then on whenever there is none); nil
    /// when the system refuses a run.
    private static func take(_ size: Int, from state: inout State) -> (address: UInt, prefault: Range<UInt>?, needsSpare: Bool)? {
        if let address = state.free[size / granule].popLast() {
            state.runs.noteTaken(run(of: address))
            return (address, nil, false)
        }
        if state.end - state.next < UInt(size) {
            guard !state.exhausted else { return nil }
            let huge = state.spare != 0
            let taken = huge ? state.spare : mapRun(huge: false)
            guard let run = taken else {
                state.exhausted = true
                return nil
            }
            state.spare = 0
            state.mapped += 1
            // The run carved until now, if none of its blocks is in use, goes back at once: every
            // run but the one being carved holds a block in use.
            if state.end > 0, let previous = state.runs.position(of: state.end - UInt(runBytes)), state.runs.live[previous] == 0 {
                release(state.end - UInt(runBytes), in: &state)
            }
            state.runs.insert(run)
            (state.next, state.end) = (run, run + UInt(runBytes))
            state.prefaulted = huge ? 0 : run
        }
        let address = state.next
        state.next += UInt(size)
        state.runs.noteTaken(run(of: address))
        var prefault: Range<UInt>?
        if state.prefaulted != 0, state.next > state.prefaulted {
            let chunk = UInt(prefaultBytes)
            let end = min(state.end, (state.next + chunk - 1) & ~(chunk - 1))
            prefault = state.prefaulted..<end
            state.prefaulted = end
        }
        // Not at once in a fresh process: opening a store and answering its first fetch
        // should not share the machine with a background fault of 2 MiB.
        let needsSpare = state.spare == 0 && !state.preparing && (state.mapped > 1 || state.end - state.next <= UInt(runBytes / 2))
        if needsSpare { state.preparing = true }
        return (address, prefault, needsSpare)
    }

    /// Faults in `range` (of a run left to small pages) in one system call: one trap instead of
    /// one for each 4 KiB page as the images are first written. Before Linux 5.14 the call is
    /// refused (false), and the pages fault in as they are touched.
    @discardableResult
    private static func prefault(_ range: Range<UInt>) -> Bool {
        #if os(Linux)
        let populateWrite: Int32 = 23  // MADV_POPULATE_WRITE
        if let start = UnsafeMutableRawPointer(bitPattern: range.lowerBound) {
            return madvise(start, Int(range.upperBound - range.lowerBound), populateWrite) == 0
        }
        #endif
        return false
    }

    /// Faults in all of `range` (a spare run, untouched): `prefault`, else by writing a byte of
    /// each 4 KiB page (the first write brings in the huge page, when the kernel finds one).
    private static func faultIn(_ range: Range<UInt>) {
        guard !prefault(range) else { return }
        for page in stride(from: range.lowerBound, to: range.upperBound, by: granule) {
            UnsafeMutablePointer<UInt8>(bitPattern: page)?.pointee = 0
        }
    }

    /// A new run of `runBytes`, aligned to `runBytes`: mapped with room to align, the rest
    /// unmapped; with `huge`, marked for huge pages. nil when the system refuses.
    ///
    /// A run needed before its spare is ready is not marked, nor is the process's first run
    /// (a spare is asked for once it is half carved): opening a store and answering its first fetch
    /// reads a few hundred pages, and a huge page is zeroed whole (2 MiB) at its first touch;
    /// on this project's virtual machine, with the first run marked, 1 to 4 spawns in 30 took
    /// 6 to 7 ms to open a store and answer a fetch, where the others took 2. Its pages are
    /// faulted in `prefaultBytes` at a time instead (`take`): each image read into it used to
    /// fault in its own page (a trap, a page taken and charged, 4 KiB zeroed), a fifth of a
    /// fresh process's first 200 geo 80 m queries. Spare runs are marked.
    private static func mapRun(huge: Bool) -> UInt? {
        let length = 2 * runBytes
        guard let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED else { return nil }
        let start = UInt(bitPattern: mapped)
        let aligned = (start + UInt(runBytes - 1)) & ~UInt(runBytes - 1)
        if aligned > start { munmap(mapped, Int(aligned - start)) }
        let tail = start + UInt(length) - (aligned + UInt(runBytes))
        if tail > 0, let tailStart = UnsafeMutableRawPointer(bitPattern: aligned + UInt(runBytes)) { munmap(tailStart, Int(tail)) }
        #if os(Linux)
        if huge, let run = UnsafeMutableRawPointer(bitPattern: aligned) { _ = madvise(run, runBytes, MADV_HUGEPAGE) }
        #endif
        return aligned
    }
}

/// The runs `PageMemory` has mapped, sorted by start, with the blocks in use in each.
private struct RunTable {
    private(set) var starts: [UInt] = []
    var live: [Int] = []

    /// The position of the run starting at `start`, if it is mapped. O(log runs).
    func position(of start: UInt) -> Int? {
        var low = 0, high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] < start { low = middle + 1 } else { high = middle }
        }
        return low < starts.count && starts[low] == start ? low : nil
    }

    /// Adds a run with no block in use.
    mutating func insert(_ start: UInt) {
        let at = starts.firstIndex { $0 > start } ?? starts.count
        starts.insert(start, at: at)
        live.insert(0, at: at)
    }

    mutating func remove(_ start: UInt) {
        guard let at = position(of: start) else { return }
        starts.remove(at: at)
        live.remove(at: at)
    }

    /// Counts a block taken from the run starting at `start` (a mapped run).
    mutating func noteTaken(_ start: UInt) {
        if let at = position(of: start) { live[at] += 1 }
    }
}
