import Arbor
@testable import ArborTransit
import Foundation
import Testing

@Suite("arbor import gtfs: real feeds' quirks, errors with file and line, all-or-nothing output")
struct GTFSImportTests {
    @Test("a feed with every quirk imports completely")
    func quirkyFeed() throws {
        let scratch = try ScratchDirectory()
        let feed = try scratch.feed("quirky", stops: QuirkyFeed.stops, stopTimes: QuirkyFeed.stopTimes)
        let output = scratch.path("transit.arbor")
        let result = try GTFSImporter.importFeed(from: feed, into: output)
        #expect(result.stops == 4 && result.stopTimes == 5 && result.skippedRows == 0)
        try withTransitStore(output) { context in
            var request = FetchRequest(entityName: "Stop")
            request.sortDescriptors = [ObjectSortDescriptor("identifier")]
            let stops = try context.fetch(request, as: Stop.self)
            #expect(stops.map(\.stopID) == ["42", "1025a", "2900p6", "E1"])
            #expect(stops.map(\.identifier) == [42, 43, 44, 45])  // the number kept; the others numbered after it
            #expect(stops.map(\.name) == ["Der \"Tor\" Platz", "U Görlitzer Bahnhof", "Görlitzer Bahnhof, Gleis 1", "Eingang Nord"])
            #expect(stops[1].locationType == 1 && stops[3].locationType == 3)
            #expect(stops[3].latitude == nil && stops[1].latitude == 52.499)
            #expect(stops[1].normalizedName == "u gorlitzer bahnhof")

            let found = try context.fetch(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] %@", "u gorli")), as: Stop.self)
            #expect(found.map(\.stopID) == ["1025a"])

            let tor = stops[0]
            let times = tor.stopTimes
            #expect(times.map { $0.departureTime?.timeIntervalSince1970 } == [90_600, 32_700])
            #expect(times.map { $0.arrivalTime?.timeIntervalSince1970 } == [90_540, 32_700])  // 9:05:00 with an empty arrival
            let gleis = stops[2].stopTimes
            #expect(gleis.map { $0.departureTime?.timeIntervalSince1970 } == [29_010, nil])
            #expect(gleis.map { $0.arrivalTime?.timeIntervalSince1970 } == [28_980, nil])
        }
    }

    @Test("a bad row names its file and line; no output is created", arguments: [
        ("stops.txt", "stop_id,stop_lat,stop_lon\n1,52.5,13.4\n2,95,13.4\n", GTFSError(file: "stops.txt", line: 3, .invalidValue(column: "stop_lat", value: "95", expected: "a coordinate within ±90°"))),
        ("stops.txt", "stop_id,stop_name\n1,A\n1,B\n", GTFSError(file: "stops.txt", line: 3, .duplicateStop("1"))),
        ("stops.txt", "stop_name\nA\n", GTFSError(file: "stops.txt", line: 1, .missingColumn("stop_id"))),
        ("stop_times.txt", "stop_id,departure_time\n1,08:00:00\n7,08:01:00\n", GTFSError(file: "stop_times.txt", line: 3, .unknownStop("7"))),
        ("stop_times.txt", "stop_id,departure_time\n1,8:0:00\n", GTFSError(file: "stop_times.txt", line: 2, .invalidValue(column: "departure_time", value: "8:0:00", expected: "a time H:MM:SS"))),
        ("stop_times.txt", "stop_id,departure_time\n1,08:00:00,extra\n", GTFSError(file: "stop_times.txt", line: 2, .fieldCount(expected: 2, found: 3))),
        ("stop_times.txt", "stop_id,pickup_type\n1,9\n", GTFSError(file: "stop_times.txt", line: 2, .invalidValue(column: "pickup_type", value: "9", expected: "0 to 3"))),
        ("stop_times.txt", "stop_id,departure_time\n1,\"08:00:00\n", GTFSError(file: "stop_times.txt", line: 2, .unterminatedQuote)),
    ])
    func badRow(file: String, contents: String, expected: GTFSError) throws {
        let scratch = try ScratchDirectory()
        let stops = file == "stops.txt" ? contents : "stop_id,stop_lat,stop_lon\n1,52.5,13.4\n"
        let times = file == "stop_times.txt" ? contents : "stop_id,departure_time\n1,08:00:00\n"
        let feed = try scratch.feed("bad", stops: stops, stopTimes: times)
        let output = scratch.path("transit.arbor")
        #expect(throws: expected) { try GTFSImporter.importFeed(from: feed, into: output) }
        #expect(!FileManager.default.fileExists(atPath: output.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path) == ["bad"])  // no temporary left behind
    }

    @Test("--skip-bad-rows counts the rows it skipped and imports the rest")
    func skipBadRows() throws {
        let scratch = try ScratchDirectory()
        let feed = try scratch.feed("skip", stops: "stop_id,stop_lat,stop_lon\n1,52.5,13.4\n2,x,13.4\n",
                                    stopTimes: "stop_id,departure_time\n1,08:00:00\n2,08:01:00\n1,bad\n1,08:02:00\n")
        var options = GTFSImportOptions()
        options.skipBadRows = true
        let result = try GTFSImporter.importFeed(from: feed, into: scratch.path("t.arbor"), options: options)
        #expect(result.stops == 1 && result.stopTimes == 2 && result.skippedRows == 3)
        #expect(result.firstSkipped.map(\.line) == [3, 3, 4])
    }

    @Test("a failure after several saved batches leaves no file; an existing store stays as it was")
    func failureHalfWay() throws {
        let scratch = try ScratchDirectory()
        let good = (0..<50).map { "1,08:\(String(format: "%02d", $0)):00\n" }.joined()
        let feed = try scratch.feed("half", stops: "stop_id,stop_lat,stop_lon\n1,52.5,13.4\n", stopTimes: "stop_id,departure_time\n" + good + "9,08:00:00\n")
        var options = GTFSImportOptions()
        options.batchSize = 7
        let output = scratch.path("t.arbor")
        #expect(throws: GTFSError(file: "stop_times.txt", line: 52, .unknownStop("9"))) { try GTFSImporter.importFeed(from: feed, into: output, options: options) }
        #expect(!FileManager.default.fileExists(atPath: output.path))

        // Into an existing store: it keeps exactly what it had.
        let first = try scratch.feed("first", stops: "stop_id,stop_lat,stop_lon\n1,52.5,13.4\n", stopTimes: "stop_id,departure_time\n1,07:00:00\n")
        _ = try GTFSImporter.importFeed(from: first, into: output)
        let before = try Data(contentsOf: output)
        options.prefix = "b:"
        #expect(throws: GTFSError(file: "stop_times.txt", line: 52, .unknownStop("9"))) { try GTFSImporter.importFeed(from: feed, into: output, options: options) }
        #expect(try Data(contentsOf: output) == before)
    }

    @Test("several feeds in one store: prefixes keep IDs apart; a clash without one is refused")
    func severalFeeds() throws {
        let scratch = try ScratchDirectory()
        let a = try scratch.feed("a", stops: "stop_id,stop_name,stop_lat,stop_lon\n100,Alpha,52.5,13.4\n", stopTimes: "stop_id,departure_time\n100,08:00:00\n")
        let output = scratch.path("t.arbor")
        _ = try GTFSImporter.importFeed(from: a, into: output)
        var options = GTFSImportOptions()
        options.prefix = "b:"
        _ = try GTFSImporter.importFeed(from: a, into: output, options: options)
        #expect(throws: GTFSError(file: "stops.txt", line: 2, .stopAlreadyInStore("100"))) { try GTFSImporter.importFeed(from: a, into: output) }
        try withTransitStore(output) { context in
            var request = FetchRequest(entityName: "Stop")
            request.sortDescriptors = [ObjectSortDescriptor("identifier")]
            let stops = try context.fetch(request, as: Stop.self)
            #expect(stops.map(\.stopID) == ["100", "b:100"])
            #expect(stops.map(\.identifier) == [100, 101])
            #expect(stops.map(\.stopTimes.count) == [1, 1])
        }
    }

    @Test("the generator is deterministic, and its feed imports with U Görlitzer Bahnhof in it")
    func generator() throws {
        let scratch = try ScratchDirectory()
        try FeedGenerator(stops: 200, stopTimes: 3_000, seed: 7).write(to: scratch.path("one"))
        try FeedGenerator(stops: 200, stopTimes: 3_000, seed: 7).write(to: scratch.path("two"))
        for file in ["stops.txt", "stop_times.txt"] {
            #expect(try Data(contentsOf: scratch.path("one/" + file)) == (try Data(contentsOf: scratch.path("two/" + file))))
        }
        let result = try GTFSImporter.importFeed(from: scratch.path("one"), into: scratch.path("t.arbor"))
        #expect(result.stops == 200 && result.stopTimes == 3_000)
        try withTransitStore(scratch.path("t.arbor")) { context in
            let found = try context.fetch(try TransitQueries.nameRequest(prefix: "u gorli"), as: Stop.self)
            #expect(found.first?.name == "U Görlitzer Bahnhof")
            // The window query agrees with a scan of the stop times.
            let box = TransitQueries.box(around: FeedGenerator.center, meters: 3_000)
            let fetched = Set(try context.fetch(try TransitQueries.stopsRequest(in: box, departingBetween: 28_800, and: 30_000), as: Stop.self).map(\.stopID))
            let all = try context.fetch(TransitQueries.stopsRequest(in: box), as: Stop.self)
            let expected = Set(all.filter { stop in
                stop.stopTimes.contains { ($0.departureTime?.timeIntervalSince1970).map { (28_800...30_000).contains($0) } ?? false }
            }.map(\.stopID))
            #expect(fetched == expected)
            #expect(!expected.isEmpty)
        }
    }
}
