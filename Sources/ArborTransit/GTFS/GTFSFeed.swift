import Foundation

/// A feed read into memory for an import: its stops in file order, and its stop times packed
/// (16 bytes each) and grouped by stop, so that they are stored stop by stop — every index
/// keyed by stop is then written in key order, and an import's cost grows with the feed, not
/// with the feed times the store.
struct GTFSFeed {
    var stops: [GTFSStop] = []
    /// Stop times in file order; `stop` is the position in `stops`.
    var times: [PackedStopTime] = []
    var skippedRows = 0
    var firstSkipped: [GTFSError] = []

    /// Reads `stops.txt` and `stop_times.txt`. Stop IDs get `options.prefix`; a stop whose ID
    /// is in `taken` is refused (`stopAlreadyInStore`), as are repeated stops and stop times of
    /// unknown stops; with `skipBadRows` such rows are counted and left out.
    /// - Throws: `GTFSError` naming the file and line of the first bad row.
    static func read(stopsURL: URL, timesURL: URL, options: GTFSImportOptions, taken: Set<String>,
                     progress: (GTFSImportProgress) -> Void) throws -> GTFSFeed {
        var feed = GTFSFeed()
        func skipOrThrow(_ error: GTFSError) throws {
            guard options.skipBadRows else { throw error }
            feed.skippedRows += 1
            if feed.firstSkipped.count < 20 { feed.firstSkipped.append(error) }
        }
        var positions = StopIDIndex()
        try GTFSImporter.readTable(stopsURL, progress: progress) { table in
            let reader = try GTFSRows.Stops(table: table)
            return { record in
                do {
                    var stop = try reader.parse(record.record)
                    stop.stopID = options.prefix + stop.stopID
                    guard positions.position(of: stop.stopID) == nil else {
                        throw GTFSError(file: table.file, line: record.line, .duplicateStop(stop.stopID))
                    }
                    guard !taken.contains(stop.stopID) else { throw GTFSError(file: table.file, line: record.line, .stopAlreadyInStore(stop.stopID)) }
                    _ = positions.insert(stop.stopID)
                    feed.stops.append(stop)
                } catch let error as GTFSError { try skipOrThrow(error) }
            }
        }
        // Stop IDs are looked up by their bytes: no prefixed string is made per row when the
        // feed has no prefix.
        let prefix = options.prefix
        // Room for the rows a file of this size holds at least (a row takes 30 bytes or more):
        // tens of millions of rows would otherwise be copied as the array doubles.
        if let size = (try? FileManager.default.attributesOfItem(atPath: timesURL.path)[.size] as? NSNumber)?.intValue {
            feed.times.reserveCapacity(min(size / 48, 1 << 28))
        }
        try GTFSImporter.readTable(timesURL, progress: progress) { table in
            let reader = try GTFSRows.StopTimes(table: table)
            return { record in
                do {
                    var (stopID, time) = try reader.parse(record)
                    guard let position = positions.position(prefix: prefix, id: stopID) else {
                        // Every stored id is valid UTF-8: only a missing one needs checking.
                        let id = String(decoding: stopID, as: UTF8.self)
                        guard id.utf8.elementsEqual(stopID) else { throw GTFSError(file: table.file, line: record.line, .invalidUTF8) }
                        throw GTFSError(file: table.file, line: record.line, .unknownStop(id))
                    }
                    time.stop = position
                    feed.times.append(time)
                } catch let error as GTFSError { try skipOrThrow(error) }
            }
        }
        return feed
    }

    /// The stop times grouped by stop, in file order within each stop (a counting sort).
    func grouped() -> StopTimeGroups {
        var starts = [Int](repeating: 0, count: stops.count + 1)
        for time in times { starts[Int(time.stop) + 1] += 1 }
        for stop in 0..<stops.count { starts[stop + 1] += starts[stop] }
        var next = starts
        var order = [Int32](repeating: 0, count: times.count)
        for (position, time) in times.enumerated() {
            order[next[Int(time.stop)]] = Int32(position)
            next[Int(time.stop)] += 1
        }
        return StopTimeGroups(order: order, starts: starts)
    }
}

/// Positions of a feed's stop times grouped by stop: the rows of stop `s` are
/// `times[order[starts[s]..<starts[s + 1]]]`.
struct StopTimeGroups {
    let order: [Int32]
    let starts: [Int]

    /// The positions of stop `stop`'s rows.
    func rows(of stop: Int) -> ArraySlice<Int32> { order[starts[stop]..<starts[stop + 1]] }

    /// A digest of stop `stop`'s rows (times and codes, in order): equal digests, equal rows
    /// (FNV-1a, 64 bits: stable across runs and machines, unlike `Hasher`).
    func digest(of stop: Int, in times: [PackedStopTime]) -> Int64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ value: UInt32) {
            for shift in stride(from: 0, to: 32, by: 8) {
                hash ^= UInt64((value >> UInt32(shift)) & 0xFF)
                hash = hash &* 0x0000_0100_0000_01B3
            }
        }
        for position in rows(of: stop) {
            let time = times[Int(position)]
            mix(UInt32(bitPattern: time.arrival))
            mix(UInt32(bitPattern: time.departure))
            mix(UInt32(time.pickup) | UInt32(time.dropOff) << 8)
        }
        return Int64(bitPattern: hash)
    }
}
