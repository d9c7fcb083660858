import Foundation

/// Builds results from IDs in order and their section names.
struct ResultsBuilder {
    var entries = ContiguousArray<CompactObjectID>()
    var unsaved: [ObjectID] = []
    var names: [String] = []
    var starts: [Int] = []
    private var seen: Set<String> = []
    let stores: [PersistentStore]
    let storeIndex: [UUID: Int32]
    let model: ManagedObjectModel

    init(stores: [PersistentStore], model: ManagedObjectModel) {
        self.stores = stores
        self.model = model
        storeIndex = Dictionary(stores.enumerated().map { ($0.element.identifier, Int32($0.offset)) }, uniquingKeysWith: { a, _ in a })
    }

    /// Starts a new section when `name` differs from the last one's.
    mutating func enter(_ name: String) throws {
        guard names.last != name || names.isEmpty else { return }
        guard seen.insert(name).inserted else { throw FetchedResultsError.sectionsOutOfOrder(section: name) }
        names.append(name)
        starts.append(entries.count)
    }

    /// Appends a stored object by its parts (no ID built, no store lookup).
    mutating func append(key: Int64, code: UInt16, store: Int32) {
        entries.append(CompactObjectID(key: key, code: code, store: store))
    }

    mutating func append(_ id: ObjectID) {
        if id.isTemporaryID {
            entries.append(CompactObjectID(key: Int64(unsaved.count), code: id.info.code, store: -1))
            unsaved.append(id)
        } else if let store = id.storeIdentifier.flatMap({ storeIndex[$0] }) {
            entries.append(CompactObjectID(key: id.primaryKey, code: id.info.code, store: store))
        }
    }

    /// The results; without sections, one section named "" (even when empty).
    func finish(sectioned: Bool) -> ComputedResults {
        var names = self.names, starts = self.starts
        if !sectioned {
            names = [""]
            starts = [0]
        }
        return ComputedResults(entries: entries, unsaved: unsaved, stores: stores, sectionNames: names, sectionStarts: starts, model: model)
    }
}

extension FetchedResultsControllerBase {
    /// The current results of the request: through an index when the sections follow one,
    /// otherwise through a fetch (IDs and sort values only, no objects).
    func computeResults() throws -> ComputedResults {
        let context = managedObjectContext
        guard let coordinator = context.persistentStoreCoordinator, let model = context.model else { throw ContextError.noPersistentStore }
        guard let info = model.info(named: fetchRequest.entityName) else { throw ContextError.unknownEntity(fetchRequest.entityName) }
        let stores = coordinator.persistentStores
        if canUseIndexes(context) {
            if let computed = try computeThroughToOne(info, model: model, stores: stores) { return computed }
            if let computed = try computeThroughIndex(info, model: model, stores: stores) { return computed }
        }
        var builder = ResultsBuilder(stores: stores, model: model)
        for row in try context.execute(fetchRequest).entries {
            if sectionNameKeyPath != nil { try builder.enter(sectionName(row.scalar(0))) }
            builder.append(row.id)
        }
        return builder.finish(sectioned: sectionNameKeyPath != nil)
    }

    /// Index paths apply only to the stored state of the whole entity, in its natural order.
    private func canUseIndexes(_ context: ManagedObjectContext) -> Bool {
        !fetchRequest.hasPredicate && fetchRequest.fetchLimit == 0 && fetchRequest.fetchOffset <= 0
            && fetchRequest.affectedStores == nil && sectionNameKeyPath != nil
            && !context.hasVisiblePendingChanges
    }

    /// Sections by `relationship.attribute` of a required to-one relationship: the destination
    /// objects in order, then each one's members from the foreign-key index — or from a
    /// (relationship, attribute) index when the second sort descriptor orders by that
    /// attribute — without reading a row of the fetched entity.
    private func computeThroughToOne(_ info: EntityInfo, model: ManagedObjectModel, stores: [PersistentStore]) throws -> ComputedResults? {
        let sorts = fetchRequest.sortDescriptors
        let path = sorts[0].keyPath.split(separator: ".").map(String.init)
        guard path.count == 2, let relationship = info.relationship(named: path[0]), relationship.kind == .toOne,
              !relationship.description.isOptional, relationship.foreignKeyTree != nil,
              let destination = model.info(named: relationship.destinationName), destination.attribute(named: path[1]) != nil,
              sorts.count <= 2 else { return nil }
        // The members' order within one destination: primary key, or an attribute through an index.
        var memberIndex: EntityInfo.Index?
        if sorts.count == 2 {
            let second = sorts[1]
            guard second.ascending, second.options.isEmpty, info.attribute(named: second.keyPath) != nil,
                  let index = info.indexes.first(where: { $0.properties == [relationship.description.name, second.keyPath] && !$0.isNormalized && !$0.isText })
            else { return nil }
            memberIndex = index
        }
        let codes = fetchRequest.includesSubentities ? info.descendantCodes : [info.code]
        var destinations = FetchRequest(entityName: destination.name, sortDescriptors: [ObjectSortDescriptor(path[1], ascending: sorts[0].ascending,
                                                                                                              options: sorts[0].options)])
        destinations.includesPendingChanges = false
        let owners = try managedObjectContext.execute(destinations).entries
        var builder = ResultsBuilder(stores: stores, model: model)
        var position = 0
        while position < owners.count {
            // Destinations with equal values share a section, and their members interleave.
            var end = position + 1
            while end < owners.count,
                  ValueOrder.compare(owners[end].scalar(0), owners[position].scalar(0), sorts[0].options) == .orderedSame { end += 1 }
            var members: [(order: [UInt8], key: Int64, code: UInt16, store: Int32)] = []
            for owner in owners[position..<end] {
                guard let storeIndex = owner.id.storeIdentifier.flatMap({ builder.storeIndex[$0] }) else { continue }
                let store = stores[Int(storeIndex)]
                guard store.holds(info) else { continue }
                guard let reader = store.storage.indexOrder else { return nil }
                try reader.forEachMember(through: relationship, owner: owner.id.primaryKey, orderedBy: memberIndex, codes: codes,
                                         root: info.rootCode) { order, key, code in
                    members.append((order, key, code, storeIndex))
                }
            }
            if end - position > 1 || memberIndex == nil {
                // One destination's foreign keys are in list order when its relationship is
                // ordered; the fetch order is the primary key's.
                members.sort { ($0.order.lexicographicallyPrecedes($1.order)) || ($0.order == $1.order && $0.key < $1.key) }
            }
            // Equal values under [c]/[d] with different names would name the objects' sections
            // one by one (interleaved): leave that to the general path.
            let name = sectionName(owners[position].scalar(0))
            if owners[position..<end].contains(where: { sectionName($0.scalar(0)) != name }) { return nil }
            if !members.isEmpty { try builder.enter(name) }
            for member in members { builder.append(key: member.key, code: member.code, store: member.store) }
            position = end
        }
        return builder.finish(sectioned: true)
    }

    /// Sections by an attribute with its own index, sorted by it alone, ascending: the index
    /// in key order gives the objects and their values.
    private func computeThroughIndex(_ info: EntityInfo, model: ManagedObjectModel, stores: [PersistentStore]) throws -> ComputedResults? {
        let sorts = fetchRequest.sortDescriptors
        guard sorts.count == 1, sorts[0].ascending, sorts[0].options.isEmpty, let attribute = info.attribute(named: sorts[0].keyPath),
              [.string, .int16, .int32, .int64].contains(attribute.description.type),
              let index = info.indexes.first(where: { $0.properties == [sorts[0].keyPath] && !$0.isNormalized && !$0.isText && !$0.isForeignKey }),
              stores.filter({ $0.holds(info) }).count == 1, let store = stores.first(where: { $0.holds(info) }) else { return nil }
        let codes = fetchRequest.includesSubentities ? info.descendantCodes : [info.code]
        var builder = ResultsBuilder(stores: stores, model: model)
        guard let storeIndex = builder.storeIndex[store.identifier] else { return nil }
        guard let reader = store.storage.indexOrder else { return nil }
        var previous: [UInt8]?
        try reader.forEachEntry(of: index, codes: codes, root: info.rootCode) { value, sortKey, key, code in
            if sortKey != previous {
                try builder.enter(sectionName(value))
                previous = sortKey
            }
            builder.append(key: key, code: code, store: storeIndex)
        }
        return builder.finish(sectioned: true)
    }
}
