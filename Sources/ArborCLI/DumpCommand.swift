import Arbor
import ArgumentParser
import Foundation

/// `arbor dump FILE [ENTITY]`: the objects of a store, without the app's code.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print objects: every attribute and to-one relationship (as Entity/primaryKey).",
        discussion: """
            Without ENTITY, every entity is dumped in turn. JSON output is an array of objects keyed by \
            property name, with "id" first; relationships are "Entity/primaryKey" strings.
            Examples:
              arbor dump transit.arbor Stop --where 'name BEGINSWITH[cd] "u gorli"'
              arbor dump transit.arbor StopTime --limit 5 --format csv
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The entity to dump (all when omitted).") var entity: String?
    @Option(name: .customLong("where"), help: "A predicate in NSPredicate syntax.") var predicate: String?
    @Option(help: "At most this many objects per entity.") var limit: Int?
    @Option(help: "table, json or csv.") var format: RowPrinter.Format = .table

    func run() throws {
        let access = try ObjectStoreAccess.open(store)
        try Self.dump(access, entity: entity, predicate: predicate, limit: limit, format: store.json ? .json : format, options: store)
    }

    static func dump(_ access: ObjectStoreAccess, entity: String?, predicate: String?, limit: Int?, format: RowPrinter.Format,
                     options: StoreOptions, write: @escaping (String) -> Void = { print($0, terminator: "") }) throws {
        let entities = entity.map { [$0] } ?? access.model.entityNames
        guard entities.allSatisfy({ access.model.attributes(ofEntity: $0) != nil }) else {
            throw usageError("no entity \(entity ?? "") in \(options.file); it has \(access.model.entityNames.joined(separator: ", "))")
        }
        let parsed: ObjectPredicate?
        do { parsed = try predicate.map { try ObjectPredicate(format: $0) } } catch { throw usageError("--where: \(error)") }
        // All entities as JSON: one object, an array per entity.
        let wrapped = entity == nil && format == .json
        if wrapped { write("{") }
        try access.context.performAndWait {
            for (position, name) in entities.enumerated() {
                if entity == nil && format == .table { write("\(name)\n") }
                if wrapped { write((position == 0 ? "\n" : ",\n") + Cell.jsonString(name) + ": ") }
                var request = FetchRequest(entityName: name, predicate: parsed)
                request.includesSubentities = entity != nil
                request.fetchBatchSize = 500
                if let limit { request.fetchLimit = max(limit, 0) }
                let columns = access.columns(of: name)
                var printer = RowPrinter(format: format, header: ["id"] + columns.map(\.name), write: write)
                printer.begin()
                do {
                    for object in try access.context.fetchResults(request, as: ManagedObject.self) {
                        printer.row(access.cells(of: object, columns))
                    }
                } catch let error as ObjectPredicateError {
                    throw usageError("--where: \(error)")
                } catch {
                    throw options.fail(error)
                }
                printer.end()
                if entity == nil && format == .table { write("\n") }
            }
        }
        if wrapped { write("}\n") }
    }
}
