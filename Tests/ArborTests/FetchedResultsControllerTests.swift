import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Records what a controller reports, in order.
final class RecordingDelegate: FetchedResultsControllerDelegate {
    var calls: [String] = []
    var sectionChanges: [(type: FetchedResultsChangeType, index: Int, name: String)] = []
    var objectChanges: [(type: FetchedResultsChangeType, old: IndexPath?, new: IndexPath?)] = []

    func controllerWillChangeContent(_ controller: FetchedResultsControllerBase) {
        calls.append("will")
        sectionChanges = []
        objectChanges = []
    }

    func controller(_ controller: FetchedResultsControllerBase, didChange section: FetchedResultsSection,
                    atSectionIndex index: Int, for type: FetchedResultsChangeType) {
        calls.append("section \(type) \(index)")
        sectionChanges.append((type, index, section.name))
    }

    func controller(_ controller: FetchedResultsControllerBase, didChange object: ManagedObject, at indexPath: IndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
        calls.append("object \(type)")
        objectChanges.append((type, indexPath, newIndexPath))
    }

    func controllerDidChangeContent(_ controller: FetchedResultsControllerBase) {
        calls.append("did")
        if let state, let itemAt { self.state = apply(to: state) { itemAt(controller, $0) } }
    }

    /// When set, each batch of changes is applied to `state` as it is reported.
    var state: [(name: String, items: [String])]?
    var itemAt: ((FetchedResultsControllerBase, IndexPath) -> String)?

    /// `previous` (section names and their items) with the recorded changes applied as a list
    /// UI applies a batch; `itemAt` gives the item at a new index path.
    func apply<Item>(to previous: [(name: String, items: [Item])], itemAt: (IndexPath) -> Item) -> [(name: String, items: [Item])] {
        var sections = previous
        let removals = objectChanges.filter { $0.type == .delete || $0.type == .move }.compactMap(\.old)
            .sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }
        for path in removals { sections[path[0]].items.remove(at: path[1]) }
        for change in sectionChanges.filter({ $0.type == .delete }).sorted(by: { $0.index > $1.index }) { sections.remove(at: change.index) }
        for change in sectionChanges.filter({ $0.type == .insert }).sorted(by: { $0.index < $1.index }) {
            sections.insert((change.name, []), at: change.index)
        }
        let insertions = objectChanges.filter { $0.type == .insert || $0.type == .move }.compactMap(\.new)
            .sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }
        for path in insertions { sections[path[0]].items.insert(itemAt(path), at: path[1]) }
        return sections
    }
}

@Suite("FetchedResultsController: sections, index titles, errors, key paths through relationships")
struct FetchedResultsControllerTests {
    static func stop(_ context: ManagedObjectContext, _ name: String, _ identifier: Int64) -> Stop {
        let stop = Stop(context: context)
        stop.name = name
        stop.stopID = "S\(identifier)"
        stop.identifier = identifier
        stop.latitude = 52
        stop.longitude = 13
        return stop
    }

    /// Sections by first letter.
    static func firstLetter(_ value: AttributeValue) -> String {
        if case .string(let text) = value { return String(text.prefix(1)) }
        return ""
    }

    static func layout(_ controller: FetchedResultsController<Stop>) -> [String] {
        (controller.sections ?? []).map { section in
            "\(section.name):" + section.objects.compactMap { ($0 as? Stop)?.name }.joined(separator: ",")
        }
    }

    @Test("sections by first letter, index titles, object(at:), indexPath(forObject:)")
    func sectionsAndIndex() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            for (index, name) in ["Bernau", "alpha", "Buch", "Adlershof", "Zoo", "Alt-Mariendorf"].enumerated() {
                _ = Self.stop(context, name, Int64(index))
            }
            try context.save()
            let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")])
            let controller = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "name")
            controller.sectionName = Self.firstLetter
            #expect(controller.sections == nil)
            try controller.performFetch()
            #expect(Self.layout(controller) == ["A:Adlershof,Alt-Mariendorf", "B:Bernau,Buch", "Z:Zoo", "a:alpha"])
            #expect(controller.sectionIndexTitles == ["A", "B", "Z"])
            #expect(controller.sections?.map(\.indexTitle) == ["A", "B", "Z", "A"])
            #expect(controller.section(forSectionIndexTitle: "B", at: 1) == 1)
            let buch = controller.object(at: IndexPath(indexes: [1, 1]))
            #expect(buch.name == "Buch")
            #expect(controller.indexPath(forObject: buch) == IndexPath(indexes: [1, 1]))
            #expect(controller.fetchedObjects?.map(\.name).count == 6)
            controller.sectionIndexTitle = { name in name.lowercased() }
            #expect(controller.sectionIndexTitles == ["a", "b", "z"])
        }
    }

    @Test("a missing sort descriptor and a section key path that is not the first sort key are errors naming both")
    func errors() throws {
        let stack = try TestStack()
        let context = stack.context()
        context.performAndWait {
            let unsorted = FetchedResultsController<Stop>(fetchRequest: FetchRequest(entityName: "Stop"), managedObjectContext: context)
            #expect(throws: FetchedResultsError.missingSortDescriptors(entity: "Stop")) { try unsorted.performFetch() }
            let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("identifier")])
            let mismatched = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "name")
            let error = #expect(throws: FetchedResultsError.self) { try mismatched.performFetch() }
            #expect(error == .sectionKeyPathNotFirstSort(sectionNameKeyPath: "name", firstSortKeyPath: "identifier"))
            #expect(error?.description.contains("name") == true && error?.description.contains("identifier") == true)
            var unknown = request
            unknown.sortDescriptors = [ObjectSortDescriptor("nope")]
            let bad = FetchedResultsController<Stop>(fetchRequest: unknown, managedObjectContext: context)
            #expect(throws: ObjectPredicateError.self) { try bad.performFetch() }
        }
    }

    @Test("sections through a to-one relationship (stop.name): the index path and the general path agree")
    func sectionsThroughRelationship() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            let stops = ["Mitte", "Alex", "Mitte", "Zoo"].enumerated().map { Self.stop(context, $0.element, Int64($0.offset)) }
            var random = SplitMix64(seed: 7)
            for index in 0..<60 {
                let time = StopTime(context: context)
                time.departureTime = Date(timeIntervalSince1970: Double(random.next() % 50) * 60)
                time.arrivalTime = time.departureTime
                time.stop = stops[index % 3 == 0 ? 3 : Int(random.next() % 3)]
            }
            try context.save()
            let sorts = [ObjectSortDescriptor("stop.name"), ObjectSortDescriptor("departureTime")]
            let fast = FetchedResultsController<StopTime>(fetchRequest: FetchRequest(entityName: "StopTime", sortDescriptors: sorts),
                                                          managedObjectContext: context, sectionNameKeyPath: "stop.name")
            try fast.performFetch()
            // TRUEPREDICATE takes the general path (a fetch with sort values).
            let general = FetchedResultsController<StopTime>(
                fetchRequest: FetchRequest(entityName: "StopTime", predicate: .true, sortDescriptors: sorts),
                managedObjectContext: context, sectionNameKeyPath: "stop.name")
            try general.performFetch()
            #expect(fast.sections?.map(\.name) == ["Alex", "Mitte", "Zoo"])
            #expect(fast.fetchedObjectIDs == general.fetchedObjectIDs)
            #expect(fast.sections?.map(\.numberOfObjects) == general.sections?.map(\.numberOfObjects))
            #expect(fast.sections?.map(\.numberOfObjects).reduce(0, +) == 60)
            let times = fast.fetchedObjects?.map(\.departureTime) ?? []
            let mitte = Array(times[(fast.sections?[0].numberOfObjects ?? 0)..<((fast.sections?[0].numberOfObjects ?? 0) + (fast.sections?[1].numberOfObjects ?? 0))])
            #expect(mitte == mitte.sorted())
        }
    }

    @Test("the delegate hears will-change, section and object changes, did-change; unrelated entities are ignored")
    func delegateSequence() throws {
        let stack = try TestStack()
        let context = stack.context()
        let delegate = RecordingDelegate()
        let controller = try context.performAndWait { () throws -> FetchedResultsController<Stop> in
            _ = Self.stop(context, "Alpha", 1)
            try context.save()
            let request = FetchRequest(entityName: "Stop", sortDescriptors: [ObjectSortDescriptor("name")])
            let controller = FetchedResultsController<Stop>(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "name")
            controller.sectionName = Self.firstLetter
            controller.delegate = delegate
            try controller.performFetch()
            return controller
        }
        context.performAndWait { _ = Self.stop(context, "Beta", 2) }
        #expect(delegate.calls == ["will", "section insert 1", "object insert", "did"])
        delegate.calls = []
        context.performAndWait {
            let sample = Sample(context: context)
            sample.string = "unrelated"
        }
        #expect(delegate.calls.isEmpty)
        _ = controller
    }
}
