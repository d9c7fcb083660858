import Arbor
import Foundation

/// A stop or station of a GTFS feed (`stops.txt`).
public final class Stop: ManagedObject {
    /// The numeric id: `stop_id` itself when it is a number, otherwise one assigned at import.
    @Attribute("identifier") public var identifier: Int64
    /// The GTFS `stop_id` (with the feed's prefix, if any): unique in a store.
    @Attribute("stopID") public var stopID: String
    @Attribute("name") public var name: String
    /// `name` case- and diacritic-folded ("U Görlitzer Bahnhof" → "u gorlitzer bahnhof"), as the
    /// objc.io importer keeps it; `name BEGINSWITH[cd]` does not need it (the folded index serves it).
    @Attribute("normalizedName") public var normalizedName: String
    /// Degrees; nil for entrances and nodes without coordinates (location types 3 and 4).
    @Attribute("latitude") public var latitude: Double?
    @Attribute("longitude") public var longitude: Double?
    /// GTFS `location_type`: 0 stop or platform, 1 station, 2 entrance, 3 generic node, 4 boarding area.
    @Attribute("locationType") public var locationType: Int16
    /// Departures and arrivals at this stop, in feed order.
    @Relationship("stopTimes") public var stopTimes: [StopTime]
    /// A digest of this stop's rows of `stop_times.txt` as last imported: an update from a new
    /// edition of the feed replaces the stop times of the stops whose digest changed only.
    @Attribute("timetableDigest") public var timetableDigest: Int64?
}

/// One arrival and departure of a trip at a stop (`stop_times.txt`).
public final class StopTime: ManagedObject {
    /// The time as a `Date` that many seconds after 1970-01-01T00:00:00Z (08:00:00 is 28,800 s;
    /// 25:10:00, past midnight of the service day, is 90,600 s); nil when the feed leaves it empty.
    @Attribute("arrivalTime") public var arrivalTime: Date?
    @Attribute("departureTime") public var departureTime: Date?
    /// GTFS `pickup_type` / `drop_off_type`: 0 regular, 1 none, 2 phone the agency, 3 ask the driver.
    @Attribute("pickupType") public var pickupType: Int16
    @Attribute("dropOffType") public var dropOffType: Int16
    @Relationship("stop") public var stop: Stop?
}

/// The transit store's model (DEVELOPERS.md): stops with a (longitude, latitude) index for geo
/// boxes, a folded name index for `BEGINSWITH[cd]`, and stop times indexed by (stop, departure)
/// so "a departure in the next 20 minutes" is a probe per stop.
public enum TransitModel {
    public static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                "Stop", class: Stop.self,
                attributes: [
                    AttributeDescription("identifier", .int64, indexed: true),
                    AttributeDescription("stopID", .string),
                    AttributeDescription("name", .string, defaultValue: .string("")),
                    AttributeDescription("normalizedName", .string, defaultValue: .string(""), indexed: true),
                    AttributeDescription("latitude", .double, optional: true),
                    AttributeDescription("longitude", .double, optional: true),
                    AttributeDescription("locationType", .int16, defaultValue: .int(0)),
                    AttributeDescription("timetableDigest", .int64, optional: true),
                ],
                relationships: [.toMany("stopTimes", "StopTime", inverse: "stop", ordered: true, deleteRule: .cascade)],
                // Names by prefix, by any word and by any part ([cd] folded, as users type them).
                indexes: [IndexDescription(["longitude", "latitude"]), IndexDescription(["name"], normalized: true),
                          IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)],
                uniquenessConstraints: [["stopID"]]),
            EntityDescription(
                "StopTime", class: StopTime.self,
                attributes: [
                    AttributeDescription("arrivalTime", .date, optional: true),
                    AttributeDescription("departureTime", .date, optional: true),
                    AttributeDescription("pickupType", .int16, defaultValue: .int(0)),
                    AttributeDescription("dropOffType", .int16, defaultValue: .int(0)),
                ],
                relationships: [.toOne("stop", "Stop", inverse: "stopTimes", optional: false)],
                indexes: [IndexDescription(["stop", "departureTime"])]),
        ])
    }

    /// The [cd] fold of a name, as stored in `normalizedName`.
    public static func normalize(_ name: String) -> String {
        name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}
