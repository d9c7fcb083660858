import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Dispatch
import Foundation
import Testing

/// A store file whose `sync` can be held shut: the writer is then stopped inside its commit,
/// with the write lock held, for as long as the test wants.
final class GatedFile: StorageFile, Sendable {
    let base = SimulatedFile()
    private let armed = Locked(false)
    let reachedGate = DispatchSemaphore(value: 0)
    let openGate = DispatchSemaphore(value: 0)

    func arm() { armed.withLock { $0 = true } }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int { try base.read(into: buffer, at: offset) }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws { try base.write(bytes, at: offset) }
    func size() throws -> UInt64 { try base.size() }
    func truncate(to size: UInt64) throws { try base.truncate(to: size) }
    func sync() throws {
        let hold = armed.withLock { armed -> Bool in
            defer { armed = false }
            return armed
        }
        if hold {
            reachedGate.signal()
            openGate.wait()
        }
        try base.sync()
    }
}

@Suite("Readers never wait for the writer")
struct ReadersDuringCommitTests {
    static func insertStops(_ context: ManagedObjectContext, _ range: Range<Int>) throws {
        for index in range {
            let stop = Stop(context: context)
            stop.stopID = "s\(index)"; stop.name = "Stop \(index)"; stop.identifier = Int64(index)
            stop.latitude = 52; stop.longitude = 13
        }
        try context.save()
    }

    @Test("while a save is stopped inside its commit (write lock held), fetches in another context complete and see the last commit")
    func fetchDuringCommit() throws {
        let file = GatedFile()
        let model = try Fixtures.fullModel()
        let store = try PersistentStore(file: file, model: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try writer.performAndWait { try Self.insertStops(writer, 0..<100) }

        file.arm()
        let saved = DispatchSemaphore(value: 0)
        let saveError = Locked<String?>(nil)
        writer.perform {
            do { try Self.insertStops(writer, 100..<200) } catch { saveError.withLock { $0 = "\(error)" } }
            saved.signal()
        }
        #expect(file.reachedGate.wait(timeout: .now() + 30) == .success)

        // The writer is parked in its commit. A reader must not wait for it.
        let counted = DispatchSemaphore(value: 0)
        let seen = Locked<Int?>(nil)
        reader.perform {
            let count = try? reader.count(for: FetchRequest(entityName: "Stop"))
            seen.withLock { $0 = count }
            counted.signal()
        }
        let finished = counted.wait(timeout: .now() + 10) == .success
        file.openGate.signal()
        #expect(finished, "the reader waited for the writer's commit")
        #expect(seen.withLock { $0 } == 100)  // the last committed state, not the one in flight

        #expect(saved.wait(timeout: .now() + 30) == .success)
        #expect(saveError.withLock { $0 } == nil)
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest(entityName: "Stop")) } == 200)
    }
}
