@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Words and substrings indexes kept exactly as the rows call for through saves, failed saves,
/// batch requests and migration; declared only where they can work; hostile text answered.
@Suite("Text indexes: upkeep, declarations and hostile input")
struct TextIndexUpkeepTests {
    static func model(textIndexes: Bool = true) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [EntityDescription("Place", attributes: [
            AttributeDescription("rank", .int64),
            AttributeDescription("name", .string, optional: true),
        ], indexes: textIndexes ? [IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)] : [],
           uniquenessConstraints: [["rank"]])])
    }

    static func ranks(_ context: ManagedObjectContext, _ format: String) throws -> [Int64] {
        let request = FetchRequest(entityName: "Place", predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("rank")])
        return try context.fetch(request).map { $0.value(forKey: "rank") as? Int64 ?? -1 }
    }

    @Test("saves: inserts, renames that keep some words, nil, deletes; a failed save writes no entry")
    func saves() throws {
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        try context.performAndWait {
            var places: [ManagedObject] = []
            for (rank, name) in ["Gedenkstätte Dt. Widerstand (Berlin)", "U Görlitzer Bahnhof", "Berlin Hbf"].enumerated() {
                let place = try context.insertNewObject(forEntityName: "Place")
                place.setValue(Int64(rank), forKey: "rank")
                place.setValue(name, forKey: "name")
                places.append(place)
            }
            try context.save()
            try MigrationFixture.expectConsistent(stack.store)
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'berl'") == [0, 2])
            // Renamed: "Berlin" stays, "Hbf" goes, "Hauptbahnhof" comes.
            places[2].setValue("Berlin Hauptbahnhof", forKey: "name")
            places[1].setValue(nil, forKey: "name")
            context.delete(places[0])
            try context.save()
            try MigrationFixture.expectConsistent(stack.store)
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'berl'") == [2])
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'hbf'") == [])
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'hauptbahn'") == [2])
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'gorl'") == [])
            // A save that breaks the unique rank fails whole: no entry for its words.
            let clash = try context.insertNewObject(forEntityName: "Place")
            clash.setValue(Int64(2), forKey: "rank")
            clash.setValue("Zoologischer Garten", forKey: "name")
            #expect(throws: ValidationError.self) { try context.save() }
            context.rollback()
            try MigrationFixture.expectConsistent(stack.store)
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'zoo'") == [])
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'logisch'") == [])
        }
    }

    @Test("batch insert, update (by value and by expression) and delete keep the entries")
    func batchRequests() throws {
        let stack = try TestStack(model: try Self.model())
        let names = (0..<200).map { "Stop \($0) \(["Nord", "Süd", "Ost", "West"][$0 % 4])straße" }
        let insert = BatchInsertRequest(entityName: "Place", objects: names.enumerated().map { ["rank": $0.offset, "name": $0.element] })
        _ = try stack.coordinator.execute(insert)
        try MigrationFixture.expectConsistent(stack.store)
        let context = stack.context()
        try context.performAndWait {
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'sudst 17'") == [17, 173, 177])
            var rename = BatchUpdateRequest(entityName: "Place", predicate: try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'nord'"))
            rename.propertiesToUpdate = ["name": .value(.string("Am Nordbahnhof"))]
            #expect(try context.execute(rename).count == 50)
            let cleared = BatchUpdateRequest(entityName: "Place", predicate: try ObjectPredicate(format: "name CONTAINS[cd] 'oststr'"),
                                             propertiesToUpdate: ["name": .value(.null)])
            #expect(try context.execute(cleared).count == 50)
            // A change of another attribute leaves the entries alone.
            let shift = BatchUpdateRequest(entityName: "Place", propertiesToUpdate: ["rank": .expression(try ObjectExpression(format: "rank + 1000"))])
            #expect(try context.execute(shift).count == 200)
            try MigrationFixture.expectConsistent(stack.store)
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'nordbahn'").count == 50)
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'nordstr'") == [])
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'oststr'") == [])
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'sudst 17'") == [1017, 1173, 1177])
            let delete = BatchDeleteRequest(entityName: "Place", predicate: try ObjectPredicate(format: "name LIKE[cd] '*weststr*'"))
            #expect(try context.execute(delete).count == 50)
            try MigrationFixture.expectConsistent(stack.store)
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'west'") == [])
        }
    }

    /// A batch insert makes its new rows' terms on a second thread (`TextTermWorker`); an upsert
    /// in a later chunk that renames a row an earlier chunk inserted must still win.
    @Test("a batch upsert renaming, chunks later, rows it inserted keeps only their new words")
    func upsertAcrossChunks() throws {
        let stack = try TestStack(model: try Self.model())
        guard let info = stack.model.info(named: "Place") else { return }
        let first = (0..<40).map { ["rank": $0, "name": "Alt \($0) Ufer"] as [String: Any] }
        let renamed = (10..<30).map { ["rank": $0, "name": "Neu \($0) Platz"] as [String: Any] }
        let cleared = (30..<35).map { ["rank": $0, "name": NSNull()] as [String: Any] }
        var request = BatchInsertRequest(entityName: "Place", objects: first + renamed + cleared + (40..<50).map { ["rank": $0, "name": "Neu \($0) Ufer"] })
        request.conflictRule = .update
        request.conflictConstraint = ["rank"]
        let result = try stack.store.btree().batchInsert(info, request, chunkSize: 6)
        #expect(result.insertedCount == 50 && result.updatedCount == 25)
        try MigrationFixture.expectConsistent(stack.store)
        let context = stack.context()
        try context.performAndWait { () throws -> Void in
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'alt'") == Array(0..<10) + Array(35..<40))
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'neu'") == Array(10..<30) + Array(40..<50))
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'ufer'") == Array(0..<10) + Array(35..<50))
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'platz'") == Array(10..<30))
        }
    }

    @Test("lightweight migration builds a text index that is added, and drops one that is removed")
    func migration() throws {
        let directory = TemporaryDirectory("arbor-text-migration")
        defer { directory.remove() }
        let url = directory.file("store.arbor")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model(textIndexes: false))
            try coordinator.addPersistentStore(at: url)
            let insert = BatchInsertRequest(entityName: "Place", objects: (0..<300).map { ["rank": $0, "name": "Halt \($0) Café Zoo"] })
            _ = try coordinator.execute(insert)
        }
        let indexed = try Self.model()
        do {
            let store = try PersistentStore(url: url, model: indexed)
            try MigrationFixture.expectConsistent(store)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: indexed)
            try coordinator.addPersistentStore(at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let predicate = try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'cafe 42'")
                #expect(try context.explain(FetchRequest(entityName: "Place", predicate: predicate)).first?.plan.hasPrefix("SEARCH index.Place.words_name") == true)
                #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'cafe 42'") == [42])
            }
        }
        let store = try PersistentStore(url: url, model: try Self.model(textIndexes: false))
        let kept = try store.btree().database.view { tx in try tx.hasTree("index.Place.words_name") }
        #expect(!kept)
        try MigrationFixture.expectConsistent(store)
    }

    @Test("an inherited words index finds the rows of the entity asked for, and of its sub-entities when included")
    func inheritance() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription("Place", attributes: [AttributeDescription("rank", .int64), AttributeDescription("name", .string, optional: true)],
                              indexes: [IndexDescription(["name"], kind: .words)]),
            EntityDescription("Station", superentity: "Place", attributes: [AttributeDescription("platforms", .int16, defaultValue: .int(1))]),
        ])
        let stack = try TestStack(model: model)
        let context = stack.context()
        try context.performAndWait {
            for (rank, (entity, name)) in [("Place", "Berlin Zoo"), ("Station", "Berlin Hauptbahnhof"), ("Station", "Potsdam"), ("Place", "Berliner Dom")].enumerated() {
                let object = try context.insertNewObject(forEntityName: entity)
                object.setValue(Int64(rank), forKey: "rank")
                object.setValue(name, forKey: "name")
            }
            try context.save()
            let predicate = try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'berl'")
            func ranks(_ entity: String, subentities: Bool = true) throws -> [Int64] {
                var request = FetchRequest(entityName: entity, predicate: predicate, sortDescriptors: [ObjectSortDescriptor("rank")])
                request.includesSubentities = subentities
                return try context.fetch(request).map { $0.value(forKey: "rank") as? Int64 ?? -1 }
            }
            #expect(try ranks("Place") == [0, 1, 3])
            #expect(try ranks("Place", subentities: false) == [0, 3])
            #expect(try ranks("Station") == [1])
            let plan = try context.explain(FetchRequest(entityName: "Station", predicate: predicate)).first?.plan
            #expect(plan?.hasPrefix("SEARCH index.Place.words_name") == true, "\(plan ?? "")")
            try MigrationFixture.expectConsistent(stack.store)
        }
    }

    @Test("a damaged text index: a malformed entry is a typed error, a stray one a consistency problem")
    func damagedIndex() throws {
        let stack = try TestStack(model: try Self.model())
        _ = try stack.coordinator.execute(BatchInsertRequest(entityName: "Place", objects: [["rank": 1, "name": "Berlin Zoo"]]))
        func damage(_ body: (WriteTransaction) throws -> Void) throws {
            let tx = try stack.store.btree().database.beginWrite()
            try body(tx)
            try tx.commit()
        }
        let words = "index.Place.words_name"
        // A well-formed block of one key whose row does not exist.
        try damage { try $0.tree(words).put(TupleKey.encode([.string("berlin"), stack.store.btree().keys.integer(777)]), [1]) }
        #expect(try stack.store.btree().consistencyProblems().count == 1)
        let context = stack.context()
        let request = FetchRequest(entityName: "Place", predicate: try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'ber'"))
        // Malformed blocks: no count; a count its gaps do not match; a gap past Int64.max; a key
        // that does not end with a primary key.
        let keys = try stack.store.btree().keys
        let malformed: [(key: [UInt8], value: [UInt8])] = [
            (TupleKey.encode([.string("berlin"), keys.integer(778)]), []),
            (TupleKey.encode([.string("berlin"), keys.integer(779)]), [3, 0]),
            (TupleKey.encode([.string("berlin"), keys.integer(780)]), [2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
            ([0x40, 0x62, 0x65, 0x72, 0x00, 0x01, 0xFF], [1]),
        ]
        for (key, value) in malformed {
            try damage { try $0.tree(words).put(key, value) }
            _ = context.performAndWait {
                #expect(throws: StoreError.self) { try context.fetch(request) }
            }
            #expect(throws: StoreError.self) { try stack.store.btree().consistencyProblems() }
            try damage { _ = try $0.tree(words).delete(key) }
        }
        // A save that rewrites a damaged term's blocks refuses, and writes nothing.
        try damage { try $0.tree(words).put(TupleKey.encode([.string("berlin"), stack.store.btree().keys.integer(2)]), [9]) }
        #expect(throws: StoreError.self) {
            try stack.coordinator.execute(BatchInsertRequest(entityName: "Place", objects: [["rank": 2, "name": "Berlin Mitte"]]))
        }
    }

    @Test("a text index names one string attribute and is not unique")
    func declarations() throws {
        func model(_ index: IndexDescription) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [EntityDescription("Place", attributes: [
                AttributeDescription("rank", .int64), AttributeDescription("name", .string), AttributeDescription("alias", .string),
            ], indexes: [index])])
        }
        #expect(throws: ModelError.invalidTextIndex(entity: "Place", index: "words_rank", detail: "a words index names one string attribute")) {
            try model(IndexDescription(["rank"], kind: .words))
        }
        #expect(throws: ModelError.invalidTextIndex(entity: "Place", index: "substrings_name_alias", detail: "a substrings index names one string attribute")) {
            try model(IndexDescription(["name", "alias"], kind: .substrings))
        }
        #expect(throws: ModelError.invalidTextIndex(entity: "Place", index: "words", detail: "a words index cannot be unique")) {
            try model(IndexDescription(name: "words", ["name"], unique: true, kind: .words))
        }
        #expect(throws: Never.self) { try model(IndexDescription(["name"], kind: .words)) }
    }

    @Test("a values index is stored as before kinds existed; a text index's kind is stored")
    func storedForm() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plain = String(decoding: try encoder.encode(IndexDescription(["name"], normalized: true)), as: UTF8.self)
        #expect(plain == #"{"isNormalized":true,"isUnique":false,"name":"folded_name","properties":["name"]}"#)
        let old = try JSONDecoder().decode(IndexDescription.self, from: Data(plain.utf8))
        #expect(old.kind == .values && old.isNormalized)
        let words = try encoder.encode(IndexDescription(["name"], kind: .words))
        #expect(try JSONDecoder().decode(IndexDescription.self, from: words) == IndexDescription(["name"], kind: .words))
        #expect(String(decoding: words, as: UTF8.self).contains(#""kind":"words""#))
    }

    @Test("a 1 MB name and a query of 10,000 words give answers, not crashes")
    func hostileInput() throws {
        let stack = try TestStack(model: try Self.model())
        let huge = String(repeating: "wort", count: 200_000) + " " + (0..<20_000).map { "w\($0)" }.joined(separator: " ")
        let context = stack.context()
        try context.performAndWait {
            for (rank, name) in [huge, "short name", String(repeating: "ä", count: 50_000)].enumerated() {
                let place = try context.insertNewObject(forEntityName: "Place")
                place.setValue(Int64(rank), forKey: "rank")
                place.setValue(name, forKey: "name")
            }
            try context.save()
            // Terms are cut to 64 bytes: a longer probe is cut too, and the row decides.
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] '\(String(repeating: "wort", count: 40))'") == [0])
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] '\(String(repeating: "wort", count: 40))x'") == [])
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] 'w19999 w5'") == [0])
            #expect(try Self.ranks(context, "name CONTAINS[cd] 'aaaa'") == [2])
            let query = (0..<10_000).map { "w\($0)" }.joined(separator: " ")
            #expect(try Self.ranks(context, "name WORDSBEGINWITH[cd] '\(query)'") == [0])
            #expect(try Self.ranks(context, "name CONTAINS[cd] '\(query)'") == [0])
            places(context).forEach { context.delete($0) }
            try context.save()
            try MigrationFixture.expectConsistent(stack.store)
        }
    }

    private func places(_ context: ManagedObjectContext) -> [ManagedObject] {
        (try? Array(context.fetch(FetchRequest(entityName: "Place")))) ?? []
    }
}
