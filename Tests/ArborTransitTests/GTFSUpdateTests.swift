import Arbor
@testable import ArborTransit
import Foundation
import Testing

/// `arbor import gtfs --update`: a new edition of a feed, found by stop_id, gives the store a
/// fresh import of the edition would give.
@Suite("arbor import gtfs --update: a new edition of a feed")
struct GTFSUpdateTests {
    /// A feed as rows: stops (id, name, latitude, longitude) and stop times (stop, time, pickup).
    struct Feed {
        var stops: [(id: String, name: String, latitude: Double, longitude: Double)]
        var times: [(stop: String, seconds: Int, pickup: Int)]

        func write(_ scratch: ScratchDirectory, _ name: String) throws -> URL {
            let stopRows = stops.map { "\($0.id),\"\($0.name)\",\($0.latitude),\($0.longitude)" }
            let timeRows = times.enumerated().map { index, time in
                let clock = String(format: "%02d:%02d:%02d", time.seconds / 3600, (time.seconds / 60) % 60, time.seconds % 60)
                return "T\(index % 7),\(clock),\(clock),\(time.stop),\(index),\(time.pickup),0"
            }
            return try scratch.feed(name, stops: (["stop_id,stop_name,stop_lat,stop_lon"] + stopRows).joined(separator: "\n") + "\n",
                                    stopTimes: (["trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type"] + timeRows)
                                        .joined(separator: "\n") + "\n")
        }
    }

    /// Every stop of a store with its values and its stop times in order, by stop_id.
    static func contents(_ url: URL) throws -> [String: String] {
        try withTransitStore(url) { context in
            var result: [String: String] = [:]
            for stop in try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self) {
                let times = stop.stopTimes.map { "\(Int($0.departureTime?.timeIntervalSince1970 ?? -1))/\($0.pickupType)" }
                result[stop.stopID] = "\(stop.name)|\(stop.normalizedName)|\(stop.latitude ?? 0)|\(stop.longitude ?? 0)|\(stop.locationType)|\(times.joined(separator: ","))"
            }
            let listed = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).reduce(0) { $0 + $1.stopTimes.count }
            #expect(try context.count(for: FetchRequest(entityName: "StopTime")) == listed)
            return result
        }
    }

    static func edition1() -> Feed {
        var random = SplitMix64(seed: 3)
        var feed = Feed(stops: [], times: [])
        let names = ["Görlitzer Bahnhof", "Alexanderplatz", "Zoo"]
        for index in 0..<40 {
            let id = index % 3 == 0 ? "S\(index)" : "\(9000 + index)"
            let offset = Double(index) / 100
            feed.stops.append((id: id, name: names[index % 3] + " \(index)", latitude: 52.5 + offset, longitude: 13.4 + offset))
        }
        for _ in 0..<600 {
            let stop = feed.stops[Int(random.next() % 40)].id
            let seconds = 14_400 + Int(random.next() % 72_000)
            feed.times.append((stop: stop, seconds: seconds, pickup: Int(random.next() % 2)))
        }
        return feed
    }

    @Test("an edition edited every way: stops renamed, moved, removed, added; stop times added, removed, changed")
    func editedEveryWay() throws {
        let scratch = try ScratchDirectory()
        let first = Self.edition1()
        var second = first
        second.stops[1].name = "Umbenannt Straße"                         // renamed
        second.stops[2].latitude += 0.01                                  // moved
        let removed = [second.stops[4].id, second.stops[9].id]            // removed, with their times
        second.stops.removeAll { removed.contains($0.id) }
        second.times.removeAll { removed.contains($0.stop) }
        second.stops.append((id: "N1", name: "Neue Haltestelle", latitude: 52.6, longitude: 13.5))   // added
        second.stops.append((id: "9999", name: "Neu numeriert", latitude: 52.61, longitude: 13.51))
        second.times.append((stop: "N1", seconds: 30_000, pickup: 0))
        second.times.append((stop: second.stops[5].id, seconds: 31_000, pickup: 1))   // a time added to a stop
        if let index = second.times.firstIndex(where: { $0.stop == second.stops[6].id }) { second.times.remove(at: index) }  // removed
        if let index = second.times.firstIndex(where: { $0.stop == second.stops[7].id }) { second.times[index].seconds += 60 }  // changed
        // One stop's times in another order (an ordered relationship: a change).
        let reordered = second.stops[8].id
        let positions = second.times.indices.filter { second.times[$0].stop == reordered }
        if positions.count >= 2 { second.times.swapAt(positions[0], positions[1]) }

        let store = scratch.path("transit.arbor")
        _ = try GTFSImporter.importFeed(from: try first.write(scratch, "first"), into: store)
        let edition = try second.write(scratch, "second")
        var options = GTFSImportOptions()
        options.update = true
        let result = try GTFSImporter.importFeed(from: edition, into: store, options: options)
        // The stops whose values or timetable differ between the editions, worked out here.
        func timetable(_ feed: Feed, _ stop: String) -> [String] { feed.times.filter { $0.stop == stop }.map { "\($0.seconds)/\($0.pickup)" } }
        let changed = second.stops.filter { stop in
            guard let old = first.stops.first(where: { $0.id == stop.id }) else { return false }
            return old.name != stop.name || old.latitude != stop.latitude || timetable(first, stop.id) != timetable(second, stop.id)
        }.count
        #expect(changed >= 5)
        #expect(result.insertedStops == 2 && result.deletedStops == 2)
        #expect(result.updatedStops == changed, "\(result)")
        #expect(result.unchangedStops == first.stops.count - 2 - changed)
        let fresh = scratch.path("fresh.arbor")
        _ = try GTFSImporter.importFeed(from: edition, into: fresh)
        #expect(try Self.contents(store) == Self.contents(fresh))
        // The same edition again changes nothing.
        let again = try GTFSImporter.importFeed(from: edition, into: store, options: options)
        #expect(again.updatedStops == 0 && again.insertedStops == 0 && again.deletedStops == 0 && again.stopTimesWritten == 0)
        #expect(try Self.contents(store) == Self.contents(fresh))
    }

    @Test("without --update a stop already stored is an error naming it; with a prefix only that feed's stops change")
    func clashesAndPrefixes() throws {
        let scratch = try ScratchDirectory()
        let first = Self.edition1()
        let feed = try first.write(scratch, "first")
        let store = scratch.path("transit.arbor")
        _ = try GTFSImporter.importFeed(from: feed, into: store)
        #expect(throws: GTFSError(file: "stops.txt", line: 2, .stopAlreadyInStore(first.stops[0].id))) {
            try GTFSImporter.importFeed(from: feed, into: store)
        }
        // A second feed under a prefix, then an update of it that drops a stop: the first
        // feed's stops stay.
        var other = GTFSImportOptions()
        other.prefix = "hvv:"
        _ = try GTFSImporter.importFeed(from: feed, into: store, options: other)
        var smaller = first
        smaller.stops.removeLast()
        smaller.times.removeAll { $0.stop == first.stops.last?.id }
        other.update = true
        let result = try GTFSImporter.importFeed(from: try smaller.write(scratch, "smaller"), into: store, options: other)
        #expect(result.deletedStops == 1 && result.insertedStops == 0)
        let contents = try Self.contents(store)
        #expect(contents.count == first.stops.count * 2 - 1)
        #expect(contents[first.stops.last?.id ?? ""] != nil && contents["hvv:" + (first.stops.last?.id ?? "")] == nil)
    }

    @Test("a bad row in the new edition leaves the store as it was")
    func failedUpdateChangesNothing() throws {
        let scratch = try ScratchDirectory()
        let first = Self.edition1()
        let store = scratch.path("transit.arbor")
        _ = try GTFSImporter.importFeed(from: try first.write(scratch, "first"), into: store)
        let before = try Data(contentsOf: store)
        var broken = first
        broken.stops[3].name = "Changed"
        broken.times.append((stop: "nowhere", seconds: 1, pickup: 0))
        var options = GTFSImportOptions()
        options.update = true
        #expect(throws: GTFSError.self) { try GTFSImporter.importFeed(from: try broken.write(scratch, "broken"), into: store, options: options) }
        #expect(try Data(contentsOf: store) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted() == ["broken", "first", "transit.arbor"])
    }
}
