import Arbor
@testable import ArborTransit
import ArborTestSupport
import Foundation
import Testing

/// The fuzz bodies of the tools, run on mutated inputs as part of the test suite.
@Suite("GTFS reading and store inspection on damaged input")
struct ToolFuzzPropertyTests {
    @Test("mutated GTFS files: records or a GTFSError, the same in any chunking")
    func mutatedFeeds() throws {
        var random = SplitMix64(seed: 21)
        let seeds = [Array(QuirkyFeed.stops.utf8), Array(QuirkyFeed.stopTimes.utf8)]
        for round in 0..<2_000 {
            var bytes = seeds[round % 2]
            for _ in 0..<(1 + Int(random.next() % 4)) where !bytes.isEmpty {
                let position = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert([0x22, 0x2C, 0x0A, 0x0D, 0xEF, 0xC3][Int(random.next() % 6)], at: position)
                }
            }
            try ToolFuzzBodies.gtfs(bytes)
        }
    }

    @Test("damaged transit stores: the inspection paths answer or fail with a typed error")
    func damagedStores() throws {
        let scratch = try ScratchDirectory()
        let feed = try scratch.feed("f", stops: QuirkyFeed.stops, stopTimes: QuirkyFeed.stopTimes)
        _ = try GTFSImporter.importFeed(from: feed, into: scratch.path("t.arbor"))
        let image = Array(try Data(contentsOf: scratch.path("t.arbor")))
        try ToolFuzzBodies.inspect(image)
        var random = SplitMix64(seed: 5)
        for _ in 0..<150 {
            var damaged = image
            for _ in 0..<(1 + Int(random.next() % 3)) {
                damaged[Int(random.next() % UInt64(damaged.count))] ^= UInt8(truncatingIfNeeded: 1 + random.next() % 255)
            }
            try ToolFuzzBodies.inspect(damaged)
        }
    }
}
