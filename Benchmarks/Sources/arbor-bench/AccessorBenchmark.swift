import Arbor
import ArgumentParser
import Foundation

/// A stop declared with `@Entity`: accessors read the slot by position.
@Entity("Stop")
final class DeclaredAccessorStop: ManagedObject {
    var identifier: Int64 = 0
    var name: String = ""
    var latitude: Double = 0
}

/// The same stop written by hand: `@Attribute("key")` accessors find the slot by the property's
/// key path (the path the property wrappers took before `@Entity`).
final class KeyedAccessorStop: ManagedObject {
    @Attribute("identifier") var identifier: Int64
    @Attribute("name") var name: String
    @Attribute("latitude") var latitude: Double
}

/// Hidden: property reads of filled objects through both kinds of accessors, for wall clock and
/// for callgrind (`--toggle-collect='*readDeclared*'` and `'*readKeyed*'`; instructions per read
/// are the count over objects × rounds × 3).
struct AccessorBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "accessors", shouldDisplay: false)
    @Option var objects = 10_000
    @Option var rounds = 100

    func run() throws {
        let declaredModel = try ManagedObjectModel(types: [DeclaredAccessorStop.self])
        let keyedModel = try ManagedObjectModel(entities: [
            EntityDescription("Stop", class: KeyedAccessorStop.self, attributes: [
                AttributeDescription("identifier", .int64, defaultValue: .int(0)),
                AttributeDescription("name", .string, defaultValue: .string("")),
                AttributeDescription("latitude", .double, defaultValue: .double(0)),
            ]),
        ])
        guard declaredModel.versionHash == keyedModel.versionHash else { throw BenchError.wrongAnswer("the two models differ") }
        let declared = try filled(declaredModel, as: DeclaredAccessorStop.self)
        let keyed = try filled(keyedModel, as: KeyedAccessorStop.self)
        let reads = Double(objects * rounds * 3)
        var sums = (0, 0)
        let declaredSeconds = Clock.seconds { sums.0 = declared.context.performAndWait { Self.readDeclared(declared.objects, rounds: rounds) } }
        let keyedSeconds = Clock.seconds { sums.1 = keyed.context.performAndWait { Self.readKeyed(keyed.objects, rounds: rounds) } }
        guard sums.0 == sums.1 else { throw BenchError.wrongAnswer("the accessors read different values") }
        print(String(format: "@Entity accessors: %.1f ns a read; @Attribute(\"key\") accessors: %.1f ns a read (%d reads each)",
                     declaredSeconds / reads * 1e9, keyedSeconds / reads * 1e9, Int(reads)))
    }

    /// `objects` stops inserted into an in-memory store, saved, and fetched back filled.
    func filled<T: ManagedObject>(_ model: ManagedObjectModel, as type: T.Type) throws -> (context: ManagedObjectContext, objects: [T]) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(with: .inMemory())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let fetched: [T] = try context.performAndWait {
            for index in 0..<objects {
                let stop = try context.insertNewObject(forEntityName: "Stop")
                stop.setValue(AttributeValue.int(Int64(index)), forKey: "identifier")
                stop.setValue(AttributeValue.string("Stop \(index)"), forKey: "name")
                stop.setValue(AttributeValue.double(52 + Double(index) / 1e5), forKey: "latitude")
            }
            try context.save()
            var request = FetchRequest(entityName: "Stop")
            request.returnsObjectsAsFaults = false
            return Array(try context.fetch(request, as: T.self))
        }
        return (context, fetched)
    }

    @inline(never)
    static func readDeclared(_ stops: [DeclaredAccessorStop], rounds: Int) -> Int {
        var sum = 0
        for _ in 0..<rounds {
            for stop in stops { sum &+= Int(stop.identifier) &+ stop.name.utf8.count &+ Int(stop.latitude) }
        }
        return sum
    }

    @inline(never)
    static func readKeyed(_ stops: [KeyedAccessorStop], rounds: Int) -> Int {
        var sum = 0
        for _ in 0..<rounds {
            for stop in stops { sum &+= Int(stop.identifier) &+ stop.name.utf8.count &+ Int(stop.latitude) }
        }
        return sum
    }
}
