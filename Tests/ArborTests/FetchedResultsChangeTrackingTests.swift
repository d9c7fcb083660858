import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Random inserts, renames (moves between and within sections), deletes, saves, rollbacks and
/// merged saves of another context: after each, the reported changes applied to the previous
/// sections must give exactly what a fresh fetch gives.
@Suite("FetchedResultsController change tracking against fresh fetches")
struct FetchedResultsChangeTrackingTests {
    static let names = ["Aa", "Ab", "Ba", "Bb", "Bc", "Ca", "Da", "Db"]

    static func layout(_ controller: FetchedResultsControllerBase, item: (FetchedResultsControllerBase, IndexPath) -> String)
        -> [(name: String, items: [String])] {
        (controller.sections ?? []).enumerated().map { index, section in
            (section.name, (0..<section.numberOfObjects).map { item(controller, IndexPath(indexes: [index, $0])) })
        }
    }

    static func same(_ a: [(name: String, items: [String])], _ b: [(name: String, items: [String])]) -> Bool {
        a.map(\.name) == b.map(\.name) && a.map(\.items) == b.map(\.items)
    }

    static func stopItem(_ controller: FetchedResultsControllerBase, _ path: IndexPath) -> String {
        guard let controller = controller as? FetchedResultsController<Stop> else { return "?" }
        return String(controller.object(at: path).identifier)
    }

    @Test("stops sectioned by first letter, random changes here and merged from another context", arguments: 0..<10)
    func randomStopChanges(seed: UInt64) throws {
        let stack = try TestStack()
        let view = stack.context(), writer = stack.context()
        view.mergePolicy = .objectTrumps
        var random = SplitMix64(seed: 0xF4C &+ seed)
        var nextIdentifier: Int64 = 0
        func makeStop(_ context: ManagedObjectContext, _ random: inout SplitMix64) {
            nextIdentifier += 1
            let stop = Stop(context: context)
            stop.name = Self.names[Int(random.next() % UInt64(Self.names.count))]
            stop.identifier = nextIdentifier
            stop.stopID = "S\(nextIdentifier)"
            stop.latitude = 0
            stop.longitude = 0
        }
        try view.performAndWait {
            for _ in 0..<12 { makeStop(view, &random) }
            try view.save()
        }
        let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name"), ObjectSortDescriptor("identifier")])
        let delegate = RecordingDelegate()
        let controller = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "name")
        try view.performAndWait {
            controller.sectionName = FetchedResultsControllerTests.firstLetter
            controller.delegate = delegate
            try controller.performFetch()
            delegate.state = Self.layout(controller, item: Self.stopItem)
            delegate.itemAt = Self.stopItem
        }
        var log: [String] = []
        for step in 0..<80 {
            let operation = Int(random.next() % 8)
            try view.performAndWait {
                let stops = try view.fetch(request, as: Stop.self)
                let pick = stops.isEmpty ? nil : stops[Int(random.next() % UInt64(stops.count))]
                switch operation {
                case 0, 1:
                    makeStop(view, &random)
                    log.append("insert")
                case 2, 3:
                    pick?.name = Self.names[Int(random.next() % UInt64(Self.names.count))]
                    log.append("rename \(pick?.identifier ?? -1)")
                case 4:
                    if let pick { view.delete(pick) }
                    log.append("delete \(pick?.identifier ?? -1)")
                case 5:
                    do { try view.save() } catch { view.rollback() }
                    log.append("save")
                case 6:
                    view.rollback()
                    log.append("rollback")
                default:
                    log.append("writer")
                }
            }
            if operation == 7 {
                let received = Locked<[ContextDidSave]>([])
                let observation = stack.coordinator.addDidSaveObserver { notification in received.withLock { $0.append(notification) } }
                try writer.performAndWait {
                    let stops = try writer.fetch(request, as: Stop.self)
                    if !stops.isEmpty, random.next() % 2 == 0 {
                        let stop = stops[Int(random.next() % UInt64(stops.count))]
                        if random.next() % 3 == 0 { writer.delete(stop) } else { stop.name = Self.names[Int(random.next() % UInt64(Self.names.count))] }
                    } else {
                        makeStop(writer, &random)
                    }
                    try writer.save()
                }
                observation.cancel()
                view.performAndWait {
                    for notification in received.withLock({ $0 }) { view.mergeChanges(fromContextDidSave: notification) }
                }
            }
            try view.performAndWait {
                let fresh = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "name")
                fresh.sectionName = FetchedResultsControllerTests.firstLetter
                try fresh.performFetch()
                let expected = Self.layout(fresh, item: Self.stopItem)
                let live = Self.layout(controller, item: Self.stopItem)
                #expect(Self.same(live, expected), "seed \(seed) step \(step): controller \(live) vs fresh \(expected)\n\(log.suffix(8))")
                let applied = delegate.state ?? []
                #expect(Self.same(applied, expected), "seed \(seed) step \(step): applied \(applied) vs fresh \(expected)\n\(log.suffix(8))")
                delegate.state = expected
            }
        }
    }

    static func timeItem(_ controller: FetchedResultsControllerBase, _ path: IndexPath) -> String {
        guard let controller = controller as? FetchedResultsController<StopTime> else { return "?" }
        return String(Int(controller.object(at: path).arrivalTime.timeIntervalSince1970))
    }

    @Test("stop times sectioned by stop.name: reassigned stops, changed times, inserts and deletes", arguments: 0..<6)
    func randomStopTimeChanges(seed: UInt64) throws {
        let stack = try TestStack()
        let view = stack.context(), writer = stack.context()
        var random = SplitMix64(seed: 0x57_0000 &+ seed)
        var serial = 0
        func makeTime(_ context: ManagedObjectContext, _ stops: [Stop], _ random: inout SplitMix64) {
            serial += 1
            let time = StopTime(context: context)
            time.arrivalTime = Date(timeIntervalSince1970: Double(serial))  // identifies the object
            time.departureTime = Date(timeIntervalSince1970: Double(random.next() % 20) * 60)
            time.stop = stops[Int(random.next() % UInt64(stops.count))]
        }
        let stopRequest = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("identifier")])
        try view.performAndWait {
            let stops = ["Mitte", "Alex", "Zoo", "Mitte"].enumerated().map { FetchedResultsControllerTests.stop(view, $0.element, Int64($0.offset)) }
            for _ in 0..<20 { makeTime(view, stops, &random) }
            try view.save()
        }
        let sorts = [ObjectSortDescriptor("stop.name"), ObjectSortDescriptor("departureTime")]
        let request = FetchRequest(entityName: "StopTime", sortDescriptors: sorts)
        let delegate = RecordingDelegate()
        let controller = FetchedResultsController<StopTime>(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "stop.name")
        try view.performAndWait {
            controller.delegate = delegate
            try controller.performFetch()
            delegate.state = Self.layout(controller, item: Self.timeItem)
            delegate.itemAt = Self.timeItem
        }
        for step in 0..<60 {
            let operation = Int(random.next() % 7)
            if operation == 6 {
                let received = Locked<[ContextDidSave]>([])
                let observation = stack.coordinator.addDidSaveObserver { notification in received.withLock { $0.append(notification) } }
                try writer.performAndWait {
                    let stops = Array(try writer.fetch(stopRequest, as: Stop.self))
                    let times = try writer.fetch(request, as: StopTime.self)
                    if let time = times.randomElement(using: &random), random.next() % 2 == 0 {
                        time.departureTime = Date(timeIntervalSince1970: Double(random.next() % 20) * 60)
                    } else {
                        makeTime(writer, stops, &random)
                    }
                    try writer.save()
                }
                observation.cancel()
                view.performAndWait {
                    for notification in received.withLock({ $0 }) { view.mergeChanges(fromContextDidSave: notification) }
                }
            } else {
                try view.performAndWait {
                    let stops = Array(try view.fetch(stopRequest, as: Stop.self))
                    let times = try view.fetch(request, as: StopTime.self)
                    let pick = times.isEmpty ? nil : times[Int(random.next() % UInt64(times.count))]
                    switch operation {
                    case 0: makeTime(view, stops, &random)
                    case 1: pick?.stop = stops[Int(random.next() % UInt64(stops.count))]
                    case 2: pick?.departureTime = Date(timeIntervalSince1970: Double(random.next() % 20) * 60)
                    case 3: if let pick { view.delete(pick) }
                    case 4: do { try view.save() } catch { view.rollback() }
                    default: view.rollback()
                    }
                }
            }
            try view.performAndWait {
                let fresh = FetchedResultsController<StopTime>(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "stop.name")
                try fresh.performFetch()
                let expected = Self.layout(fresh, item: Self.timeItem)
                #expect(Self.same(Self.layout(controller, item: Self.timeItem), expected), "seed \(seed) step \(step)")
                #expect(Self.same(delegate.state ?? [], expected), "seed \(seed) step \(step): applied \(delegate.state ?? []) vs \(expected)")
                delegate.state = expected
            }
        }
    }
}
