import Arbor
@testable import ArborTransit
import Foundation

/// A scratch directory removed when the value is released.
final class ScratchDirectory {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("arbor-transit-\(UUID().uuidString)")
    init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(at: url) }

    /// Writes a feed directory with the given file contents (raw bytes, quirks included).
    func feed(_ name: String, stops: String, stopTimes: String) throws -> URL {
        let directory = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(stops.utf8).write(to: directory.appendingPathComponent("stops.txt"))
        try Data(stopTimes.utf8).write(to: directory.appendingPathComponent("stop_times.txt"))
        return directory
    }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// Opens a transit store and runs `body` on a background context.
func withTransitStore<T>(_ url: URL, _ body: (ManagedObjectContext) throws -> T) throws -> T {
    let container = try PersistentContainer(name: "transit", model: try TransitModel.make(), url: url)
    let context = container.newBackgroundContext()
    return try context.performAndWait { try body(context) }
}

/// A feed with every quirk GTFS allows: a byte-order mark, mixed CRLF and LF, quoted fields with
/// commas and doubled quotes, columns in another order, extra columns, header names with stray
/// spaces, no pickup/drop-off columns, empty optional values, times past 24:00:00, string ids,
/// a parent station, and no final newline.
enum QuirkyFeed {
    static let stops = "\u{FEFF} stop_name ,stop_id,wheelchair_boarding, stop_lat,stop_lon ,location_type,parent_station\r\n"
        + "\"U Görlitzer Bahnhof\",1025a,1,52.499,13.428,1,\r\n"
        + "\"Görlitzer Bahnhof, Gleis 1\",2900p6,,52.4991,13.4281,0,1025a\n"
        + "\"Der \"\"Tor\"\" Platz\",42,0,52.5,13.41,,\r\n"
        + "Eingang Nord,E1,,,,3,1025a\n"
    static let stopTimes = "trip_id,stop_sequence, departure_time ,arrival_time,stop_id,shape_dist_traveled\n"
        + "T1,1,08:00:00,08:00:00,1025a,0\r\n"
        + "T1,2,08:03:30,08:03:00,2900p6,\n"
        + "T1,3,25:10:00,25:09:00,42,1.5\r\n"
        + "T2,1,,,2900p6,\n"
        + "T2,2,9:05:00,,42,"
}
