import Foundation

/// A deterministic generator of Berlin-shaped GTFS feeds (`stops.txt`, `stop_times.txt`) for the
/// demo and tests: stops dense in the centre and thinning outwards, names with umlauts and ß
/// (one is "U Görlitzer Bahnhof"), lines of nearby stops, trips from 04:00 to past midnight.
/// The same sizes and seed always give the same bytes.
public struct FeedGenerator {
    public var stops: Int
    public var stopTimes: Int
    public var seed: UInt64

    /// Alexanderplatz: the centre of the generated city.
    public static let center = (latitude: 52.521918, longitude: 13.413215)

    public init(stops: Int = 12_800, stopTimes: Int = 3_000_000, seed: UInt64 = 2026) {
        self.stops = max(stops, 1)
        self.stopTimes = max(stopTimes, 0)
        self.seed = seed
    }

    static let places = [
        "Alexanderplatz", "Görlitzer Bahnhof", "Kottbusser Tor", "Hermannplatz", "Schönleinstraße", "Mehringdamm",
        "Südstern", "Möckernbrücke", "Gleisdreieck", "Nollendorfplatz", "Wittenbergplatz", "Zoologischer Garten",
        "Ernst-Reuter-Platz", "Bismarckstraße", "Weißensee", "Prenzlauer Allee", "Schönhauser Allee", "Eberswalder Straße",
        "Senefelderplatz", "Rosa-Luxemburg-Platz", "Weinmeisterstraße", "Hackescher Markt", "Friedrichstraße", "Französische Straße",
        "Stadtmitte", "Spittelmarkt", "Märkisches Museum", "Heinrich-Heine-Straße", "Jannowitzbrücke", "Ostbahnhof",
        "Warschauer Straße", "Frankfurter Tor", "Samariterstraße", "Frankfurter Allee", "Lichtenberg", "Köpenick",
        "Treptower Park", "Neukölln", "Britz-Süd", "Rudow", "Tempelhof", "Südkreuz", "Schöneberg", "Innsbrucker Platz",
        "Bundesplatz", "Heidelberger Platz", "Rüdesheimer Platz", "Dahlem-Dorf", "Krumme Lanke", "Spandau", "Tegel",
        "Wedding", "Gesundbrunnen", "Pankow", "Müggelheim", "Grünau", "Zehlendorf", "Steglitz", "Lübars", "Straße des 17. Juni",
    ]
    static let prefixes = ["U ", "S ", "S+U ", "", "", "", "Bus "]
    static let suffixes = ["", "", " Bahnhof", " Nord", " Süd", "/Ecke Hauptstraße", " (Berlin)", " Schule", " Kirche", " Brücke"]

    /// Writes `stops.txt` and `stop_times.txt` into `directory` (created when missing).
    /// - Throws: file system errors.
    public func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SplitMix64(seed: seed)
        var coordinates: [(latitude: Double, longitude: Double)] = []
        var stopsText = "stop_id,stop_name,stop_lat,stop_lon,location_type\n"
        for index in 0..<stops {
            // Up to 18 km from the centre, somewhat denser inside (12,800 stops put about 60
            // within 800 m of the centre, as in Berlin).
            let kilometers = 18 * pow(random.unit(), 0.58)
            let angle = random.unit() * 2 * .pi
            let latitude = Self.center.latitude + kilometers * sin(angle) / 111.2
            let longitude = Self.center.longitude + kilometers * cos(angle) / (111.2 * cos(Self.center.latitude * .pi / 180))
            coordinates.append((latitude, longitude))
            let name = index == 0 ? "U Görlitzer Bahnhof"
                : Self.prefixes[Int(random.next() % UInt64(Self.prefixes.count))] + Self.places[Int(random.next() % UInt64(Self.places.count))]
                    + Self.suffixes[Int(random.next() % UInt64(Self.suffixes.count))]
            let quoted = name.contains(",") || name.contains("\"") ? "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : name
            stopsText += "\(900_000_000 + index),\(quoted),\(String(format: "%.6f", latitude)),\(String(format: "%.6f", longitude)),0\n"
        }
        try Data(stopsText.utf8).write(to: directory.appendingPathComponent("stops.txt"))
        try writeStopTimes(to: directory.appendingPathComponent("stop_times.txt"), coordinates: coordinates, random: &random)
    }

    /// Lines of 15–35 nearby stops; trips run a line end to end, 1–3 minutes between stops.
    private func writeStopTimes(to url: URL, coordinates: [(latitude: Double, longitude: Double)], random: inout SplitMix64) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = FileHandle(forWritingAtPath: url.path) else {
            throw CocoaError(.fileWriteUnknown)
        }
        defer { try? handle.close() }
        var lines: [[Int]] = []
        for _ in 0..<max(1, min(400, stops / 8)) {
            var line = [Int(random.next() % UInt64(stops))]
            let length = min(stops, 15 + Int(random.next() % 21))
            var visited: Set<Int> = Set(line)
            while line.count < length, let last = line.last {
                // The nearest of a few random candidates: lines wander through neighbourhoods.
                var best: Int?
                var bestDistance = Double.infinity
                for _ in 0..<24 {
                    let candidate = Int(random.next() % UInt64(stops))
                    guard !visited.contains(candidate) else { continue }
                    let dLat = coordinates[candidate].latitude - coordinates[last].latitude
                    let dLon = (coordinates[candidate].longitude - coordinates[last].longitude) * 0.609
                    let distance = dLat * dLat + dLon * dLon
                    if distance < bestDistance { best = candidate; bestDistance = distance }
                }
                guard let best else { break }
                visited.insert(best)
                line.append(best)
            }
            lines.append(line)
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        buffer.append(contentsOf: "trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type\n".utf8)
        var written = 0, trip = 0
        while written < stopTimes {
            let line = lines[trip % lines.count]
            var time = 4 * 3600 + Int(random.next() % UInt64(21 * 3600))  // 04:00 to 25:00
            for (sequence, stop) in line.enumerated() where written < stopTimes {
                let dwell = random.next() % 4 == 0 ? 30 : 0
                Self.appendNumber(trip + 1, to: &buffer); buffer.append(0x2C)
                Self.appendTime(time, to: &buffer); buffer.append(0x2C)
                Self.appendTime(time + dwell, to: &buffer); buffer.append(0x2C)
                Self.appendNumber(900_000_000 + stop, to: &buffer); buffer.append(0x2C)
                Self.appendNumber(sequence + 1, to: &buffer); buffer.append(0x2C)
                buffer.append(sequence == 0 ? 0x30 : (random.next() % 50 == 0 ? 0x31 : 0x30)); buffer.append(0x2C)
                buffer.append(sequence == line.count - 1 ? 0x31 : 0x30); buffer.append(0x0A)
                time += dwell + 60 + Int(random.next() % 121)
                written += 1
                if buffer.count > (1 << 20) - 128 {
                    handle.write(Data(buffer))
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            trip += 1
        }
        handle.write(Data(buffer))
    }

    static func appendNumber(_ value: Int, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: String(value).utf8)
    }

    static func appendTime(_ seconds: Int, to buffer: inout [UInt8]) {
        func two(_ value: Int) {
            buffer.append(UInt8(0x30 + value / 10))
            buffer.append(UInt8(0x30 + value % 10))
        }
        let hours = seconds / 3600
        if hours >= 100 { appendNumber(hours, to: &buffer) } else { two(hours) }
        buffer.append(0x3A)
        two(seconds / 60 % 60)
        buffer.append(0x3A)
        two(seconds % 60)
    }
}

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same feed everywhere.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// A uniform double in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
