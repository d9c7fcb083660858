import Arbor
import Foundation

/// The transit app's questions as fetch requests (DEVELOPERS.md's scenario).
public enum TransitQueries {
    public typealias Box = (minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double)

    /// The box around `point` with half-size `meters`, as the objc.io article computes it:
    /// D = distance × 1.1, R = 6,371,009 m.
    public static func box(around point: (latitude: Double, longitude: Double), meters: Double) -> Box {
        let d = meters * 1.1, r = 6_371_009.0
        let deltaLatitude = d / r * 180 / .pi
        let deltaLongitude = d / (r * cos(point.latitude * .pi / 180)) * 180 / .pi
        return (point.latitude - deltaLatitude, point.latitude + deltaLatitude, point.longitude - deltaLongitude, point.longitude + deltaLongitude)
    }

    static func boxPredicate(_ box: Box) -> ObjectPredicate {
        PredicateExpression.key("longitude").between(.double(box.minLongitude), .double(box.maxLongitude))
            && PredicateExpression.key("latitude").between(.double(box.minLatitude), .double(box.maxLatitude))
    }

    /// Stops in `box`: a range scan of the (longitude, latitude) index, latitude checked in the index.
    public static func stopsRequest(in box: Box) -> FetchRequest {
        var request = FetchRequest(entityName: "Stop", predicate: boxPredicate(box))
        request.returnsObjectsAsFaults = false
        return request
    }

    /// Stops in `box` with a departure between two times (seconds after midnight): a semi-join
    /// probing the (stop, departureTime) index per candidate stop.
    public static func stopsRequest(in box: Box, departingBetween start: Int, and end: Int) throws -> FetchRequest {
        var request = stopsRequest(in: box)
        let window = try ObjectPredicate(format: "SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count != 0",
                                         Date(timeIntervalSince1970: Double(start)), Date(timeIntervalSince1970: Double(end)))
        request.predicate = .and([boxPredicate(box), window])
        return request
    }

    /// Stops whose name starts with `prefix`, ignoring case and diacritics (the folded name index).
    public static func nameRequest(prefix: String) throws -> FetchRequest {
        var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] %@", prefix))
        request.sortDescriptors = [ObjectSortDescriptor("name")]
        request.returnsObjectsAsFaults = false
        return request
    }

    /// Stops by free text, the seed's `SearchTerm` search without a hand-kept entity: every word
    /// of `words` begins some word of the name (`WORDSBEGINWITH[cd]`, served by the words index
    /// on `Stop.name`), sorted by name.
    public static func wordsRequest(_ words: String) throws -> FetchRequest {
        var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name WORDSBEGINWITH[cd] %@", words))
        request.sortDescriptors = [ObjectSortDescriptor("name")]
        request.returnsObjectsAsFaults = false
        return request
    }

    /// Stops whose name contains `text` anywhere (`CONTAINS[cd]`, served by the substrings
    /// index on `Stop.name`), sorted by name.
    public static func containsRequest(_ text: String) throws -> FetchRequest {
        var request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name CONTAINS[cd] %@", text))
        request.sortDescriptors = [ObjectSortDescriptor("name")]
        request.returnsObjectsAsFaults = false
        return request
    }

    /// The first departure at `stop` at or after `time` (seconds after midnight).
    public static func nextDeparture(at stop: Stop, from time: Int, context: ManagedObjectContext) throws -> Int? {
        var request = FetchRequest(entityName: "StopTime",
                                   predicate: try ObjectPredicate(format: "stop == %@ AND departureTime >= %@", stop, Date(timeIntervalSince1970: Double(time))))
        request.sortDescriptors = [ObjectSortDescriptor("departureTime")]
        request.fetchLimit = 1
        return try context.fetch(request, as: StopTime.self).first?.departureTime.map { Int($0.timeIntervalSince1970) }
    }

    /// The stops within `meters` of `point` (great-circle distance), nearest first.
    public static func within<Stops: Sequence<Stop>>(_ meters: Double, of point: (latitude: Double, longitude: Double),
                                                     _ stops: Stops) -> [(stop: Stop, meters: Double)] {
        stops.compactMap { stop -> (Stop, Double)? in
            guard let latitude = stop.latitude, let longitude = stop.longitude else { return nil }
            let distance = self.distance(point, (latitude, longitude))
            return distance <= meters ? (stop, distance) : nil
        }.sorted { $0.1 < $1.1 }
    }

    /// Haversine distance in meters.
    public static func distance(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double)) -> Double {
        let r = 6_371_009.0, toRadians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * toRadians, dLon = (b.longitude - a.longitude) * toRadians
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(a.latitude * toRadians) * cos(b.latitude * toRadians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, sqrt(h)))
    }

    /// Seconds after midnight as `HH:MM` (hours may pass 24).
    public static func clock(_ seconds: Int) -> String { String(format: "%02d:%02d", seconds / 3600, seconds / 60 % 60) }
}
