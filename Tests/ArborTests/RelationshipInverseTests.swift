import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Relationships: inverses stay in step, in memory and across reopen")
struct RelationshipInverseTests {
    @Test("one-to-many ordered: setting the to-one appends to the inverse, keeps order, moves between owners")
    func orderedOneToMany() throws {
        let stack = try TestStack()
        let context = stack.context()
        let (stopA, stopB): (ObjectID, ObjectID) = try context.performAndWait {
            let a = makeStop(context, 1), b = makeStop(context, 2)
            var times: [StopTime] = []
            for minute in 0..<5 {
                let time = StopTime(context: context)
                time.arrivalTime = Date(timeIntervalSince1970: Double(minute * 60))
                time.departureTime = time.arrivalTime
                time.stop = a
                times.append(time)
            }
            #expect(a.stopTimes.map(\.objectID) == times.map(\.objectID))
            try context.save()
            // Move one to b; reorder a's list.
            times[2].stop = b
            #expect(a.stopTimes.map(\.arrivalTime) == [0, 60, 180, 240].map { Date(timeIntervalSince1970: $0) })
            #expect(b.stopTimes.map(\.objectID) == [times[2].objectID])
            a.stopTimes = [times[4], times[0], times[3], times[1]]
            #expect(times[4].stop === a)
            try context.save()
            return (a.objectID, b.objectID)
        }
        try stack.reopen()
        let fresh = stack.context()
        try fresh.performAndWait {
            let a = try #require(try fresh.existingObject(with: stack.id(stopA)) as? Stop)
            let b = try #require(try fresh.existingObject(with: stack.id(stopB)) as? Stop)
            #expect(a.stopTimes.map(\.arrivalTime.timeIntervalSince1970) == [240, 0, 180, 60])
            #expect(b.stopTimes.map(\.arrivalTime.timeIntervalSince1970) == [120])
            // Insert in the middle and append, then check the stored order again.
            let early = StopTime(context: fresh)
            early.arrivalTime = Date(timeIntervalSince1970: 1)
            early.departureTime = early.arrivalTime
            a.insert(early, at: 1, inRelationship: "stopTimes")
            let late = StopTime(context: fresh)
            late.arrivalTime = Date(timeIntervalSince1970: 999)
            late.departureTime = late.arrivalTime
            late.stop = a
            #expect(a.stopTimes.map(\.arrivalTime.timeIntervalSince1970) == [240, 1, 0, 180, 60, 999])
            try fresh.save()
        }
        try stack.reopen()
        let third = stack.context()
        try third.performAndWait {
            let a = try #require(try third.existingObject(with: stack.id(stopA)) as? Stop)
            #expect(a.stopTimes.map(\.arrivalTime.timeIntervalSince1970) == [240, 1, 0, 180, 60, 999])
            #expect(a.stopTimes.allSatisfy { $0.stop === a })
        }
    }

    @Test("many-to-many ordered on one side, across an inheritance hierarchy")
    func manyToMany() throws {
        let stack = try TestStack()
        let context = stack.context()
        let (routeID, busID): (ObjectID, ObjectID) = try context.performAndWait {
            let route = Route(context: context)
            route.code = "M10"
            let other = Route(context: context)
            other.code = "N1"
            let bus = Bus(context: context)
            bus.name = "bus"
            bus.capacity = 90
            let tram = Tram(context: context)
            tram.name = "tram"
            tram.length = 40
            route.vehicles = [tram, bus]
            #expect(bus.routes.map(\.objectID) == [route.objectID])
            bus.routes = [route, other]
            #expect(other.vehicles.map(\.objectID) == [bus.objectID])
            #expect(route.vehicles.map(\.objectID) == [tram.objectID, bus.objectID])
            try context.save()
            return (route.objectID, bus.objectID)
        }
        try stack.reopen()
        let fresh = stack.context()
        try fresh.performAndWait {
            let route = try #require(try fresh.existingObject(with: stack.id(routeID)) as? Route)
            let bus = try #require(try fresh.existingObject(with: stack.id(busID)) as? Bus)
            #expect(route.vehicles.map(\.name) == ["tram", "bus"])
            #expect(route.vehicles.first is Tram)
            #expect(Set(bus.routes.map(\.code)) == ["M10", "N1"])
            route.vehicles = [bus]
            #expect(bus.routes.count == 2)
            let tram = try #require(fresh.registeredObjects.compactMap { $0 as? Tram }.first)
            #expect(tram.routes.isEmpty)
            bus.remove(route, fromRelationship: "routes")
            #expect(route.vehicles.isEmpty)
            try fresh.save()
        }
        try stack.reopen()
        let third = stack.context()
        try third.performAndWait {
            let route = try #require(try third.existingObject(with: stack.id(routeID)) as? Route)
            let bus = try #require(try third.existingObject(with: stack.id(busID)) as? Bus)
            #expect(route.vehicles.isEmpty)
            #expect(bus.routes.map(\.code) == ["N1"])
        }
    }

    @Test("one-to-one: assigning a partner releases the previous one on both sides")
    func oneToOne() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let alice = Person(context: context), bob = Person(context: context)
            alice.name = "alice"
            bob.name = "bob"
            let badge = Badge(context: context)
            badge.number = 7
            badge.owner = alice
            #expect(alice.badge === badge)
            bob.badge = badge
            #expect(badge.owner === bob)
            #expect(alice.badge === nil)
            try context.save()
            let second = Badge(context: context)
            second.number = 8
            second.owner = bob
            #expect(bob.badge === second)
            #expect(badge.owner === nil)
            // The first badge's owner is required: saving must fail and say so.
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.map(\.kind) == [.missingValue])
            #expect(error.failures.first?.key == "owner")
        }
    }

    @Test("self-referencing one-to-many (parent/children)")
    func selfReference() throws {
        let stack = try TestStack()
        let context = stack.context()
        let stationID: ObjectID = try context.performAndWait {
            let station = makeStop(context, 10)
            let platforms = (11...13).map { makeStop(context, Int64($0)) }
            station.children = platforms
            #expect(platforms.allSatisfy { $0.parent === station })
            platforms[0].parent = nil
            #expect(station.children.count == 2)
            try context.save()
            return station.objectID
        }
        try stack.reopen()
        let fresh = stack.context()
        try fresh.performAndWait {
            let station = try #require(try fresh.existingObject(with: stack.id(stationID)) as? Stop)
            #expect(Set(station.children.map(\.identifier)) == [12, 13])
        }
    }
}

func makeStop(_ context: ManagedObjectContext, _ number: Int64) -> Stop {
    let stop = Stop(context: context)
    stop.identifier = number
    stop.stopID = "S\(number)"
    stop.name = "Stop \(number)"
    stop.latitude = 52.5 + Double(number) / 1000
    stop.longitude = 13.4 + Double(number) / 1000
    return stop
}

extension TestStack {
    /// The ID of the same row under the current coordinator (IDs survive reopening by URI).
    func id(_ old: ObjectID) throws -> ObjectID {
        try #require(coordinator.managedObjectID(forURIRepresentation: old.uriRepresentation))
    }
}
