@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

@Suite("Opening stores: missing, foreign, corrupt files and model mismatches")
struct StoreOpeningTests {
    @Test("a missing file without create, a foreign file, an engine file without a model")
    func badFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let model = try Fixtures.fullModel()
        let missing = directory.file("missing.arbor")
        #expect(throws: StoreError.fileNotFound(path: missing.path)) {
            try PersistentStore(url: missing, model: model, options: PersistentStore.Options(createIfMissing: false))
        }
        #expect(throws: StoreError.fileNotFound(path: missing.path)) {
            try PersistentStore(url: missing, model: model, options: PersistentStore.Options(readOnly: true))
        }
        let foreign = directory.file("foreign.db")
        try Data(repeating: 0x53, count: 8192).write(to: foreign)
        let foreignError = try #require(throws: StoreError.self) { try PersistentStore(url: foreign, model: model) }
        guard case .notAStoreFile = foreignError else {
            Issue.record("expected notAStoreFile, got \(foreignError)")
            return
        }
        let engineFile = directory.file("engine.arbor")
        let database = try Database.open(path: engineFile.path)
        try database.update { tx in try tx.createTree("things").put([1], [2]) }
        let engineError = try #require(throws: StoreError.self) { try PersistentStore(url: engineFile, model: model) }
        #expect(engineError.description.contains("without an object model"))
    }

    @Test("a store opens at the file its URL names, however the URL spells it")
    func urlSpellings() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let model = try Fixtures.fullModel()
        let folder = directory.file("a b%41 ü")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let encodedFolder = try #require(folder.path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed))
        let urls = [
            folder.appendingPathComponent("plain.arbor"),
            try #require(URL(string: "file://\(encodedFolder)/encoded.arbor")),
            try #require(URL(string: "relative.arbor", relativeTo: folder.appendingPathComponent("", isDirectory: true))),
            URL(fileURLWithPath: folder.path + "/./dotted.arbor"),
        ]
        for url in urls {
            let store = try PersistentStore(url: url, model: model)
            #expect(store.path == url.path)
            #expect(FileManager.default.fileExists(atPath: url.path))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".arbor") }.sorted()
            == ["dotted.arbor", "encoded.arbor", "plain.arbor", "relative.arbor"])
    }

    @Test("a changed model is detected and every difference named")
    func modelMismatch() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let url = directory.file("store.arbor")
        let original = try ManagedObjectModel(entities: Fixtures.transitEntities())
        _ = try PersistentStore(url: url, model: original)
        var entities = Fixtures.transitEntities()
        entities[0].attributes.append(AttributeDescription("zone", .string, optional: true))
        entities[1].attributes.removeAll { $0.name == "dropOffType" }
        let changed = try ManagedObjectModel(entities: entities)
        #expect(changed.versionHash != original.versionHash)
        var options = PersistentStore.Options()
        options.migratesAutomatically = false
        let error = try #require(throws: StoreError.self) { try PersistentStore(url: url, model: changed, options: options) }
        guard case .modelMismatch(_, let storeHash, let modelHash, let differences) = error else {
            Issue.record("expected modelMismatch, got \(error)")
            return
        }
        #expect(storeHash == original.versionHash)
        #expect(modelHash == changed.versionHash)
        #expect(differences == ["Stop: attribute zone added", "StopTime: attribute dropOffType removed"])
        // The same model declared again opens fine (hashes are stable).
        let again = try ManagedObjectModel(entities: Fixtures.transitEntities())
        #expect(again.versionHash == original.versionHash)
        _ = try PersistentStore(url: url, model: again)
    }

    @Test("a corrupt row gives a typed error naming the row, never a crash")
    func corruptRow() throws {
        // The row replaced by garbage.
        let (stack, id) = try Self.storeWithDamagedStop { $0 = [1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 200, 1] }
        let fresh = stack.context()
        fresh.performAndWait {
            let error = #expect(throws: StoreError.self) { try fresh.existingObject(with: try stack.id(id)) }
            #expect(error?.description.contains("rows.Stop/1") == true)
        }
    }

    /// A store with one stop whose stored row `damage` rewrote (through the engine), reopened.
    static func storeWithDamagedStop(_ damage: (inout [UInt8]) throws -> Void) throws -> (TestStack, ObjectID) {
        let stack = try TestStack()
        let context = stack.context()
        let id: ObjectID = try context.performAndWait {
            let stop = makeStop(context, 1)
            try context.save()
            return stop.objectID
        }
        let database = try Database.open(path: stack.url.path)
        let key = TupleKey.encode([.integer(id.primaryKey)])
        try database.update { tx in
            let tree = try tx.tree("rows.Stop")
            var bytes = try #require(try tree.get(key))
            try damage(&bytes)
            try tree.put(key, bytes)
        }
        try stack.reopen()
        return (stack, id)
    }

    /// The ways a row is read: a fault, a fetch of objects, values by position (decoded where
    /// the row lies in its page), values by key, dictionaries.
    enum RowReadPath: CaseIterable, Sendable {
        case fault, objects, positionalValues, decodableValues, dictionaries
    }

    /// Damage to a stored row's end: its last column cut short (a string tag with no length
    /// after it), or its last column missing.
    enum RowDamage: CaseIterable, Sendable {
        case columnCutShort, columnMissing
    }

    @Test("a damaged row is named, with what is wrong, by every path that reads it",
          arguments: RowReadPath.allCases, RowDamage.allCases)
    func damagedRow(path: RowReadPath, damage: RowDamage) throws {
        let (stack, id) = try Self.storeWithDamagedStop { bytes in
            // The last column of this stop (no parent) is a null: one tag byte.
            #expect(bytes.last == RowCodec.Tag.null.rawValue)
            switch damage {
            case .columnCutShort: bytes[bytes.count - 1] = RowCodec.Tag.string.rawValue
            case .columnMissing: bytes.removeLast()
            }
        }
        let fresh = stack.context()
        let error: StoreError? = fresh.performAndWait {
            #expect(throws: StoreError.self) {
                var request = FetchRequest(entityName: "Stop")
                switch path {
                case .fault: _ = try fresh.existingObject(with: try stack.id(id))
                case .objects:
                    request.returnsObjectsAsFaults = false
                    _ = try fresh.fetch(request)
                case .positionalValues: _ = try fresh.fetchValues(request, as: FetchValuesTests.PositionalRow.self)
                case .decodableValues: _ = try fresh.fetchValues(request, as: FetchValuesTests.StopRow.self)
                case .dictionaries:
                    request.resultType = .dictionaries
                    request.propertiesToFetch = [.key("identifier"), .key("name"), .key("parent")]
                    _ = try fresh.fetch(request)
                }
            }
        }
        guard case .corruptRow(let location, let detail)? = error else {
            Issue.record("expected corruptRow, got \(String(describing: error))")
            return
        }
        #expect(location == "rows.Stop/\(id.primaryKey)")
        switch damage {
        case .columnCutShort: #expect(detail.contains("at byte"), "\(detail)")
        case .columnMissing:
            // Values read by position decode the row up to the last column they read, which
            // here is the missing one; every other path checks the row's column count.
            let expected = path == .positionalValues ? "unexpected end at byte" : "6 columns where Stop has 7"
            #expect(detail.contains(expected), "\(detail)")
        }
    }

    @Test("the container sets up the stack in one line; a read-only store refuses saves")
    func containerAndReadOnly() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let url = directory.file("transit.arbor")
        let model = try Fixtures.fullModel()
        let container = try PersistentContainer(name: "transit", model: model, url: url)
        let background = container.newBackgroundContext()
        try background.performAndWait {
            _ = makeStop(background, 1)
            try background.save()
        }
        let readOnly = PersistentStoreCoordinator(managedObjectModel: model)
        try readOnly.addPersistentStore(at: url, options: PersistentStore.Options(readOnly: true))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: readOnly)
        context.performAndWait {
            _ = makeStop(context, 2)
            #expect(throws: StoreError.readOnlyStore(path: url.path)) { try context.save() }
        }
    }
}
