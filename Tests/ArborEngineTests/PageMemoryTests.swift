@testable import ArborEngine
import ArborEngineTestSupport
import Foundation
import Testing

/// The pool page images are allocated from (`PageMemory`): blocks never overlap and keep what
/// was written into them, freed blocks are reused, runs go back to the system once empty, and
/// sizes the pool does not serve come from the C library.
@Suite struct PageMemoryTests {
    /// A block with the value each of its bytes should hold.
    struct Block {
        let buffer: UnsafeMutableRawBufferPointer
        let seed: UInt8

        init(_ buffer: UnsafeMutableRawBufferPointer, seed: UInt8) {
            self.buffer = buffer
            self.seed = seed
            buffer.initializeMemory(as: UInt8.self, repeating: seed)
        }

        /// Every 64th byte and the last (a block is written whole, and two blocks that overlap
        /// share at least a line): a debug build checks them in a fraction of the time.
        var isIntact: Bool {
            stride(from: 0, to: buffer.count, by: 64).allSatisfy { buffer[$0] == seed } && buffer.last.map { $0 == seed } != false
        }
    }

    static let sizes = [4096, 8192, 16384, 65536, 100, 4097, 131_072]

    @Test func blocksKeepTheirBytesThroughRandomAllocationsAndFrees() {
        let memory = PageMemory(pools: true)
        var generator = SplitMix64(seed: 7)
        var live: [Block] = []
        for step in 0..<3000 {
            if !live.isEmpty, generator.next() % 3 == 0 {
                let victim = live.remove(at: Int(generator.next() % UInt64(live.count)))
                #expect(victim.isIntact)
                memory.deallocate(victim.buffer)
            } else {
                let size = Self.sizes[Int(generator.next() % UInt64(Self.sizes.count))]
                let buffer = memory.allocate(byteCount: size)
                #expect(buffer.count == size)
                #expect(Int(bitPattern: buffer.baseAddress) % 8 == 0)
                live.append(Block(buffer, seed: UInt8(truncatingIfNeeded: step)))
            }
        }
        // No two live blocks overlap, and each holds its bytes.
        let ranges = live.map { UInt(bitPattern: $0.buffer.baseAddress)..<(UInt(bitPattern: $0.buffer.baseAddress) + UInt($0.buffer.count)) }
            .sorted { $0.lowerBound < $1.lowerBound }
        for (first, second) in zip(ranges, ranges.dropFirst()) { #expect(first.upperBound <= second.lowerBound) }
        #expect(live.allSatisfy { $0.isIntact })
        for block in live { memory.deallocate(block.buffer) }
        let statistics = memory.statistics
        #expect(statistics.blocksInUse == 0)
        // Only the run being carved stays mapped.
        #expect(statistics.runs <= 1)
    }

    @Test func aFreedBlockIsReusedForItsSize() {
        let memory = PageMemory(pools: true)
        let first = memory.allocate(byteCount: 4096)
        let other = memory.allocate(byteCount: 8192)
        memory.deallocate(first)
        let second = memory.allocate(byteCount: 4096)
        #expect(second.baseAddress == first.baseAddress)
        memory.deallocate(second)
        memory.deallocate(other)
    }

    @Test func emptyRunsGoBackToTheSystem() {
        let memory = PageMemory(pools: true)
        // 32 blocks of 64 KiB fill a run: 100 of them take four runs.
        let blocks = (0..<100).map { _ in memory.allocate(byteCount: 65536) }
        #expect(memory.statistics.runs == 4)
        for block in blocks { memory.deallocate(block) }
        #expect(memory.statistics.runs == 1)
        #expect(memory.statistics.blocksInUse == 0)
        // The pool still serves after runs were returned.
        let again = memory.allocate(byteCount: 65536)
        let block = Block(again, seed: 9)
        #expect(block.isIntact)
        memory.deallocate(again)
    }

    @Test func aRunEmptiedWhileCarvedGoesBackWhenTheNextIsMapped() {
        let memory = PageMemory(pools: true)
        // 512 blocks of 4 KiB carve a whole run; freed, they stay listed while it is current.
        let small = (0..<512).map { _ in memory.allocate(byteCount: 4096) }
        for block in small { memory.deallocate(block) }
        #expect(memory.statistics.runs == 1)
        #expect(memory.statistics.freeBlocks == 512)
        // A size with no freed block needs a new run: the empty one goes, with its listed blocks.
        let large = memory.allocate(byteCount: 65536)
        #expect(memory.statistics.runs == 1)
        #expect(memory.statistics.freeBlocks == 0)
        #expect(memory.statistics.blocksInUse == 1)
        memory.deallocate(large)
        #expect(memory.statistics.runs == 1)
    }

    @Test func aSpareRunIsMadeInTheBackgroundAndCarvedNext() async throws {
        let memory = PageMemory(pools: true)
        // The first run is carved without a spare until half of it is taken (256 blocks of 4 KiB).
        var blocks = (0..<200).map { _ in memory.allocate(byteCount: 4096) }
        #expect(memory.spare == (0, false))
        blocks += (0..<100).map { _ in memory.allocate(byteCount: 4096) }
        var waited = 0
        while memory.spare.start == 0, waited < 500 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        let spare = memory.spare.start
        try #require(spare != 0)
        // The spare is faulted in and unused; the run after the first is the spare.
        blocks += (300..<512).map { _ in memory.allocate(byteCount: 4096) }
        let next = memory.allocate(byteCount: 4096)
        #expect(UInt(bitPattern: next.baseAddress) == spare)
        let written = Block(next, seed: 5)
        #expect(written.isIntact)
        #expect(memory.statistics.runs == 2)
        // Carving the spare asks for the next one at once.
        let after = memory.spare
        #expect(after.start != spare && (after.start != 0 || after.preparing))
        memory.deallocate(next)
        for block in blocks { memory.deallocate(block) }
        #expect(memory.statistics.blocksInUse == 0)
    }

    @Test func sizesThePoolDoesNotServeComeFromTheCLibrary() {
        let memory = PageMemory(pools: true)
        for size in [1, 100, 4097, 65536 + 4096, 1 << 20] {
            let buffer = memory.allocate(byteCount: size)
            let block = Block(buffer, seed: 3)
            #expect(block.isIntact)
            memory.deallocate(buffer)
        }
        #expect(memory.statistics.runs == 0)
        let unpooled = PageMemory(pools: false)
        let buffer = unpooled.allocate(byteCount: 4096)
        unpooled.deallocate(buffer)
        #expect(unpooled.statistics.runs == 0)
    }

    @Test func threadsAllocateAndFreeAtOnce() async {
        let memory = PageMemory(pools: true)
        await withTaskGroup(of: Bool.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    var generator = SplitMix64(seed: UInt64(thread + 1))
                    var live: [Block] = []
                    var intact = true
                    for step in 0..<1500 {
                        if live.count > 40 || (!live.isEmpty && generator.next() % 2 == 0) {
                            let victim = live.remove(at: Int(generator.next() % UInt64(live.count)))
                            intact = intact && victim.isIntact
                            memory.deallocate(victim.buffer)
                        } else {
                            let size = [4096, 8192, 65536][Int(generator.next() % 3)]
                            live.append(Block(memory.allocate(byteCount: size), seed: UInt8(truncatingIfNeeded: step &* 31 &+ thread)))
                        }
                    }
                    for block in live {
                        intact = intact && block.isIntact
                        memory.deallocate(block.buffer)
                    }
                    return intact
                }
            }
            for await intact in group { #expect(intact) }
        }
        #expect(memory.statistics.blocksInUse == 0)
        #expect(memory.statistics.runs <= 1)
    }
}
