import Foundation

/// The GTFS subset the transit benchmark needs, read from a feed made by
/// `../shared/datasets/gen_transit.py` (plain CSV with quoted fields; the full, forgiving GTFS
/// importer is `arbor import gtfs`).
struct TransitFeed {
    struct Stop {
        var identifier: Int64
        var name: String
        var latitude: Double
        var longitude: Double
    }

    struct StopTime {
        var stop: Int32  // index into `stops`
        var arrival: Int32  // seconds after midnight (may pass 24:00:00)
        var departure: Int32
        var pickup: Int8
        var dropOff: Int8
    }

    var stops: [Stop] = []
    var stopTimes: [StopTime] = []

    init(directory: String, limit: Int) throws {
        var index: [Int64: Int32] = [:]
        try Self.rows(directory + "/stops.txt") { header, fields in
            guard let id = Int64(fields[header["stop_id"] ?? 0]), let lat = Double(fields[header["stop_lat"] ?? 2]),
                  let lon = Double(fields[header["stop_lon"] ?? 3]) else { throw BenchError.wrongAnswer("bad stop row \(fields)") }
            index[id] = Int32(stops.count)
            stops.append(Stop(identifier: id, name: fields[header["stop_name"] ?? 1], latitude: lat, longitude: lon))
            return true
        }
        try Self.rows(directory + "/stop_times.txt") { header, fields in
            guard let stopID = Int64(fields[header["stop_id"] ?? 3]), let stop = index[stopID],
                  let arrival = Self.seconds(fields[header["arrival_time"] ?? 1]),
                  let departure = Self.seconds(fields[header["departure_time"] ?? 2]) else {
                throw BenchError.wrongAnswer("bad stop_times row \(fields)")
            }
            let pickup = Int8(fields[header["pickup_type"] ?? 5]) ?? 0, dropOff = Int8(fields[header["drop_off_type"] ?? 6]) ?? 0
            stopTimes.append(StopTime(stop: stop, arrival: arrival, departure: departure, pickup: pickup, dropOff: dropOff))
            return stopTimes.count < limit
        }
    }

    static func seconds(_ text: String) -> Int32? {
        let parts = text.split(separator: ":")
        guard parts.count == 3, let h = Int32(parts[0]), let m = Int32(parts[1]), let s = Int32(parts[2]) else { return nil }
        return h * 3600 + m * 60 + s
    }

    /// Calls `body` with the header (name → column) and each row's fields until it returns false.
    static func rows(_ path: String, _ body: ([String: Int], [String]) throws -> Bool) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var header: [String: Int]?
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var bytes = data.makeIterator()
        var pending: UInt8?
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        while let byte = pending ?? bytes.next() {
            pending = nil
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    let next = bytes.next()
                    if next == UInt8(ascii: "\"") { field.append(byte) } else { quoted = false; pending = next }
                } else {
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): quoted = true
            case UInt8(ascii: ","): endField()
            case UInt8(ascii: "\r"): continue
            case UInt8(ascii: "\n"):
                endField()
                if let header {
                    if fields.count >= header.count, try !body(header, fields) { return }
                } else {
                    header = Dictionary(fields.enumerated().map { ($0.element.trimmingCharacters(in: .whitespaces), $0.offset) }, uniquingKeysWith: { a, _ in a })
                }
                fields.removeAll(keepingCapacity: true)
            default: field.append(byte)
            }
        }
        if !field.isEmpty || !fields.isEmpty, let header {
            endField()
            if fields.count >= header.count { _ = try body(header, fields) }
        }
    }
}

/// Query points: real stop coordinates, seeded.
struct QueryPoints {
    var points: [(latitude: Double, longitude: Double)]
    var windows: [Int32]  // window starts, seconds after midnight, 06:00–22:00
    var prefixes: [String]

    init(feed: TransitFeed, count: Int, seed: UInt64) {
        var random = SplitMix(state: seed)
        points = (0..<count).map { _ in
            let stop = feed.stops[Int(random.next() % UInt64(feed.stops.count))]
            return (stop.latitude, stop.longitude)
        }
        windows = (0..<count).map { _ in Int32(21600 + random.next() % UInt64(16 * 3600)) }
        prefixes = (0..<count).map { _ in
            let name = Self.fold(feed.stops[Int(random.next() % UInt64(feed.stops.count))].name)
            let length = 3 + Int(random.next() % 4)
            return String(name.prefix(length))
        }
    }

    /// The queries at `indices` (points, windows and prefixes alike).
    func slice(_ indices: Range<Int>) -> QueryPoints {
        var part = self
        part.points = Array(points[indices])
        part.windows = Array(windows[indices])
        part.prefixes = Array(prefixes[indices])
        return part
    }

    static func fold(_ text: String) -> String { text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }

    /// The objc.io article's box: half-size D meters → degrees, with D = distance * 1.1, R = 6371009.
    static func box(_ point: (latitude: Double, longitude: Double), meters: Double) -> (minLat: Double, maxLat: Double, minLon: Double, maxLon: Double) {
        let d = meters * 1.1, r = 6_371_009.0
        let meanLatitude = point.latitude * .pi / 180
        let deltaLatitude = d / r * 180 / .pi
        let deltaLongitude = d / (r * cos(meanLatitude)) * 180 / .pi
        return (point.latitude - deltaLatitude, point.latitude + deltaLatitude, point.longitude - deltaLongitude, point.longitude + deltaLongitude)
    }
}
