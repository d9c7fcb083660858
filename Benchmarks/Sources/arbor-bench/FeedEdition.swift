import Foundation

/// A new edition of a GTFS feed made from an old one: every `step`-th stop changed — the first
/// of each two renamed, the second with its stop times a minute later — for re-import
/// benchmarks. The feed is the plain CSV of `gen_transit.py` (no quoted stop_times fields).
enum FeedEdition {
    /// Writes the edition of the feed in `source` to `destination`; returns how many stops were
    /// renamed and how many had their times shifted (a stop without stop times is not changed by that).
    @discardableResult
    static func write(from source: String, to destination: String, step: Int = 100) throws -> (renamed: Int, shifted: Int) {
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        var renamed: Set<String> = [], shifted: Set<String> = []
        var stopsOut = ""
        var lineNumber = 0
        for line in try String(contentsOfFile: source + "/stops.txt", encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            defer { lineNumber += 1 }
            guard lineNumber > 0, !line.isEmpty, let comma = line.firstIndex(of: ",") else {
                if !line.isEmpty { stopsOut += line + "\n" }
                continue
            }
            let stopID = String(line[..<comma])
            if lineNumber % step == 0 {
                if (lineNumber / step) % 2 == 0 {
                    renamed.insert(stopID)
                    // The name is the second field, quoted or not: "Süd" goes before its end.
                    var fields = line.split(separator: ",", maxSplits: 1).map(String.init)
                    if fields.count == 2 {
                        if fields[1].hasPrefix("\""), let end = fields[1].dropFirst().firstIndex(of: "\"") {
                            fields[1].insert(contentsOf: " Süd", at: end)
                        } else if let end = fields[1].firstIndex(of: ",") {
                            fields[1].insert(contentsOf: " Süd", at: end)
                        }
                    }
                    stopsOut += fields.joined(separator: ",") + "\n"
                    continue
                }
                shifted.insert(stopID)
            }
            stopsOut += line + "\n"
        }
        try stopsOut.write(toFile: destination + "/stops.txt", atomically: false, encoding: .utf8)

        // stop_times.txt: trip_id,arrival_time,departure_time,stop_id,…; the shifted stops' times + 60 s.
        let data = try Data(contentsOf: URL(fileURLWithPath: source + "/stop_times.txt"))
        var output = Data()
        output.reserveCapacity(data.count + data.count / 50)
        var lines = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            defer { lines += 1 }
            let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            if lines > 0, fields.count >= 4, shifted.contains(String(decoding: fields[3], as: UTF8.self)) {
                var edited = fields.map { Data($0) }
                edited[1] = Data(later(fields[1]).utf8)
                edited[2] = Data(later(fields[2]).utf8)
                output.append(Data(edited.joined(separator: [UInt8(ascii: ",")])))
            } else {
                output.append(contentsOf: line)
            }
            output.append(UInt8(ascii: "\n"))
        }
        if output.last == UInt8(ascii: "\n"), data.last == UInt8(ascii: "\n") { output.removeLast() }
        try output.write(to: URL(fileURLWithPath: destination + "/stop_times.txt"))
        return (renamed.count, shifted.count)
    }

    /// A GTFS time a minute later.
    static func later(_ bytes: Data.SubSequence) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3 else { return text }
        let seconds = parts[0] * 3600 + parts[1] * 60 + parts[2] + 60
        return String(format: "%02d:%02d:%02d", seconds / 3600, (seconds / 60) % 60, seconds % 60)
    }
}
