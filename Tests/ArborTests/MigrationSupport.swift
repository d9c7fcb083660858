@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// A small model to migrate: stops with ordered departures, tags (many-to-many), a sub-entity.
enum MigrationFixture {
    static func stop(_ extra: (inout EntityDescription) -> Void = { _ in }) -> EntityDescription {
        var entity = EntityDescription("Stop", attributes: [
            AttributeDescription("name", .string),
            AttributeDescription("code", .string, optional: true),
            AttributeDescription("latitude", .double, defaultValue: .double(0)),
            AttributeDescription("zone", .string, optional: true, indexed: true),
        ], relationships: [
            .toMany("departures", "Departure", inverse: "stop", ordered: true, deleteRule: .cascade),
            .toMany("tags", "Tag", inverse: "stops"),
        ], indexes: [IndexDescription(["name"], normalized: true)])
        extra(&entity)
        return entity
    }

    static func departure(_ extra: (inout EntityDescription) -> Void = { _ in }) -> EntityDescription {
        var entity = EntityDescription("Departure", attributes: [AttributeDescription("minute", .int64)],
                                       relationships: [.toOne("stop", "Stop", inverse: "departures")])
        extra(&entity)
        return entity
    }

    static func tag(_ extra: (inout EntityDescription) -> Void = { _ in }) -> EntityDescription {
        var entity = EntityDescription("Tag", attributes: [AttributeDescription("label", .string)],
                                       relationships: [.toMany("stops", "Stop", inverse: "tags")])
        extra(&entity)
        return entity
    }

    static func station() -> EntityDescription {
        EntityDescription("Station", superentity: "Stop", attributes: [AttributeDescription("platforms", .int64, defaultValue: .int(1))])
    }

    static func version1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [stop(), departure(), tag(), station()])
    }

    /// Fills a store of `version1`: 3 stops and a station, departures in a chosen order, tags.
    static func populate(_ context: ManagedObjectContext) throws {
        var stops: [ManagedObject] = []
        for (index, name) in ["Alexanderplatz", "Bernauer Straße", "Görlitzer Bahnhof"].enumerated() {
            let stop = try context.insertNewObject(forEntityName: "Stop")
            stop.setValue(name, forKey: "name")
            stop.setValue(Double(index) + 52.5, forKey: "latitude")
            stop.setValue(index == 1 ? nil : "zone \(index)", forKey: "zone")
            stop.setValue(index == 2 ? nil : "C\(index)", forKey: "code")
            stops.append(stop)
        }
        let station = try context.insertNewObject(forEntityName: "Station")
        station.setValue("Hauptbahnhof", forKey: "name")
        station.setValue(Int64(14), forKey: "platforms")
        stops.append(station)
        for (index, stop) in stops.enumerated() {
            var departures: [ManagedObject] = []
            for minute in [30, 10, 20].map({ Int64($0 + index) }) {
                let departure = try context.insertNewObject(forEntityName: "Departure")
                departure.setValue(minute, forKey: "minute")
                departures.append(departure)
            }
            stop.setValue(departures, forKey: "departures")
        }
        let night = try context.insertNewObject(forEntityName: "Tag"), accessible = try context.insertNewObject(forEntityName: "Tag")
        night.setValue("night", forKey: "label")
        accessible.setValue("accessible", forKey: "label")
        night.setValue([stops[0], stops[3]], forKey: "stops")
        accessible.setValue([stops[1], stops[3], stops[2]], forKey: "stops")
        try context.save()
    }

    static func makeStore(_ url: URL, _ model: ManagedObjectModel) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { try populate(context) }
    }

    /// The store's stops, one line each: every attribute the model has, departures in order, tags.
    static func describe(_ store: PersistentStore, model: ManagedObjectModel, stopEntity: String = "Stop",
                         tagKey: String = "tags", labelKey: String = "label") throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait {
            let request = FetchRequest(entityName: stopEntity, sortDescriptors: [ObjectSortDescriptor("name")])
            return try context.fetch(request).map { stop in
                let attributes = (model.attributes(ofEntity: stop.entityName) ?? []).map { attribute in
                    "\(attribute.name)=\(stop.value(forKey: attribute.name).map { "\($0)" } ?? "nil")"
                }
                let departures = (stop.value(forKey: "departures") as? [ManagedObject] ?? []).map { "\($0.value(forKey: "minute") ?? "?")" }
                let tags = (stop.value(forKey: tagKey) as? [ManagedObject] ?? []).compactMap { $0.value(forKey: labelKey) as? String }.sorted()
                return "\(stop.entityName) \(attributes.joined(separator: " ")) departures=\(departures) tags=\(tags)"
            }
        }
    }

    /// Checks every index tree holds exactly the entries the rows call for, and the engine check.
    static func expectConsistent(_ store: PersistentStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(store.checkIntegrity().isSound, sourceLocation: sourceLocation)
        let model = store.model
        try store.btree().database.view { tx in
            for info in model.infos where info.superentityName == nil {
                var expected: [String: Set<[UInt8]>] = [:]
                let indexes = model.infos.filter { info.includes($0) }.flatMap { member in member.indexes.map { (member, $0) } }
                for (_, index) in indexes { expected[index.tree] = [] }
                try tx.tree(info.rowTree).forEach { key, value in
                    let pk = try #require(IndexKeys.trailingKey(key))
                    let row = try RowCodec.decode(value, context: "test")
                    for (member, index) in indexes where member.code == row.entityCode {
                        for entry in try store.btree().keys.indexKeys(index, columns: row.columns, key: pk) { expected[index.tree]?.insert(entry) }
                    }
                    return true
                }
                let textTrees = Set(indexes.filter { $0.1.isText }.map(\.1.tree))
                for (tree, keys) in expected {
                    var stored: Set<[UInt8]> = []
                    if textTrees.contains(tree) {
                        try PostingTree(tree: try tx.tree(tree), keys: store.btree().keys).forEachEntry { stored.insert($0) }
                    } else {
                        stored = Set(try tx.tree(tree).entries().map(\.key))
                    }
                    #expect(stored == keys, "index \(tree): \(stored.count) entries, rows call for \(keys.count)", sourceLocation: sourceLocation)
                }
            }
        }
    }
}
