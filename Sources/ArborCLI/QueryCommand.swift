import Arbor
import ArgumentParser
import Foundation

/// `arbor query FILE ENTITY --where PREDICATE`: a fetch, with its plan and cost.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run a fetch: print the objects, the plan, the rows examined and the time.",
        discussion: """
            Examples:
              arbor query transit.arbor Stop --where 'name BEGINSWITH[cd] "u gorli"'
              arbor query transit.arbor Stop --where 'name WORDSBEGINWITH[cd] "bahn gorli"' --explain
              arbor query transit.arbor Stop --where 'longitude BETWEEN {13.40, 13.42} AND latitude BETWEEN {52.51, 52.53}' --sort name --limit 10
              arbor query transit.arbor StopTime --where 'departureTime < CAST(-978278400, "NSDate")' --explain
              arbor query transit.arbor Stop --where 'normalizedName BEGINSWITH "alex"' --properties name,latitude,longitude --explain
            With --properties, the rows are read as values from their stored columns (dictionary
            results): no objects are made, and the plan ends with that step.
            With --json, standard output is the array of objects alone (as arbor dump --json).
            """)

    @OptionGroup var store: StoreOptions
    @Argument(help: "The entity to fetch.") var entity: String
    @Option(name: .customLong("where"), help: "A predicate in NSPredicate syntax.") var predicate: String?
    @Option(help: "Sort key, ascending; KEY:desc for descending. Repeat for ties.") var sort: [String] = []
    @Option(help: "At most this many objects.") var limit: Int?
    @Option(help: "Only these properties, comma-separated (attributes or to-one relationships), read as values.") var properties: String?
    @Flag(help: "Print the plan and counts only, not the objects.") var explain = false

    func run() throws {
        let access = try ObjectStoreAccess.open(store)
        let names = properties.map { $0.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        try Self.query(access, entity: entity, predicate: predicate, sort: sort, limit: limit, properties: names, explain: explain, options: store)
    }

    static func request(_ access: ObjectStoreAccess, entity: String, predicate: String?, sort: [String], limit: Int?) throws -> FetchRequest {
        guard access.model.attributes(ofEntity: entity) != nil else {
            throw usageError("no entity \(entity); the store has \(access.model.entityNames.joined(separator: ", "))")
        }
        var request = FetchRequest(entityName: entity)
        do { request.predicate = try predicate.map { try ObjectPredicate(format: $0) } } catch { throw usageError("--where: \(error)") }
        request.sortDescriptors = try sort.map { key in
            let parts = key.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let name = parts.first, !name.isEmpty, parts.count == 1 || ["asc", "desc"].contains(parts[1].lowercased()) else {
                throw usageError("--sort \(key): expected KEY, KEY:asc or KEY:desc")
            }
            return ObjectSortDescriptor(name, ascending: parts.count == 1 || parts[1].lowercased() == "asc")
        }
        if let limit { request.fetchLimit = max(limit, 0) }
        request.returnsObjectsAsFaults = false
        return request
    }

    static func query(_ access: ObjectStoreAccess, entity: String, predicate: String?, sort: [String], limit: Int?,
                      properties: [String] = [], explain: Bool,
                      options: StoreOptions, write: @escaping (String) -> Void = { print($0, terminator: "") }) throws {
        var request = try Self.request(access, entity: entity, predicate: predicate, sort: sort, limit: limit)
        let known = Set(access.columns(of: entity).map(\.name))
        if let unknown = properties.first(where: { !known.contains($0) }) {
            throw usageError("--properties: \(entity) has no attribute or to-one relationship \(unknown.isEmpty ? "named ''" : unknown); it has \(known.sorted().joined(separator: ", "))")
        }
        if !properties.isEmpty {
            request.resultType = .dictionaries
            request.propertiesToFetch = properties.map(FetchProperty.key)
        }
        let context = access.context
        try context.performAndWait {
            do {
                if !properties.isEmpty && !explain {
                    try values(request, properties, context: context, options: options, write: write)
                    return
                }
                if explain {
                    for statistics in try context.explain(request) { write(Self.describe(statistics) + "\n") }
                    return
                }
                let started = ContinuousClock.now
                let objects = try context.fetch(request)
                let elapsed = ContinuousClock.now - started
                let columns = access.columns(of: entity)
                var printer = RowPrinter(format: options.json ? .json : .table, header: ["id"] + columns.map(\.name), write: write)
                printer.begin()
                for object in objects { printer.row(access.cells(of: object, columns)) }
                printer.end()
                if !options.json {
                    // The plan runs again for its counts: cheap next to printing the rows.
                    for statistics in try context.explain(request) { write(Self.describe(statistics) + "\n") }
                    write("\(objects.count) object\(objects.count == 1 ? "" : "s") in \(Self.milliseconds(elapsed))\n")
                }
            } catch let error as ObjectPredicateError {
                throw usageError("--where: \(error)")
            } catch let error as ContextError {
                throw usageError("\(error)")
            } catch {
                throw options.fail(error)
            }
        }
    }

    /// Prints the dictionaries `request` finds, a column per property.
    private static func values(_ request: FetchRequest, _ properties: [String], context: ManagedObjectContext, options: StoreOptions,
                               write: @escaping (String) -> Void) throws {
        let started = ContinuousClock.now
        let rows = try context.fetchDictionaries(request)
        let elapsed = ContinuousClock.now - started
        var printer = RowPrinter(format: options.json ? .json : .table, header: properties, write: write)
        printer.begin()
        for row in rows { printer.row(properties.map { Cell(row[$0]) }) }
        printer.end()
        if !options.json {
            for statistics in try context.explain(request) { write(Self.describe(statistics) + "\n") }
            write("\(rows.count) row\(rows.count == 1 ? "" : "s") in \(Self.milliseconds(elapsed))\n")
        }
    }

    static func describe(_ statistics: FetchStatistics) -> String {
        var text = "plan: \(statistics.plan)"
        if let valuePath = statistics.valuePath { text += "\nTHEN \(valuePath)" }
        text += "\n\(statistics.counts)"
        if let suggestion = statistics.suggestion { text += "\nhint: \(suggestion)" }
        return text
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
