@testable import Arbor
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Random batch updates, deletes, upserts and inserts against a plain reference model of the
/// transit graph: after every request the store is opened afresh and must hold exactly the
/// reference's graph, with every index, foreign-key and join entry agreeing with the rows.
@Suite("Batch requests against a reference model, reopened after each")
struct BatchDifferentialTests {
    struct RefStop: Equatable, CustomStringConvertible {
        var identifier: Int64
        var name: String
        var latitude: Double
        var longitude: Double
        var normalizedName: String?
        var parent: String?  // its stopID
        var description: String { "\(identifier) \(name) \(latitude) \(normalizedName ?? "nil") parent=\(parent ?? "-")" }
    }

    struct RefTime: Equatable {
        var stop: String
        var departure: Int
        var pickup: Int16
    }

    /// The reference: stops by stopID, stop times by ID, each stop's times in order.
    struct Reference {
        var stops: [String: RefStop] = [:]
        var times: [ObjectID: RefTime] = [:]
        var order: [String: [ObjectID]] = [:]

        /// Whether identifiers and stopIDs are unique (stopIDs are the keys).
        var isValid: Bool { Set(stops.values.map(\.identifier)).count == stops.count }

        mutating func deleteStops(_ doomed: Set<String>) {
            for stopID in doomed {
                for time in order[stopID] ?? [] { times[time] = nil }
                order[stopID] = nil
                stops[stopID] = nil
            }
            for (stopID, stop) in stops where stop.parent.map(doomed.contains) == true { stops[stopID]?.parent = nil }
        }

        mutating func deleteTimes(_ doomed: Set<ObjectID>) {
            for id in doomed {
                guard let time = times.removeValue(forKey: id) else { continue }
                order[time.stop]?.removeAll { $0 == id }
            }
        }
    }

    static let names = ["Zoo", "zoo", "Görlitzer", "Straße", "Alex", "Ålex", "Bahnhof"]

    final class Run {
        let model: ManagedObjectModel
        let file = SimulatedFile()
        var reference = Reference()
        var random: SplitMix64
        var nextNumber = 0
        var log: [String] = []

        init(seed: UInt64) throws {
            model = try ManagedObjectModel(entities: Fixtures.transitEntities())
            random = SplitMix64(seed: seed)
        }

        func below(_ n: Int) -> Int { Int(random.next() % UInt64(max(n, 1))) }
        func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

        func open() throws -> (PersistentStore, ManagedObjectContext) {
            let store = try PersistentStore(file: file, model: model)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.add(store)
            return (store, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
        }

        /// A predicate on stops with its meaning on the reference.
        func stopPredicate() -> (ObjectPredicate?, (String, RefStop) -> Bool) {
            switch below(5) {
            case 0:
                let limit = Int64(below(40))
                return (try? ObjectPredicate(format: "identifier < %@", limit), { $1.identifier < limit })
            case 1:
                let prefix = pick(["z", "g", "a", "s"])
                return (try? ObjectPredicate(format: "name BEGINSWITH[cd] %@", prefix),
                        { ValueOrder.fold($1.name, [.caseInsensitive, .diacriticInsensitive]).hasPrefix(prefix) })
            case 2:
                let chosen = Set((0..<below(12)).map { _ in "S\(below(nextNumber + 5))" })
                return (try? ObjectPredicate(format: "stopID IN %@", Array(chosen)), { stopID, _ in chosen.contains(stopID) })
            case 3:
                let latitude = 53.0 + Double(below(4))
                return (try? ObjectPredicate(format: "latitude >= %@ AND parent == nil", latitude), { $1.latitude >= latitude && $1.parent == nil })
            default: return (nil, { _, _ in true })
            }
        }

        func stopID(_ stop: String, in context: ManagedObjectContext) throws -> ObjectID? {
            try context.fetchObjectIDs(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopID == %@", stop))).first
        }

        /// One random request, applied to the store and the reference.
        func step() throws {
            let (store, context) = try open()
            try context.performAndWait {
                // Growing more often than shrinking, so the graph stays of some size.
                switch below(12) {
                case 0, 1: try updateStops(context)
                case 2, 3: try updateTimes(context)
                case 4: try deleteStops(context)
                case 5: try deleteTimes(context)
                case 6, 7, 8: try upsertStops(context)
                default: try insertTimes(context)
                }
            }
            _ = store
        }

        /// Runs `request` when the reference says it succeeds, else checks it fails.
        func expect<R>(valid: Bool, _ description: String, _ request: () throws -> R) throws -> R? {
            log.append(description + (valid ? "" : " (refused)"))
            guard valid else {
                #expect(throws: ValidationError.self, "\(description)") { _ = try request() }
                return nil
            }
            return try request()
        }

        func updateStops(_ context: ManagedObjectContext) throws {
            let (predicate, matches) = stopPredicate()
            var properties: [String: BatchUpdateRequest.Value] = [:]
            let name = pick(BatchDifferentialTests.names)
            let parent = below(3) == 0 && !reference.stops.isEmpty ? pick(Array(reference.stops.keys).sorted()) : nil
            let choices = [below(2) == 0, below(2) == 0, below(3) == 0, below(4) == 0, below(3) == 0]
            if choices[0] { properties["name"] = .value(.string(name)) }
            if choices[1] { properties["latitude"] = .expression(try ObjectExpression(format: "latitude + 0.5")) }
            if choices[2] { properties["normalizedName"] = .value(below(2) == 0 ? .null : .string("n")) }
            if choices[3] { properties["parent"] = .object(try parent.flatMap { try stopID($0, in: context) }) }
            // A shift keeps identifiers apart; one constant for several rows breaks their uniqueness.
            let shift = below(2) == 0
            if choices[4] { properties["identifier"] = shift ? .expression(try ObjectExpression(format: "identifier + 7")) : .value(.int(100)) }
            var next = reference
            for (stopID, stop) in reference.stops where matches(stopID, stop) {
                if choices[0] { next.stops[stopID]?.name = name }
                if choices[1] { next.stops[stopID]?.latitude = stop.latitude + 0.5 }
                if choices[2] { next.stops[stopID]?.normalizedName = properties["normalizedName"].flatMap { if case .value(.string(let s)) = $0 { return s } else { return nil } } }
                if choices[3] { next.stops[stopID]?.parent = parent }
                if choices[4] { next.stops[stopID]?.identifier = shift ? stop.identifier + 7 : 100 }
            }
            let request = BatchUpdateRequest(entityName: "Stop", predicate: predicate, propertiesToUpdate: properties)
            if try expect(valid: next.isValid, "update stops \(predicate?.description ?? "all") \(properties.keys.sorted())", { try context.execute(request) }) != nil {
                reference = next
            }
        }

        func updateTimes(_ context: ManagedObjectContext) throws {
            let pickup = Int16(below(2))
            var properties: [String: BatchUpdateRequest.Value] = ["departureTime": .expression(try ObjectExpression(format: "departureTime + 60"))]
            let target = below(3) == 0 && !reference.stops.isEmpty ? pick(Array(reference.stops.keys).sorted()) : nil
            if let target { properties["stop"] = .object(try stopID(target, in: context)) }
            let request = BatchUpdateRequest(entityName: "StopTime", predicate: try ObjectPredicate(format: "pickupType == %@", Int64(pickup)),
                                             propertiesToUpdate: properties)
            log.append("update times pickup \(pickup) → \(target ?? "same stop")")
            _ = try context.execute(request)
            // Rows are written in key order: moved times join their new stop's list in that order.
            for id in reference.times.keys.sorted(by: { $0.primaryKey < $1.primaryKey }) where reference.times[id]?.pickup == pickup {
                reference.times[id]?.departure += 60
                if let target, let old = reference.times[id]?.stop, old != target {
                    reference.order[old]?.removeAll { $0 == id }
                    reference.order[target, default: []].append(id)
                    reference.times[id]?.stop = target
                }
            }
        }

        func deleteStops(_ context: ManagedObjectContext) throws {
            var (predicate, matches) = stopPredicate()
            if predicate == nil, below(4) > 0 { (predicate, matches) = stopPredicate() }
            let doomed = Set(reference.stops.filter { matches($0.key, $0.value) }.keys)
            log.append("delete stops \(predicate?.description ?? "all") (\(doomed.count))")
            let result = try context.execute(BatchDeleteRequest(entityName: "Stop", predicate: predicate))
            #expect(result.count == doomed.count)
            reference.deleteStops(doomed)
        }

        func deleteTimes(_ context: ManagedObjectContext) throws {
            let ids = reference.times.keys.filter { _ in below(6) == 0 }
            log.append("delete \(ids.count) times")
            #expect(try context.execute(BatchDeleteRequest(objectIDs: Array(ids))).count == ids.count)
            reference.deleteTimes(Set(ids))
        }

        func upsertStops(_ context: ManagedObjectContext) throws {
            var objects: [[String: Any]] = []
            var next = reference
            let rule: BatchInsertRequest.ConflictRule = below(2) == 0 ? .update : .ignore
            for _ in 0..<(1 + below(8)) {
                let number = below(nextNumber + 6)
                let stopID = "S\(number)"
                let name = pick(BatchDifferentialTests.names)
                let latitude = 52.0 + Double(below(5))
                if next.stops[stopID] == nil {
                    objects.append(["identifier": Int64(number) * 100, "stopID": stopID, "name": name, "latitude": latitude, "longitude": 13.0])
                    next.stops[stopID] = RefStop(identifier: Int64(number) * 100, name: name, latitude: latitude, longitude: 13.0)
                    next.order[stopID] = []
                    nextNumber = max(nextNumber, number + 1)
                } else {
                    objects.append(["stopID": stopID, "name": name, "latitude": latitude])
                    if rule == .update {
                        next.stops[stopID]?.name = name
                        next.stops[stopID]?.latitude = latitude
                    }
                }
            }
            var request = BatchInsertRequest(entityName: "Stop", objects: objects)
            request.conflictRule = rule
            request.conflictConstraint = ["stopID"]
            if try expect(valid: next.isValid, "upsert \(rule) \(objects.map { $0["stopID"] as? String ?? "" })", { try context.execute(request) }) != nil {
                reference = next
            }
        }

        func insertTimes(_ context: ManagedObjectContext) throws {
            guard !reference.stops.isEmpty else { return }
            let stops = (0..<(1 + below(4))).map { _ in pick(Array(reference.stops.keys).sorted()) }
            var objects: [[String: Any]] = []
            var planned: [RefTime] = []
            for stop in stops {
                guard let id = try stopID(stop, in: context) else { continue }
                for _ in 0..<(1 + below(3)) {
                    let time = RefTime(stop: stop, departure: 21_600 + below(600) * 60, pickup: Int16(below(2)))
                    objects.append(["departureTime": Date(timeIntervalSince1970: Double(time.departure)), "arrivalTime": Date(timeIntervalSince1970: 0),
                                    "pickupType": Int64(time.pickup), "stop": id])
                    planned.append(time)
                }
            }
            var request = BatchInsertRequest(entityName: "StopTime", objects: objects)
            request.resultType = .objectIDs
            log.append("insert \(objects.count) times")
            for (id, time) in zip(try context.execute(request).objectIDs ?? [], planned) {
                reference.times[id] = time
                reference.order[time.stop, default: []].append(id)
            }
        }

        /// The store, opened afresh, against the reference.
        func check() throws {
            let (store, context) = try open()
            #expect(store.checkIntegrity().isSound)
            #expect(try store.btree().consistencyProblems() == [], "\(log.suffix(3))")
            try context.performAndWait {
                let stops = try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
                var seen: [String: RefStop] = [:]
                for stop in stops {
                    seen[stop.stopID] = RefStop(identifier: stop.identifier, name: stop.name, latitude: stop.latitude, longitude: stop.longitude,
                                                normalizedName: stop.normalizedName, parent: stop.parent?.stopID)
                    let times = stop.stopTimes.map(\.objectID)
                    #expect(times == (reference.order[stop.stopID] ?? []), "times of \(stop.stopID) after \(log.suffix(3))")
                }
                #expect(seen == reference.stops, "stops after \(log.suffix(3))")
                let times = try context.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self)
                let stored = Dictionary(uniqueKeysWithValues: times.map {
                    ($0.objectID, RefTime(stop: $0.stop?.stopID ?? "", departure: Int($0.departureTime.timeIntervalSince1970), pickup: $0.pickupType))
                })
                #expect(stored == reference.times, "stop times after \(log.suffix(3))")
            }
        }
    }

    @Test("random batch requests, each checked on a reopened store", arguments: 0..<4)
    func differential(seed: UInt64) throws {
        let run = try Run(seed: 0xBA7C + seed)
        for _ in 0..<80 {
            try run.step()
            try run.check()
        }
        // Refused requests (broken uniqueness) are checked to leave the reference's state too.
        #expect(run.reference.stops.count > 5, "\(run.log)")
    }
}
