import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTransit
import Foundation

/// Fuzz bodies for the tools' input paths (run by fuzz/FuzzGTFS and fuzz/FuzzInspect, and by
/// the regression tests on saved findings).
public enum ToolFuzzBodies {
    /// Arbitrary bytes as a GTFS file: parsing ends in records or a `GTFSError`, never a crash;
    /// splitting the input into chunks anywhere gives the same records; every record goes
    /// through both row readers, which answer with a row or a `GTFSError`.
    public static func gtfs(_ data: [UInt8]) throws {
        func parse(_ chunks: [ArraySlice<UInt8>]) -> Result<[[[UInt8]]], GTFSError> {
            var parser = CSVParser(file: "fuzz.txt")
            var records: [[[UInt8]]] = []
            do {
                for chunk in chunks { try parser.feed(chunk) { records.append($0.fields) } }
                try parser.finish { records.append($0.fields) }
                return .success(records)
            } catch let error as GTFSError {
                return .failure(error)
            } catch {
                return .failure(GTFSError(file: "fuzz.txt", line: 0, .unreadable("\(error)")))
            }
        }
        let whole = parse([data[...]])
        let cut = data.isEmpty ? 0 : Int(data[0]) % (data.count + 1)
        let split = parse([data[..<cut], data[cut...]])
        switch (whole, split) {
        case (.success(let a), .success(let b)) where a == b: break
        case (.failure(let a), .failure(let b)) where a == b: break
        default: throw FuzzBodies.FuzzFinding(description: "chunking at \(cut) changes the result: \(whole) vs \(split)")
        }
        var parser = CSVParser(file: "fuzz.txt")
        var header: CSVParser.Record?
        var rows: [CSVParser.Record] = []
        do {
            try parser.feed(data) { record in if header == nil { header = record } else if rows.count < 200 { rows.append(record) } }
            try parser.finish { record in if header == nil { header = record } else if rows.count < 200 { rows.append(record) } }
        } catch is GTFSError { return }
        guard let header, let table = try? GTFSTable(file: "fuzz.txt", header: header) else { return }
        let stops = try? GTFSRows.Stops(table: table), times = try? GTFSRows.StopTimes(table: table)
        for row in rows {
            do { _ = try stops?.parse(row) } catch is GTFSError {}
            do { _ = try times?.parse(row) } catch is GTFSError {}
        }
    }

    /// Arbitrary bytes as a store file, read the way `arbor info`, `pages`, `check`, `schema`,
    /// `dump` and `query --properties` read it: typed errors or answers, never a crash.
    public static func inspect(_ data: [UInt8]) throws {
        var options = Database.Options()
        options.readOnly = true
        guard let database = try? Database.open(file: SimulatedFile(bytes: data), options: options) else { return }
        _ = try? database.info()
        let check = database.checkIntegrity()
        for page in 0..<min(check.pageOwners.count, 128) { _ = try? database.dumpPage(PageID(page)) }
        guard let schema = try? PersistentStore.storedSchema(file: SimulatedFile(bytes: data)),
              let model = try? ManagedObjectModel(schema: schema),
              let store = try? PersistentStore(file: SimulatedFile(bytes: data), model: model, options: PersistentStore.Options(readOnly: true))
        else { return }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        context.performAndWait {
            for entity in model.entityNames {
                var request = FetchRequest(entityName: entity)
                request.fetchBatchSize = 50
                request.fetchLimit = 500
                // Dictionaries of every attribute and to-one relationship, as `arbor query
                // --properties` reads them: each row's columns found and decoded where the row
                // lies in its page (`RowSlots`).
                var dictionaries = FetchRequest(entityName: entity)
                dictionaries.resultType = .dictionaries
                dictionaries.propertiesToFetch = ((model.attributes(ofEntity: entity) ?? []).map(\.name)
                    + (model.relationships(ofEntity: entity) ?? []).filter { !$0.isToMany }.map(\.name)).map(FetchProperty.key)
                dictionaries.fetchLimit = 500
                _ = try? context.fetchDictionaries(dictionaries)
                guard let objects = try? context.fetchResults(request, as: ManagedObject.self) else { continue }
                for object in objects {
                    for attribute in model.attributes(ofEntity: entity) ?? [] { _ = object.value(forKey: attribute.name) }
                    for relationship in model.relationships(ofEntity: entity) ?? [] { _ = object.objectIDs(forRelationshipNamed: relationship.name) }
                }
            }
        }
    }
}
