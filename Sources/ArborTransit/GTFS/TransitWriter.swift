import Arbor
import Foundation

/// The store side of an import: a feed read into memory, written through batch requests —
/// a first import inserts it, an update (`GTFSImportOptions.update`) finds each stop by its ID
/// and changes only what the new edition changed.
struct TransitWriter {
    let context: ManagedObjectContext
    let options: GTFSImportOptions

    /// A stop as the store holds it.
    struct StoredStop {
        var id: ObjectID
        var stopID: String
        var identifier: Int64
        var name: String
        var latitude: Double?
        var longitude: Double?
        var locationType: Int16
        var digest: Int64?
    }

    func run(stopsURL: URL, timesURL: URL, progress: (GTFSImportProgress) -> Void) throws -> GTFSImportResult {
        let stored = try storedStops()
        let feed = try GTFSFeed.read(stopsURL: stopsURL, timesURL: timesURL, options: options,
                                     taken: options.update ? [] : Set(stored.keys), progress: progress)
        let groups = feed.grouped()
        var result = GTFSImportResult()
        result.stops = feed.stops.count
        result.stopTimes = feed.times.count
        result.skippedRows = feed.skippedRows
        result.firstSkipped = feed.firstSkipped
        let digests = feed.stops.indices.map { groups.digest(of: $0, in: feed.times) }
        var used = Set(stored.values.map(\.identifier))

        // The feed's stops that are no longer in it go, with their stop times (cascade).
        var feedIDs: Set<String> = []
        if options.update {
            feedIDs = Set(feed.stops.map(\.stopID))
            let departed = stored.values.filter { $0.stopID.hasPrefix(options.prefix) && !feedIDs.contains($0.stopID) }
            if !departed.isEmpty {
                let deleted = try context.execute(BatchDeleteRequest(objectIDs: departed.map(\.id)))
                result.deletedStops = deleted.count
                result.stopTimesDeleted += deleted.changes.deleted.count - deleted.count
                for stop in departed { used.remove(stop.identifier) }
            }
        }

        // Stops: new ones inserted, changed ones updated (found by stop ID), in one upsert.
        var writes: [Int] = []          // positions of the stops to write
        var timetables: [Int] = []      // positions of the stops whose stop times are (re)written
        var replaced: [ObjectID] = []   // stored stops whose old stop times go
        var fresh: [Int] = []
        for (position, stop) in feed.stops.enumerated() {
            guard let old = stored[stop.stopID] else {
                fresh.append(position)
                writes.append(position)
                timetables.append(position)
                continue
            }
            let changedValues = old.name != stop.name || old.latitude != stop.latitude || old.longitude != stop.longitude
                || old.locationType != Int16(stop.locationType)
            let changedTimes = old.digest != digests[position]
            if changedValues || changedTimes {
                writes.append(position)
                result.updatedStops += 1
            } else {
                result.unchangedStops += 1
            }
            if changedTimes {
                timetables.append(position)
                replaced.append(old.id)
            }
        }
        result.insertedStops = fresh.count
        let identifiers = Dictionary(uniqueKeysWithValues: zip(fresh, GTFSImporter.assignIdentifiers(fresh.map { feed.stops[$0].stopID }, used: used)))
        var next = 0
        var request = BatchInsertRequest(entityName: "Stop") { object in
            guard next < writes.count else { return true }
            let position = writes[next]
            next += 1
            let stop = feed.stops[position]
            if let identifier = identifiers[position] { object.setValue(.int(identifier), forKey: "identifier") }
            object.setValue(.string(stop.stopID), forKey: "stopID")
            object.setValue(.string(stop.name), forKey: "name")
            object.setValue(.string(TransitModel.normalize(stop.name)), forKey: "normalizedName")
            object.setValue(stop.latitude.map(AttributeValue.double) ?? .null, forKey: "latitude")
            object.setValue(stop.longitude.map(AttributeValue.double) ?? .null, forKey: "longitude")
            object.setValue(.int(Int64(stop.locationType)), forKey: "locationType")
            object.setValue(.int(digests[position]), forKey: "timetableDigest")
            return false
        }
        request.resultType = .objectIDs
        request.conflictRule = .update
        request.conflictConstraint = ["stopID"]
        let written = try context.execute(request).objectIDs ?? []
        var ids = [ObjectID?](repeating: nil, count: feed.stops.count)
        for (position, stop) in feed.stops.enumerated() { ids[position] = stored[stop.stopID]?.id }
        for (position, id) in zip(writes, written) { ids[position] = id }

        // Stop times: the old ones of changed timetables go, then the feed's are stored stop by stop.
        if !replaced.isEmpty {
            let old = try context.execute(BatchDeleteRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "stop IN %@", replaced)))
            result.stopTimesDeleted += old.count
        }
        result.stopTimesWritten = try storeTimes(of: timetables, feed: feed, groups: groups, stops: ids, progress: progress)
        return result
    }

    /// Inserts the stop times of the stops at `positions` (ascending), stop by stop, in batch
    /// inserts of up to `batchSize` rows; returns how many.
    private func storeTimes(of positions: [Int], feed: GTFSFeed, groups: StopTimeGroups, stops: [ObjectID?],
                            progress: (GTFSImportProgress) -> Void) throws -> Int {
        let total = positions.reduce(0) { $0 + groups.rows(of: $1).count }
        let cursor = TimetableCursor(positions: positions, groups: groups)
        let batchSize = max(options.batchSize, 1)
        var written = 0
        while !cursor.isAtEnd {
            cursor.stageBatch(limit: batchSize, from: feed.times)
            let request = BatchInsertRequest(entityName: "StopTime") { object in
                guard let (time, stop) = cursor.next() else { return true }
                object.setValue(Self.date(time.arrival), forKey: "arrivalTime")
                object.setValue(Self.date(time.departure), forKey: "departureTime")
                object.setValue(.int(Int64(time.pickup)), forKey: "pickupType")
                object.setValue(.int(Int64(time.dropOff)), forKey: "dropOffType")
                object.setObjectID(stops[stop], forKey: "stop")
                return false
            }
            written += try context.execute(request).count
            progress(GTFSImportProgress(file: "stop_times.txt → store", rows: written, bytesRead: written, totalBytes: max(total, 1)))
        }
        return written
    }

    /// A GTFS time as a `Date` that many seconds after 1970-01-01T00:00:00Z; nil when none.
    static func date(_ seconds: Int32) -> AttributeValue {
        seconds == PackedStopTime.none ? .null : .date(Date(timeIntervalSince1970: Double(seconds)))
    }

    /// Every stop of the store, by stop ID.
    private func storedStops() throws -> [String: StoredStop] {
        var request = FetchRequest(entityName: "Stop")
        request.returnsObjectsAsFaults = false
        var stops: [String: StoredStop] = [:]
        for stop in try context.fetch(request, as: Stop.self) {
            stops[stop.stopID] = StoredStop(id: stop.objectID, stopID: stop.stopID, identifier: stop.identifier, name: stop.name,
                                            latitude: stop.latitude, longitude: stop.longitude, locationType: stop.locationType,
                                            digest: stop.timetableDigest)
        }
        return stops
    }
}

/// Walks the rows of some stops' groups, stop by stop: a class, so that a batch insert's
/// handler moves it without a run-time exclusivity check per access (used by one import on one
/// thread).
final class TimetableCursor {
    private let positions: [Int]
    private let groups: StopTimeGroups
    @exclusivity(unchecked) private var stopIndex = 0
    @exclusivity(unchecked) private var row = 0
    /// The batch being inserted: its stop times with their stops' positions, gathered from
    /// the feed in one pass (reading them one by one from a feed of tens of millions of rows,
    /// in stop order while it is in file order, missed the cache at every row).
    @exclusivity(unchecked) private var staged: [(time: PackedStopTime, stop: Int32)] = []
    @exclusivity(unchecked) private var nextStaged = 0

    init(positions: [Int], groups: StopTimeGroups) {
        self.positions = positions
        self.groups = groups
        row = positions.first.map { groups.starts[$0] } ?? 0
        skipEmpty()
    }

    /// Whether every row has been staged.
    var isAtEnd: Bool { stopIndex >= positions.count }

    /// Gathers the next `limit` rows (fewer at the end) of `times` for `next()`.
    func stageBatch(limit: Int, from times: [PackedStopTime]) {
        staged.removeAll(keepingCapacity: true)
        nextStaged = 0
        while staged.count < limit && stopIndex < positions.count {
            staged.append((times[Int(groups.order[row])], Int32(positions[stopIndex])))
            row += 1
            skipEmpty()
        }
    }

    /// The next staged stop time and its stop's position; nil when the batch is done.
    func next() -> (time: PackedStopTime, stop: Int)? {
        guard nextStaged < staged.count else { return nil }
        defer { nextStaged += 1 }
        let (time, stop) = staged[nextStaged]
        return (time, Int(stop))
    }

    /// Moves past stops whose rows are all handed out.
    private func skipEmpty() {
        while stopIndex < positions.count && row >= groups.starts[positions[stopIndex] + 1] {
            stopIndex += 1
            if stopIndex < positions.count { row = groups.starts[positions[stopIndex]] }
        }
    }
}
