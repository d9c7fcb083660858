import Arbor
import Foundation

/// A stop or station of a GTFS feed (`stops.txt`), with a (longitude, latitude) index for
/// geo boxes and name indexes for prefixes, words and parts ([cd] folded, as users type them).
@Entity
public final class Stop: ManagedObject {
    #Index<Stop>([\.longitude, \.latitude])

    /// The numeric id: `stop_id` itself when it is a number, otherwise one assigned at import.
    @Index public var identifier: Int64
    /// The GTFS `stop_id` (with the feed's prefix, if any): unique in a store.
    @Unique public var stopID: String
    @Index(.normalized, .words, .substrings) public var name: String = ""
    /// `name` case- and diacritic-folded ("U Görlitzer Bahnhof" → "u gorlitzer bahnhof"), as the
    /// objc.io importer keeps it; `name BEGINSWITH[cd]` does not need it (the folded index serves it).
    @Index public var normalizedName: String = ""
    /// Degrees; nil for entrances and nodes without coordinates (location types 3 and 4).
    public var latitude: Double?
    public var longitude: Double?
    /// GTFS `location_type`: 0 stop or platform, 1 station, 2 entrance, 3 generic node, 4 boarding area.
    public var locationType: Int16 = 0
    /// Departures and arrivals at this stop, in feed order.
    @Relationship(inverse: \StopTime.stop, deleteRule: .cascade, ordered: true) public var stopTimes: [StopTime]
    /// A digest of this stop's rows of `stop_times.txt` as last imported: an update from a new
    /// edition of the feed replaces the stop times of the stops whose digest changed only.
    public var timetableDigest: Int64?
}

/// One arrival and departure of a trip at a stop (`stop_times.txt`), indexed by (stop,
/// departure) so that "a departure in the next 20 minutes" is a probe per stop.
@Entity
public final class StopTime: ManagedObject {
    #Index<StopTime>([\.stop, \.departureTime])

    /// The time as a `Date` that many seconds after 1970-01-01T00:00:00Z (08:00:00 is 28,800 s;
    /// 25:10:00, past midnight of the service day, is 90,600 s); nil when the feed leaves it empty.
    public var arrivalTime: Date?
    public var departureTime: Date?
    /// GTFS `pickup_type` / `drop_off_type`: 0 regular, 1 none, 2 phone the agency, 3 ask the driver.
    public var pickupType: Int16 = 0
    public var dropOffType: Int16 = 0
    @Relationship(optional: false) public var stop: Stop?
}

/// The transit store's model (DEVELOPERS.md), declared by its classes.
public enum TransitModel {
    public static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel(types: [Stop.self, StopTime.self])
    }

    /// The [cd] fold of a name, as stored in `normalizedName`.
    public static func normalize(_ name: String) -> String {
        name.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}
