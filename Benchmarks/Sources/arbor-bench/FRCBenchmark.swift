import Arbor
import ArborEngine
import ArgumentParser
import Foundation
import GRDB

/// `arbor-bench frc`: fetched results controllers on the transit store, with the SQL a Core Data
/// controller runs in SQLite (IDs in order, then section counts) as the peer where one exists.
struct FRCBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frc",
        abstract: "Fetched results controllers: stops by first letter, all stop times by stop, one change among 100,000 results.")

    @Option(help: "The GTFS directory (stops.txt, stop_times.txt).") var data = "/tmp/transit"
    @Option(name: .customLong("max-stop-times"), help: "Read at most this many stop times.") var maxStopTimes = Int.max
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-frc"
    @Option(help: "Write the results as JSON to this path.") var json: String?
    @Flag(help: "Reuse the stores of an earlier run in --directory.") var reuse = false
    @Option(help: "Repetitions of each measurement (the median is reported).") var repeats = 5

    final class ChangeCounter: FetchedResultsControllerDelegate {
        var changes = 0
        func controller(_ controller: FetchedResultsControllerBase, didChange object: ManagedObject, at indexPath: IndexPath?,
                        for type: FetchedResultsChangeType, newIndexPath: IndexPath?) { changes += 1 }
    }

    /// The first letter, capitalized (normalized names are folded to lower case ASCII mostly).
    static func firstLetter(_ value: AttributeValue) -> String {
        guard case .string(let text) = value, let first = text.unicodeScalars.first else { return "" }
        if first.value >= 0x61 && first.value <= 0x7A { return String(Character(Unicode.Scalar(UInt8(first.value - 0x20)))) }
        return String(Character(first)).uppercased()
    }

    func run() throws {
        let stores = try TransitStorePair(directory: directory, data: data, maxStopTimes: maxStopTimes, reuse: reuse, compound: true)
        let arbor = try ArborTransitSide(path: stores.arborPath, compound: true)
        let sqlite = try SQLiteTransitSide(path: stores.sqlitePath)
        var report = BenchReport()
        func add(_ name: String, _ arbor: Double, _ sqlite: Double, _ unit: String) {
            report.results.append(.init(name: name, arbor: arbor, sqlite: sqlite, unit: unit))
            print(String(format: "  %@: arbor %.3f, sqlite %.3f %@", name, arbor, sqlite, unit))
        }
        func median(_ body: () throws -> Void) rethrows -> Double {
            var times: [Double] = []
            for _ in 0..<repeats { times.append(try Clock.seconds(body) * 1000) }
            return Clock.median(times)
        }
        let context = arbor.container.newBackgroundContext()

        // 1. The 12,800 stops in sections by the first letter of their normalized name.
        var stopSections = 0
        let stopsArbor = try median {
            try context.performAndWait {
                let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("normalizedName")])
                let controller = FetchedResultsController<BenchStop>(fetchRequest: request, managedObjectContext: context,
                                                                     sectionNameKeyPath: "normalizedName")
                controller.sectionName = Self.firstLetter
                try controller.performFetch()
                stopSections = controller.sections?.count ?? 0
            }
        }
        var sqliteSections = 0
        let stopsSQLite = try median {
            try sqlite.pool.read { db in
                // Core Data: the IDs in order, then the section counts.
                _ = try Int64.fetchAll(db, sql: "SELECT Z_PK FROM ZSTOP ORDER BY ZNORMALIZEDNAME")
                sqliteSections = try Row.fetchAll(db, sql: "SELECT UPPER(SUBSTR(ZNORMALIZEDNAME, 1, 1)), COUNT(*) FROM ZSTOP GROUP BY 1").count
            }
        }
        print("stops: \(stopSections) sections (SQLite \(sqliteSections))")
        add("performFetch: stops by first letter", stopsArbor, stopsSQLite, "ms")

        // 2. Every stop time in sections by stop name, batches of 50.
        var timeSections = 0, timeCount = 0
        Memory.resetPeak()
        let before = Memory.residentMiB
        let timesArbor = try median {
            try context.performAndWait {
                var request = FetchRequest(entityName: "StopTime", sortDescriptors: [ObjectSortDescriptor("stop.name"), ObjectSortDescriptor("departureTime")])
                request.fetchBatchSize = 50
                let controller = FetchedResultsController<BenchStopTime>(fetchRequest: request, managedObjectContext: context,
                                                                         sectionNameKeyPath: "stop.name")
                try controller.performFetch()
                timeSections = controller.sections?.count ?? 0
                timeCount = controller.count
                _ = controller.object(at: IndexPath(indexes: [timeSections / 2, 0])).departureTime
            }
        }
        let growth = Memory.peakMiB - before
        let timesSQLite = try median {
            try sqlite.pool.read { db in
                _ = try Int64.fetchAll(db, sql: """
                    SELECT t.Z_PK FROM ZSTOPTIME t JOIN ZSTOP s ON t.ZSTOP = s.Z_PK ORDER BY s.ZNAME, t.ZDEPARTURETIME
                    """)
                _ = try Row.fetchAll(db, sql: "SELECT s.ZNAME, COUNT(*) FROM ZSTOPTIME t JOIN ZSTOP s ON t.ZSTOP = s.Z_PK GROUP BY s.ZNAME")
            }
        }
        print("stop times: \(timeCount) in \(timeSections) sections, peak memory growth \(String(format: "%.1f", growth)) MiB")
        add("performFetch: all stop times by stop name, batch 50", timesArbor, timesSQLite, "ms")
        report.results.append(.init(name: "performFetch: all stop times, peak memory growth", arbor: max(growth, 0.01), sqlite: 0, unit: "MiB"))

        // 3. One change among 100,000 results: merged from another context's save.
        let window = try context.performAndWait { () throws -> (Date, Date) in
            let request = FetchRequest(entityName: "StopTime", sortDescriptors: [ObjectSortDescriptor("departureTime")])
            let all = try context.fetchResults(request, as: BenchStopTime.self)
            let count = all.count
            let upper = all[min(count - 1, 100_000)].departureTime
            return (all[0].departureTime, upper)
        }
        let counter = ChangeCounter()
        var request = FetchRequest(entityName: "StopTime", sortDescriptors: [ObjectSortDescriptor("departureTime")])
        request.predicate = try ObjectPredicate(format: "departureTime < %@", window.1)
        request.fetchBatchSize = 50
        let controller = FetchedResultsController<BenchStopTime>(fetchRequest: request, managedObjectContext: context)
        try context.performAndWait {
            controller.delegate = counter
            try controller.performFetch()
        }
        let fetched = controller.count
        let writer = arbor.container.newBackgroundContext()
        var mergeTimes: [Double] = []
        for step in 0..<max(repeats, 3) {
            let received = Locked<[ContextDidSave]>([])
            let observation = arbor.container.persistentStoreCoordinator.addDidSaveObserver { n in received.withLock { $0.append(n) } }
            try writer.performAndWait {
                let ids = try writer.fetchObjectIDs(FetchRequest(entityName: "StopTime", predicate: request.predicate,
                                                                 sortDescriptors: [ObjectSortDescriptor("departureTime")]))
                guard let time = try writer.existingObject(with: ids[(step * 7_919) % ids.count]) as? BenchStopTime else { return }
                time.departureTime = window.0.addingTimeInterval(Double(step * 60))
                try writer.save()
            }
            observation.cancel()
            let notifications = received.withLock { $0 }
            mergeTimes.append(Clock.seconds {
                context.performAndWait { for notification in notifications { context.mergeChanges(fromContextDidSave: notification) } }
            } * 1000)
        }
        print("one merged change among \(fetched) results: \(counter.changes) object changes reported")
        report.results.append(.init(name: "one merged change among \(fetched) results", arbor: Clock.median(mergeTimes), sqlite: 0, unit: "ms"))
        print(String(format: "  one merged change among %d results: arbor %.3f ms (median)", fetched, Clock.median(mergeTimes)))
        if let json { try report.write(json: json) }
    }
}
