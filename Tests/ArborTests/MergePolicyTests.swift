import Arbor
import ArborTestSupport
import Foundation
import Testing

@Suite("Merge policies on optimistic-locking conflicts between two contexts")
struct MergePolicyTests {
    struct Outcome: Equatable {
        var name: String
        var latitude: Double
        var longitude: Double
    }

    /// Saves stop "S" named "Original" at (1, 2); returns its ID.
    static func storedStop(_ stack: TestStack) throws -> ObjectID {
        let setup = stack.context()
        return try setup.performAndWait { () throws -> ObjectID in
            let stop = Stop(context: setup)
            stop.stopID = "S"; stop.name = "Original"; stop.identifier = 1; stop.latitude = 1; stop.longitude = 2
            try setup.save()
            return stop.objectID
        }
    }

    /// Both contexts read the stop; `other` renames it and moves its latitude and saves; then
    /// `mine` renames it and moves its longitude and saves with `policy`.
    static func conflict(_ policy: MergePolicy) throws -> Result<Outcome, Error> {
        let stack = try TestStack()
        let id = try Self.storedStop(stack)
        let mine = stack.context(), other = stack.context()
        let held = try mine.performAndWait { () throws -> Stop? in
            let stop = try mine.existingObject(with: id) as? Stop
            _ = stop?.name
            return stop
        }
        try other.performAndWait { () throws in
            let stop = try other.existingObject(with: id) as? Stop
            stop?.name = "Theirs"
            stop?.latitude = 5
            try other.save()
        }
        let saved: Result<Void, Error> = mine.performAndWait {
            mine.mergePolicy = policy
            held?.name = "Mine"
            held?.longitude = 9
            return Result { try mine.save() }
        }
        if case .failure(let error) = saved { return .failure(error) }
        let check = stack.context()
        return .success(try check.performAndWait { () throws -> Outcome in
            let stop = try check.existingObject(with: id) as? Stop
            return Outcome(name: stop?.name ?? "", latitude: stop?.latitude ?? .nan, longitude: stop?.longitude ?? .nan)
        })
    }

    @Test("error: the save fails naming the object and both versions")
    func error() throws {
        guard case .failure(let error) = try Self.conflict(.error), case StoreError.conflicts(let conflicts) = error else {
            Issue.record("expected a conflict")
            return
        }
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.expectedVersion == 1 && conflicts.first?.storedVersion == 2)
    }

    @Test("each policy resolves the conflict its own way", arguments: [
        (MergePolicy.objectTrumps, Outcome(name: "Mine", latitude: 5, longitude: 9)),
        (MergePolicy.storeTrumps, Outcome(name: "Theirs", latitude: 5, longitude: 9)),
        (MergePolicy.overwrite, Outcome(name: "Mine", latitude: 1, longitude: 9)),
        (MergePolicy.rollback, Outcome(name: "Theirs", latitude: 5, longitude: 2)),
    ])
    func policy(_ policy: MergePolicy, expected: Outcome) throws {
        #expect(try Self.conflict(policy).get() == expected)
    }

    @Test("an object deleted in the store leaves the context; the rest of the save goes through")
    func deletedInStore() throws {
        let stack = try TestStack()
        let id = try MergePolicyTests.storedStop(stack)
        let mine = stack.context(), other = stack.context()
        let held = try mine.performAndWait { () throws -> Stop? in try mine.existingObject(with: id) as? Stop }
        try other.performAndWait { () throws in
            other.delete(try other.existingObject(with: id))
            try other.save()
        }
        try mine.performAndWait { () throws in
            mine.mergePolicy = .objectTrumps
            held?.name = "Mine"
            let extra = Stop(context: mine)
            extra.stopID = "T"; extra.name = "New"; extra.identifier = 2; extra.latitude = 0; extra.longitude = 0
            try mine.save()
            #expect(held?.managedObjectContext == nil)
            let names = try mine.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map(\.name)
            #expect(names == ["New"])
        }
    }
}

@Suite("Merge policies on unique-constraint conflicts")
struct UniqueConstraintPolicyTests {
    struct Outcome: Equatable {
        var stops: [String]
        var timesPointAt: [String]
    }

    /// The store has stop "S1" named "Old"; a context inserts another "S1" named "New" with a
    /// stop time pointing at it, and saves with `policy`.
    static func conflict(_ policy: MergePolicy) throws -> Result<Outcome, Error> {
        let stack = try TestStack()
        let setup = stack.context()
        try setup.performAndWait { () throws in
            let stop = Stop(context: setup)
            stop.stopID = "S1"; stop.name = "Old"; stop.identifier = 1; stop.latitude = 1; stop.longitude = 2
            try setup.save()
        }
        let context = stack.context()
        let saved: Result<Void, Error> = context.performAndWait {
            context.mergePolicy = policy
            let stop = Stop(context: context)
            stop.stopID = "S1"; stop.name = "New"; stop.identifier = 1; stop.latitude = 3; stop.longitude = 4
            let time = StopTime(context: context)
            time.departureTime = Date(timeIntervalSince1970: 60); time.arrivalTime = time.departureTime
            time.stop = stop
            return Result { try context.save() }
        }
        if case .failure(let error) = saved { return .failure(error) }
        let check = stack.context()
        return .success(try check.performAndWait { () throws -> Outcome in
            let stops = try check.fetch(FetchRequest(entityName: "Stop"), as: Stop.self)
            let times = try check.fetch(FetchRequest(entityName: "StopTime"), as: StopTime.self)
            return Outcome(stops: stops.map { "\($0.stopID) \($0.name)" }, timesPointAt: times.map { $0.stop?.name ?? "nil" })
        })
    }

    @Test("error: the save fails with the unique-constraint failure")
    func error() throws {
        guard case .failure(let error) = try Self.conflict(.error), let validation = error as? ValidationError else {
            Issue.record("expected a validation error")
            return
        }
        #expect(validation.failures.contains { if case .uniqueConstraint = $0.kind { return true } else { return false } })
    }

    @Test("the inserted object takes over the stored row, or gives way to it; relationships follow", arguments: [
        (MergePolicy.objectTrumps, Outcome(stops: ["S1 New"], timesPointAt: ["New"])),
        (MergePolicy.overwrite, Outcome(stops: ["S1 New"], timesPointAt: ["New"])),
        (MergePolicy.storeTrumps, Outcome(stops: ["S1 Old"], timesPointAt: ["Old"])),
        (MergePolicy.rollback, Outcome(stops: ["S1 Old"], timesPointAt: ["Old"])),
    ])
    func policy(_ policy: MergePolicy, expected: Outcome) throws {
        #expect(try Self.conflict(policy).get() == expected)
    }
}
