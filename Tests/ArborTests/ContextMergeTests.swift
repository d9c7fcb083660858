import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Did-save notifications and merging between contexts")
struct ContextMergeTests {
    static func makeStop(_ context: ManagedObjectContext, _ name: String, _ identifier: Int64) -> Stop {
        let stop = Stop(context: context)
        stop.stopID = name
        stop.name = name
        stop.identifier = identifier
        stop.latitude = 52.5
        stop.longitude = 13.4
        return stop
    }

    @Test("a save tells observers what it inserted, updated and deleted; merging brings it into another context")
    func notifyAndMerge() throws {
        let stack = try TestStack()
        let writer = stack.context(), reader = stack.context()
        let (alphaID, gammaID) = try writer.performAndWait { () throws -> (ObjectID, ObjectID) in
            let alpha = Self.makeStop(writer, "Alpha", 1), gamma = Self.makeStop(writer, "Gamma", 3)
            try writer.save()
            return (alpha.objectID, gamma.objectID)
        }
        // The reader holds both stops, one with an unsaved change of its own.
        let held = try reader.performAndWait { () throws -> [ManagedObject] in
            let alpha = try reader.existingObject(with: alphaID) as? Stop
            let gamma = try reader.existingObject(with: gammaID) as? Stop
            #expect(alpha?.name == "Alpha" && gamma?.name == "Gamma")
            alpha?.latitude = 1.5
            return [alpha, gamma].compactMap { $0 }
        }
        let received = Locked<[ContextDidSave]>([])
        let observation = stack.coordinator.addDidSaveObserver { notification in received.withLock { $0.append(notification) } }
        let betaID = try writer.performAndWait { () throws -> ObjectID in
            let alpha = try writer.existingObject(with: alphaID) as? Stop
            alpha?.name = "Alpha 2"
            writer.delete(try writer.existingObject(with: gammaID))
            let beta = Self.makeStop(writer, "Beta", 2)
            try writer.save()
            return beta.objectID
        }
        let notifications = received.withLock { $0 }
        #expect(notifications.count == 1)
        let notification = try #require(notifications.first)
        #expect(notification.inserted == [betaID] && notification.updated == [alphaID] && notification.deleted == [gammaID])
        #expect(!betaID.isTemporaryID)

        try reader.performAndWait { () throws in
            reader.mergeChanges(fromContextDidSave: notification)
            let alpha = held[0] as? Stop
            #expect(alpha?.name == "Alpha 2")  // refreshed from the save
            #expect(alpha?.latitude == 1.5)    // the reader's unsaved change kept on top
            #expect(held[1].managedObjectContext == nil)  // the deleted stop left the reader
            #expect(reader.registeredObject(for: gammaID) == nil)
            let names = try reader.fetch(FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")]), as: Stop.self).map(\.name)
            #expect(names == ["Alpha 2", "Beta"])
        }
        // A context ignores its own saves; a cancelled observation hears nothing more.
        observation.cancel()
        try writer.performAndWait { () throws in
            writer.mergeChanges(fromContextDidSave: notification)
            #expect((try writer.existingObject(with: betaID) as? Stop)?.name == "Beta")
            (try writer.existingObject(with: betaID) as? Stop)?.name = "Beta 2"
            try writer.save()
        }
        #expect(received.withLock { $0.count } == 1)
    }

    @Test("automaticallyMergesChangesFromParent: a reading context follows another's saves")
    func automaticMerge() throws {
        let stack = try TestStack()
        let writer = stack.context(), reader = stack.context()
        let id = try writer.performAndWait { () throws -> ObjectID in
            let stop = Self.makeStop(writer, "Alpha", 1)
            try writer.save()
            return stop.objectID
        }
        let held = try reader.performAndWait { () throws -> Stop? in
            reader.automaticallyMergesChangesFromParent = true
            let stop = try reader.existingObject(with: id) as? Stop
            _ = stop?.name
            return stop
        }
        try writer.performAndWait { () throws in
            (try writer.existingObject(with: id) as? Stop)?.name = "Renamed"
            try writer.save()
        }
        // The merge is scheduled on the reader's queue; a performAndWait after it sees it.
        let name = eventually(reader, { held?.name ?? "" }, until: { $0 == "Renamed" })
        #expect(name == "Renamed")
        reader.performAndWait { reader.automaticallyMergesChangesFromParent = false }
        #expect(reader.performAndWait { reader.automaticallyMergesChangesFromParent } == false)
    }

    @Test("didSaveNotifications delivers saves as an async sequence")
    func asyncSequence() async throws {
        let stack = try TestStack()
        let writer = stack.context()
        let stream = stack.coordinator.didSaveNotifications
        let listener = Task { () -> ContextDidSave? in
            for await notification in stream { return notification }
            return nil
        }
        try await Task.sleep(nanoseconds: 10_000_000)
        let id = try writer.performAndWait { () throws -> ObjectID in
            let stop = Self.makeStop(writer, "Alpha", 1)
            try writer.save()
            return stop.objectID
        }
        let notification = await listener.value
        #expect(notification?.inserted == [id])
    }
}

@Suite("Merging to-many relationships")
struct ContextMergeToManyTests {
    @Test("a save that adds a member reports the owner as updated; merging makes the owner's list current")
    func ownerListRefreshed() throws {
        let stack = try TestStack()
        let writer = stack.context(), reader = stack.context()
        let stopID = try writer.performAndWait { () throws -> ObjectID in
            let stop = ContextMergeTests.makeStop(writer, "Alpha", 1)
            try writer.save()
            return stop.objectID
        }
        let held = try reader.performAndWait { () throws -> Stop? in
            let stop = try reader.existingObject(with: stopID) as? Stop
            #expect(stop?.stopTimes.isEmpty == true)  // the list is loaded (empty)
            return stop
        }
        let received = Locked<[ContextDidSave]>([])
        let observation = stack.coordinator.addDidSaveObserver { notification in received.withLock { $0.append(notification) } }
        defer { observation.cancel() }
        try writer.performAndWait { () throws in
            let time = StopTime(context: writer)
            time.departureTime = Date(timeIntervalSince1970: 60)
            time.arrivalTime = time.departureTime
            time.stop = try writer.existingObject(with: stopID) as? Stop
            try writer.save()
        }
        let notification = try #require(received.withLock { $0.first })
        #expect(notification.updated.contains(stopID))
        reader.performAndWait {
            reader.mergeChanges(fromContextDidSave: notification)
            #expect(held?.stopTimes.count == 1)
        }
    }
}
