@testable import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Testing

/// Key format 2 writes integers in keys as compact tuple integers; stores of format 1 (fixed
/// int64 components, no `keyFormat` record) stay readable and writable in their own format.
/// The differential suites run both formats; these tests pin the records and the bytes.
@Suite("Key formats: compact integers in new stores, format 1 kept")
struct KeyFormatTests {
    static func fill(_ stack: TestStack) throws {
        let context = stack.context()
        try context.performAndWait {
            for number in 0..<40 {
                let stop = makeStop(context, Int64(number) - 5)
                for minute in 0..<3 {
                    let time = StopTime(context: context)
                    time.departureTime = Date(timeIntervalSince1970: Double(21_600 + minute * 60 + number))
                    time.arrivalTime = time.departureTime
                    time.stop = stop
                }
            }
            try context.save()
        }
    }

    /// The first byte of every key component that holds an integer, per tree.
    static func integerTags(_ store: PersistentStore, tree: String) throws -> Set<UInt8> {
        try store.btree().database.view { tx in
            var tags: Set<UInt8> = []
            try tx.tree(tree).forEach { key, _ in
                for component in try TupleKey.decode(key) where component.integerValue != nil {
                    tags.insert(TupleKey.encode([component])[0])
                }
                return true
            }
            return tags
        }
    }

    @Test("each format records itself and writes its own integers, after reopening too", arguments: [UInt8(1), 2])
    func formatsKeepTheirIntegers(format: UInt8) throws {
        let stack = try TestStack(keyFormat: format)
        try Self.fill(stack)
        try stack.reopen()
        #expect(try stack.store.btree().keys.format == format)
        let record = try stack.store.btree().database.view { try $0.tree(StoreLayout.metadataTree).get(StoreMetadata.keyFormatKey) }
        #expect(record == (format == 1 ? nil : [format]))
        for tree in ["rows.Stop", "fk.StopTime.stop", "index.StopTime.by_stop_departureTime", "rows.StopTime"] {
            let tags = try Self.integerTags(stack.store, tree: tree)
            #expect(!tags.isEmpty)
            #expect(format == 1 ? tags == [0x23] : tags.allSatisfy { (0x12...0x1B).contains($0) }, "\(tree): \(tags)")
        }
        // Index and foreign-key values: the row's entity code, left out in format 2 for a row
        // of its hierarchy's root.
        for tree in ["fk.StopTime.stop", "index.StopTime.by_stop_departureTime", "index.Stop.by_longitude_latitude"] {
            let sizes = try stack.store.btree().database.view { tx in Set(try tx.tree(tree).entries().map(\.value.count)) }
            #expect(sizes == [format == 1 ? 2 : 0], "\(tree)")
        }
        // Reads through every kind of key: an index range, a semi-join, to-many members.
        let context = stack.context()
        try context.performAndWait {
            let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(
                format: "SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count != 0",
                Date(timeIntervalSince1970: 21_600 + 130), Date(timeIntervalSince1970: 21_600 + 135)))
            let found = try context.fetch(request, as: Stop.self).map(\.identifier).sorted()
            // Departures at 21,600 + minute·60 + number: minute 2 gives numbers 10…15.
            #expect(found == Array(5...10))
            let stop = try #require(try context.fetch(FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(format: "identifier == -5")), as: Stop.self).first)
            #expect(stop.stopTimes.count == 3)
        }
        try MigrationFixture.expectConsistent(stack.store)
    }

    @Test("an unknown key format is a typed error naming it, not a misread")
    func unknownFormat() throws {
        let stack = try TestStack()
        try stack.store.btree().database.update { tx in try tx.tree(StoreLayout.metadataTree).put(StoreMetadata.keyFormatKey, [9]) }
        #expect {
            try stack.reopen()
        } throws: { error in
            "\(error)".contains("key format")
        }
    }
}

@Suite("Key format 2: entity codes in index values")
struct IndexValueCodeTests {
    @Test("rows of a sub-entity keep their code in index values, rows of the root leave it out; fetches tell them apart",
          arguments: [UInt8(1), 2])
    func subEntitiesKeepTheirCode(format: UInt8) throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription("Place", attributes: [AttributeDescription("name", .string, indexed: true)]),
            EntityDescription("Hub", superentity: "Place", attributes: [AttributeDescription("platforms", .int64, defaultValue: .int(1))]),
        ])
        let stack = try TestStack(model: model, keyFormat: format)
        let context = stack.context()
        try context.performAndWait {
            for number in 0..<6 {
                let place = try context.insertNewObject(forEntityName: number % 2 == 0 ? "Place" : "Hub")
                place.setValue("P\(number)", forKey: "name")
            }
            try context.save()
        }
        let place = try #require(model.info(named: "Place")), hub = try #require(model.info(named: "Hub"))
        let values = try stack.store.btree().database.view { tx in try tx.tree("index.Place.name").entries().map(\.value) }
        let expected: [[UInt8]] = (0..<6).map { $0 % 2 == 0 ? (format == 1 ? IndexKeys.codeValue(place.code) : []) : IndexKeys.codeValue(hub.code) }
        #expect(values == expected)
        func names(_ entity: String, subentities: Bool = true) throws -> [String] {
            try context.performAndWait {
                var request = FetchRequest(entityName: entity, predicate: try ObjectPredicate(format: "name >= 'P'"))
                request.includesSubentities = subentities
                return try context.fetch(request).compactMap { $0.value(forKey: "name") as? String }.sorted()
            }
        }
        #expect(try names("Place") == ["P0", "P1", "P2", "P3", "P4", "P5"])
        #expect(try names("Place", subentities: false) == ["P0", "P2", "P4"])
        #expect(try names("Hub") == ["P1", "P3", "P5"])
    }
}
