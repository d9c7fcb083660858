@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

/// Batch inserts with a conflict rule: find or create in one request.
@Suite("Upserts: batch inserts that update or give way on a uniqueness constraint")
struct UpsertTests {
    static func stopObject(_ number: Int, name: String) -> [String: Any] {
        ["identifier": Int64(number), "stopID": "S\(number)", "name": name, "latitude": 52.0, "longitude": 13.0]
    }

    @Test("update: stored objects take the values set and keep their IDs and relationships; new ones are inserted")
    func update() throws {
        let (stack, ids) = try BatchUpdateTests.seeded()
        let context = stack.context()
        try context.performAndWait {
            // Stops 15…24: 15–20 stored, 21–24 new; stop 16 listed twice (the last values win).
            var objects = (15...24).map { Self.stopObject($0, name: "Edition 2 \($0)") }
            objects.append(["stopID": "S16", "name": "Last"])
            var request = BatchInsertRequest(entityName: "Stop", objects: objects)
            request.conflictRule = .update
            request.conflictConstraint = ["stopID"]
            request.resultType = .objectIDs
            let result = try context.execute(request)
            #expect(result.count == 11 && result.insertedCount == 4 && result.updatedCount == 7 && result.ignoredCount == 0)
            let returned = try #require(result.objectIDs)
            #expect(Array(returned.prefix(6)) == Array(ids[14...19]))
            #expect(returned[10] == ids[15])
            #expect(result.changes.inserted.count == 4 && result.changes.updated.count == 6)
            let stop16 = try #require(try context.existingObject(with: ids[15]) as? Stop)
            #expect(stop16.name == "Last" && stop16.identifier == 16 && stop16.stopTimes.count == 3)
            #expect(try context.count(for: FetchRequest(entityName: "Stop")) == 24)
            let new = try #require(try context.existingObject(with: returned[8]) as? Stop)
            #expect(new.stopID == "S23" && new.name == "Edition 2 23")
            #expect(stack.store.checkIntegrity().isSound)
        }
    }

    @Test("ignore: stored objects stay as they are; the first of repeated new ones is kept")
    func ignore() throws {
        let (stack, ids) = try BatchUpdateTests.seeded()
        let context = stack.context()
        try context.performAndWait {
            var request = BatchInsertRequest(entityName: "Stop", objects: [Self.stopObject(1, name: "x"), Self.stopObject(30, name: "first"),
                                                                          Self.stopObject(30, name: "second")])
            request.conflictRule = .ignore
            request.conflictConstraint = ["stopID"]
            request.resultType = .objectIDs
            let result = try context.execute(request)
            #expect(result.insertedCount == 1 && result.ignoredCount == 2)
            #expect(result.objectIDs?[0] == ids[0] && result.objectIDs?[1] == result.objectIDs?[2])
            #expect(try #require(try context.existingObject(with: ids[0]) as? Stop).name == "Stop 1")
            let stored = try context.fetch(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "stopID == 'S30'")), as: Stop.self)
            #expect(stored.map(\.name) == ["first"])
        }
    }

    @Test("another constraint still holds; an entity with two constraints must name one; nothing is half-written")
    func failures() throws {
        let (stack, _) = try BatchUpdateTests.seeded()
        let context = stack.context()
        try context.performAndWait {
            let snapshot = try SaveCrashTests.snapshot(stack.store, model: stack.model)
            // Stop S2 updated to identifier 3, which stop S3 holds: the identifier constraint fails.
            var clash = BatchInsertRequest(entityName: "Stop", objects: [Self.stopObject(40, name: "new"), ["stopID": "S2", "identifier": Int64(3)]])
            clash.conflictRule = .update
            clash.conflictConstraint = ["stopID"]
            let error = try #require(throws: ValidationError.self) { try context.execute(clash) }
            #expect(error.failures.contains { if case .uniqueConstraint(["identifier"], _) = $0.kind { return true } else { return false } })
            var unnamed = BatchInsertRequest(entityName: "Stop", objects: [Self.stopObject(41, name: "x")])
            unnamed.conflictRule = .update
            #expect(throws: ValidationError.self) { try context.execute(unnamed) }
            var unknown = unnamed
            unknown.conflictConstraint = ["name"]
            #expect(throws: ValidationError.self) { try context.execute(unknown) }
            // A new object without a required value: reported by its position.
            var missing = BatchInsertRequest(entityName: "Stop", objects: [["stopID": "S50"]])
            missing.conflictRule = .update
            missing.conflictConstraint = ["stopID"]
            let reported = try #require(throws: ValidationError.self) { try context.execute(missing) }
            #expect(reported.failures.allSatisfy { $0.batchIndex == 0 && $0.kind == .missingValue })
            #expect(try SaveCrashTests.snapshot(stack.store, model: stack.model) == snapshot)
        }
    }

    @Test("stop times upserted onto a stop time's unique key, across chunks")
    func acrossChunks() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            _ = try context.execute(BatchInsertRequest(entityName: "Stop", objects: (0..<50).map { Self.stopObject($0, name: "v1") }))
            guard let info = stack.model.info(named: "Stop") else { return }
            var request = BatchInsertRequest(entityName: "Stop", objects: (25..<75).map { Self.stopObject($0, name: "v2") }
                                                                      + (60..<80).map { Self.stopObject($0, name: "v3") })
            request.conflictRule = .update
            request.conflictConstraint = ["stopID"]
            let result = try stack.store.btree().batchInsert(info, request, chunkSize: 7)
            #expect(result.insertedCount == 30 && result.updatedCount == 40)
            let names = Dictionary(uniqueKeysWithValues: try context.fetch(FetchRequest(entityName: "Stop"), as: Stop.self).map { ($0.identifier, $0.name) })
            #expect(names.count == 80)
            #expect((0..<80).allSatisfy { names[Int64($0)] == ($0 < 25 ? "v1" : ($0 < 60 ? "v2" : "v3")) })
            // Rows inserted by one chunk and updated by a later one keep only their new index entries.
            #expect(try stack.store.btree().consistencyProblems() == [])
            let v2 = try context.count(for: FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "name == 'v2'")))
            #expect(v2 == 35)
        }
    }
}
