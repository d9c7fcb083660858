@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Random chains of lightweight migrations checked against a plain model of the data: after
/// each one, the store must hold exactly the rows the model says, with consistent indexes.
@Suite("Random lightweight migrations against a reference")
struct MigrationDifferentialTests {
    /// One attribute of the evolving entity, as the reference sees it.
    struct Column: Equatable {
        var name: String
        var isString: Bool
        var isOptional: Bool
        var defaultValue: AttributeValue?
        var isIndexed: Bool
        var renamedFrom: String?

        var description: AttributeDescription {
            AttributeDescription(name, isString ? .string : .int64, optional: isOptional, defaultValue: defaultValue,
                                 indexed: isIndexed, renamingIdentifier: renamedFrom)
        }
    }

    struct Reference {
        var entity = "Item"
        var renamedFrom: String?
        var columns: [Column] = []
        /// Rows in insertion order: column name → value.
        var rows: [[String: AttributeValue]] = []
        var serial = 0

        func model() throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(entity, attributes: [AttributeDescription("serial", .int64)] + columns.map(\.description),
                                  renamingIdentifier: renamedFrom),
                EntityDescription("Other", attributes: [AttributeDescription("value", .int64)]),
            ])
        }
    }

    static func randomValue(_ column: Column, _ random: inout SplitMix64) -> AttributeValue {
        if column.isOptional && random.next() % 4 == 0 { return .null }
        let number = Int64(random.next() % 7)
        return column.isString ? .string("v\(number)") : .int(number)
    }

    /// One random model change, applied to the reference (rows included).
    static func evolve(_ reference: inout Reference, _ random: inout SplitMix64) -> String {
        for index in reference.columns.indices { reference.columns[index].renamedFrom = nil }
        reference.renamedFrom = nil
        let choice = reference.columns.isEmpty ? 0 : Int(random.next() % 6)
        reference.serial += 1
        switch choice {
        case 0:
            let optional = random.next() % 2 == 0
            var column = Column(name: "c\(reference.serial)", isString: random.next() % 2 == 0, isOptional: optional,
                                defaultValue: nil, isIndexed: random.next() % 3 == 0)
            if !optional || random.next() % 2 == 0 { column.defaultValue = column.isString ? .string("d\(reference.serial)") : .int(Int64(reference.serial)) }
            reference.columns.append(column)
            for row in reference.rows.indices { reference.rows[row][column.name] = column.defaultValue ?? .null }
            return "add \(column.name)"
        case 1:
            let column = reference.columns.remove(at: Int(random.next() % UInt64(reference.columns.count)))
            for row in reference.rows.indices { reference.rows[row][column.name] = nil }
            return "remove \(column.name)"
        case 2:
            let index = Int(random.next() % UInt64(reference.columns.count))
            let old = reference.columns[index].name
            let new = "r\(reference.serial)"
            reference.columns[index].name = new
            reference.columns[index].renamedFrom = old
            for row in reference.rows.indices { reference.rows[row][new] = reference.rows[row].removeValue(forKey: old) }
            return "rename \(old) to \(new)"
        case 3:
            guard let index = reference.columns.firstIndex(where: \.isOptional) else { return "nothing optional" }
            let fill: AttributeValue = reference.columns[index].isString ? .string("f\(reference.serial)") : .int(-Int64(reference.serial))
            reference.columns[index].isOptional = false
            reference.columns[index].defaultValue = fill
            let name = reference.columns[index].name
            for row in reference.rows.indices where reference.rows[row][name] == .null { reference.rows[row][name] = fill }
            return "require \(name)"
        case 4:
            let index = Int(random.next() % UInt64(reference.columns.count))
            reference.columns[index].isIndexed.toggle()
            return "toggle index on \(reference.columns[index].name)"
        default:
            let old = reference.entity
            reference.entity = old == "Item" ? "Thing" : "Item"
            reference.renamedFrom = old
            return "rename entity \(old) to \(reference.entity)"
        }
    }

    /// Seeds 9 and up make a store of key format 1 (fixed int64 keys): migrations keep it.
    @Test("chains of 12 migrations with rows inserted between them", arguments: 0..<12)
    func randomChain(seed: UInt64) throws {
        var options = PersistentStore.Options()
        if seed >= 9 { options.keyFormat = 1 }
        var random = SplitMix64(seed: 0x316_0000 &+ seed)
        var reference = Reference()
        let file = SimulatedFile()
        var log: [String] = []
        for step in 0..<12 {
            let model = try reference.model()
            let store = try PersistentStore(file: file, model: model, options: options)
            #expect(try store.btree().keys.format == (seed >= 9 ? 1 : 2))
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.add(store)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                // What the store holds must be what the reference says.
                let objects = try context.fetch(FetchRequest(entityName: reference.entity, sortDescriptors: [ObjectSortDescriptor("serial")]))
                let seen = objects.map { object in
                    Dictionary(uniqueKeysWithValues: reference.columns.map { column in
                        (column.name, AttributeValue(any: object.value(forKey: column.name)))
                    })
                }
                #expect(seen == reference.rows, "seed \(seed) step \(step) after \(log)")
                for _ in 0..<Int(random.next() % 40) {
                    let object = try context.insertNewObject(forEntityName: reference.entity)
                    object.setValue(Int64(reference.rows.count), forKey: "serial")
                    var row: [String: AttributeValue] = [:]
                    for column in reference.columns {
                        let value = Self.randomValue(column, &random)
                        object.setValue(value, forKey: column.name)
                        row[column.name] = value
                    }
                    reference.rows.append(row)
                }
                try context.save()
            }
            try MigrationFixture.expectConsistent(store)
            log.append(Self.evolve(&reference, &random))
        }
    }
}

extension AttributeValue {
    /// The value `value(forKey:)` returned, back as an attribute value (strings and integers).
    init(any: Any?) {
        switch any {
        case let text as String: self = .string(text)
        case let number as Int64: self = .int(number)
        default: self = .null
        }
    }
}
