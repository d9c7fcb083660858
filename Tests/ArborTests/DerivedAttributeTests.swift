@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Derived attributes: computed at save from key paths, aggregates, functions and now()")
struct DerivedAttributeTests {
    func departure(_ context: ManagedObjectContext, _ station: RuledStation?, minutes: Int, at seconds: Double) -> RuledDeparture {
        let departure = RuledDeparture(context: context)
        departure.minutes = minutes
        departure.time = Date(timeIntervalSince1970: seconds)
        departure.station = station
        return departure
    }

    @Test("aggregates, key paths and functions are computed at save, and kept up to date as members move")
    func computedAtSave() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        let (northID, southID) = try context.performAndWait {
            let north = RuledStation(context: context)
            north.name = "Nördliche Straße"
            north.code = "n1"
            let south = RuledStation(context: context)
            south.name = "Süd"
            let a = departure(context, north, minutes: 5, at: 100)
            let b = departure(context, north, minutes: 7, at: 300)
            _ = departure(context, south, minutes: 1, at: 50)
            #expect(north.departureCount == 0)  // not yet: derived values are computed by the save
            north.code = "N1"
            try context.save()
            #expect(north.departureCount == 2)
            #expect(north.totalMinutes == 12)
            #expect(north.lastDeparture == Date(timeIntervalSince1970: 300))
            #expect(north.searchName == "nordliche strasse")
            #expect(north.modified != nil)
            #expect(a.stationName == "Nördliche Straße")
            #expect(a.stationCode == "N1")
            #expect(south.departureCount == 1)

            // A departure moves: both stations change.
            b.station = south
            a.minutes = 10
            try context.save()
            #expect(north.departureCount == 1)
            #expect(north.totalMinutes == 10)
            #expect(north.lastDeparture == Date(timeIntervalSince1970: 100))
            #expect(south.departureCount == 2)
            #expect(south.totalMinutes == 8)
            #expect(b.stationName == "Süd")
            return (north.objectID, south.objectID)
        }
        // A station renamed in another context: its departures, never loaded there, follow.
        let other = stack.context()
        try other.performAndWait {
            let south = try #require(try other.existingObject(with: southID) as? RuledStation)
            south.name = "Südkreuz"
            try other.save()
        }
        try stack.reopen()
        let reopened = stack.context()
        try reopened.performAndWait {
            let south = try #require(try reopened.existingObject(with: southID) as? RuledStation)
            #expect(south.departures.allSatisfy { $0.stationName == "Südkreuz" })
            #expect(south.searchName == "sudkreuz")
            let north = try #require(try reopened.existingObject(with: northID) as? RuledStation)
            // Deleting the last departure: the count drops to zero, the maximum becomes nil.
            reopened.delete(north.departures[0])
            try reopened.save()
            #expect(north.departureCount == 0)
            #expect(north.totalMinutes == 0)
            #expect(north.lastDeparture == nil)
            // Derived values are stored: fetched and sorted by like any attribute.
            var request = FetchRequest(entityName: "RuledStation", predicate: try ObjectPredicate(format: "departureCount >= 1"))
            request.sortDescriptors = [ObjectSortDescriptor("departureCount", ascending: false)]
            let found = try reopened.fetch(request, as: RuledStation.self)
            #expect(found.map(\.objectID) == [southID])
        }
    }

    @Test("setting a derived attribute is refused at save")
    func setIsRefused() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            let station = RuledStation(context: context)
            station.name = "a"
            station.departureCount = 7
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.map(\.kind) == [.derivedAttributeSet(derivation: "departures.@count")])
            #expect(error.failures.first?.key == "departureCount")
        }
    }

    @Test("now() is the save's time, set when the row is written")
    func nowIsTheSaveTime() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            let before = Date()
            let station = RuledStation(context: context)
            station.name = "a"
            try context.save()
            let first = try #require(station.modified)
            #expect(first >= before.addingTimeInterval(-1) && first <= Date())
            Thread.sleep(forTimeInterval: 0.01)
            station.latitude = 3
            try context.save()
            #expect(try #require(station.modified) > first)
        }
    }

    @Test("batch requests that would leave derived values stale are refused, naming them; others run")
    func batchRequests() throws {
        let stack = try TestStack(model: try RuledModel.make())
        let context = stack.context()
        try context.performAndWait {
            let station = RuledStation(context: context)
            station.name = "a"
            _ = departure(context, station, minutes: 1, at: 1)
            try context.save()

            let insert = BatchInsertRequest(entityName: "RuledDeparture", objects: [["minutes": 1]])
            #expect(throws: StoreError.self) { try context.execute(insert) }
            let update = BatchUpdateRequest(entityName: "RuledDeparture", propertiesToUpdate: ["minutes": .value(.int(3))])
            do {
                _ = try context.execute(update)
                Issue.record("a batch update of a summed attribute ran")
            } catch let error as StoreError {
                #expect(error.description.contains("RuledStation.totalMinutes (departures.@sum.minutes)"))
            }
            #expect(throws: StoreError.self) { try context.execute(BatchDeleteRequest(entityName: "RuledDeparture")) }
            // now() on the station: any batch update of stations would leave it stale.
            let latitude = BatchUpdateRequest(entityName: "RuledStation", propertiesToUpdate: ["latitude": .value(.double(1))])
            #expect(throws: StoreError.self) { try context.execute(latitude) }
            let times = BatchUpdateRequest(entityName: "RuledDeparture", propertiesToUpdate: ["time": .value(.date(Date(timeIntervalSince1970: 9)))])
            #expect(throws: StoreError.self) { try context.execute(times) }  // @max.time reads it
        }
        // Without derived attributes, batch requests run as before.
        let plain = try TestStack()
        let plainContext = plain.context()
        try plainContext.performAndWait {
            _ = try plainContext.execute(BatchUpdateRequest(entityName: "Stop", propertiesToUpdate: ["name": .value(.string("x"))]))
        }
    }

    @Test("the in-memory store computes the same values")
    func inMemory() throws {
        let stack = try TestStack(model: try RuledModel.make(), inMemory: true)
        let context = stack.context()
        try context.performAndWait {
            let station = RuledStation(context: context)
            station.name = "Ä"
            _ = departure(context, station, minutes: 2, at: 10)
            _ = departure(context, station, minutes: 3, at: 20)
            try context.save()
            #expect(station.departureCount == 2)
            #expect(station.totalMinutes == 5)
            #expect(station.searchName == "a")
        }
    }
}
