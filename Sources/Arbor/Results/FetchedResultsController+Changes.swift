import Foundation

extension FetchedResultsControllerBase {
    /// Brings the results up to date with a batch of context changes and reports the difference.
    /// A few changed objects are placed one by one (binary search over the sorted results); a
    /// broad change (rollback, reset, many objects) recomputes the results and compares.
    func process(_ change: ContextObjectsChange) {
        guard hasFetched else { return }
        if !change.permanentIDs.isEmpty && !remapTemporaryIDs(change.permanentIDs) {
            return refetchAndReport(changed: Set(change.objects.keys))
        }
        let relevant = change.objects.filter { belongs($0.key) }
        if change.needsRefetch || fetchRequest.affectedStores != nil || fetchRequest.fetchLimit > 0 || fetchRequest.fetchOffset > 0
            || relevant.count > max(256, entries.count / 8) {
            return refetchAndReport(changed: Set(relevant.keys))
        }
        guard !relevant.isEmpty else { return }
        do {
            try applyIncrementally(relevant)
        } catch {
            refetchAndReport(changed: Set(relevant.keys))
        }
    }

    /// Whether objects with `id` can be among the results (entity, sub-entities).
    func belongs(_ id: ObjectID) -> Bool {
        guard let info = model?.info(named: fetchRequest.entityName) else { return false }
        return fetchRequest.includesSubentities ? info.includes(id.info) : id.info.name == info.name
    }

    /// Replaces temporary IDs a save made permanent; false when a permanent ID's store is not
    /// among the results' stores (then the results are recomputed).
    private func remapTemporaryIDs(_ permanent: [ObjectID: ObjectID]) -> Bool {
        var replacement: [Int: CompactObjectID] = [:]
        var kept: [ObjectID] = []
        var newIndex: [Int: Int] = [:]
        for (index, id) in unsaved.enumerated() {
            if let saved = permanent[id] {
                guard let store = stores.firstIndex(where: { $0.identifier == saved.storeIdentifier }) else { return false }
                replacement[index] = CompactObjectID(key: saved.primaryKey, code: saved.info.code, store: Int32(store))
            } else {
                newIndex[index] = kept.count
                kept.append(id)
            }
        }
        guard !replacement.isEmpty else { return true }
        for position in entries.indices where entries[position].store < 0 {
            let index = Int(entries[position].key)
            if let compact = replacement[index] {
                entries[position] = compact
            } else if let moved = newIndex[index] {
                entries[position].key = Int64(moved)
            }
        }
        unsaved = kept
        view = nil
        return true
    }

    /// The row of sort values of `object` when it belongs in the results now; nil when it is
    /// deleted, gone or does not match the predicate.
    private func currentRow(_ id: ObjectID, _ given: ManagedObject?, evaluator: inout PredicateEvaluator) throws -> FetchedRow? {
        let context = managedObjectContext
        let object = given ?? context.registeredObject(for: id) ?? context.object(with: id)
        guard object.managedObjectContext === context, !object.deletedFlag else { return nil }
        do { try context.fulfill(object) } catch ContextError.objectNotFound { return nil }
        let subject = ObjectSubject(object: object, context: context)
        if let predicate = fetchRequest.predicate, try !evaluator.evaluate(predicate, subject) { return nil }
        let values = try fetchRequest.sortDescriptors.map { descriptor in
            try evaluator.follow(descriptor.keyPath.split(separator: ".").map(String.init), from: .object(object.objectID), start: subject)
        }
        return FetchedRow(id: object.objectID, row: nil, values: values)
    }

    private func name(of row: FetchedRow) -> String { sectionNameKeyPath == nil ? "" : sectionName(row.scalar(0)) }

    /// Places each changed object where it belongs now.
    private func applyIncrementally(_ relevant: [ObjectID: ManagedObject?]) throws {
        var evaluator = PredicateEvaluator(resolver: ContextResolver(context: managedObjectContext))
        let descriptors = fetchRequest.sortDescriptors
        // Where the changed objects were.
        var wanted: [CompactObjectID: ObjectID] = [:]
        for id in relevant.keys { if let compact = compactID(id) { wanted[compact] = id } }
        var oldOffsets: [ObjectID: Int] = [:]
        if wanted.count <= 8 {
            for (compact, id) in wanted { if let offset = entries.firstIndex(of: compact) { oldOffsets[id] = offset } }
        } else {
            let keys = Set(wanted.keys.map(\.key))
            for (offset, entry) in entries.enumerated() where keys.contains(entry.key) {
                if let id = wanted[entry] { oldOffsets[id] = offset }
            }
        }
        // Where they belong now.
        var rows: [(compact: CompactObjectID, row: FetchedRow, name: String)] = []
        var unsaved = self.unsaved
        for (id, object) in relevant {
            guard let row = try currentRow(id, object ?? nil, evaluator: &evaluator) else { continue }
            let compact: CompactObjectID
            if row.id.isTemporaryID {
                compact = CompactObjectID(key: Int64(unsaved.count), code: row.id.info.code, store: -1)
                unsaved.append(row.id)
            } else if let store = stores.firstIndex(where: { $0.identifier == row.id.storeIdentifier }) {
                compact = CompactObjectID(key: row.id.primaryKey, code: row.id.info.code, store: Int32(store))
            } else {
                throw IncrementalUpdateFailure()  // a store added since the fetch
            }
            rows.append((compact, row, name(of: row)))
        }
        rows.sort { ContextFetch.precedes($0.row, $1.row, descriptors) }

        // The unchanged results with their section ordinals, then the changed ones inserted.
        var ordinals: [String: Int32] = [:]
        for (index, name) in sectionNames.enumerated() { ordinals[name] = Int32(index) }
        var names = sectionNames
        func ordinal(_ name: String) -> Int32 {
            if let known = ordinals[name] { return known }
            names.append(name)
            ordinals[name] = Int32(names.count - 1)
            return Int32(names.count - 1)
        }
        // Copied a slice at a time between the removed offsets.
        let removed = oldOffsets.values.sorted()
        var list = ContiguousArray<CompactObjectID>()
        var sectionOf = ContiguousArray<Int32>()
        list.reserveCapacity(entries.count + rows.count)
        sectionOf.reserveCapacity(entries.count + rows.count)
        var next = 0
        for section in sectionNames.indices {
            let range = sectionRange(section)
            var start = range.lowerBound
            while start < range.upperBound {
                while next < removed.count && removed[next] < start { next += 1 }
                let end = next < removed.count ? min(removed[next], range.upperBound) : range.upperBound
                list.append(contentsOf: entries[start..<end])
                sectionOf.append(contentsOf: repeatElement(Int32(section), count: end - start))
                start = end < range.upperBound && next < removed.count && removed[next] == end ? end + 1 : end
            }
        }
        var placed: [CompactObjectID: FetchedRow] = [:]
        func rowAt(_ position: Int) throws -> FetchedRow {
            let compact = list[position]
            if let row = placed[compact] { return row }
            // An unchanged entry: its values from its object (one fault per probe at most).
            let id = compact.objectID(stores: stores, unsaved: self.unsaved, model: model ?? .empty)
            guard let row = try currentRow(id, nil, evaluator: &evaluator) else { throw IncrementalUpdateFailure() }
            return row
        }
        var newOffsets: [ObjectID: Int] = [:]
        for (compact, row, name) in rows {
            var low = 0, high = list.count
            while low < high {
                let middle = (low + high) / 2
                if ContextFetch.precedes(row, try rowAt(middle), descriptors) { high = middle } else { low = middle + 1 }
            }
            let section = ordinal(name)
            // Sections are contiguous: the new object must join a neighbour's section or start
            // one between two sections.
            let before = low > 0 ? sectionOf[low - 1] : nil, after = low < list.count ? sectionOf[low] : nil
            if let before, let after, before == after, before != section { throw IncrementalUpdateFailure() }
            list.insert(compact, at: low)
            sectionOf.insert(section, at: low)
            placed[compact] = row
            // Rows go in ascending order, each after the last: earlier offsets stay valid.
            newOffsets[row.id] = low
        }

        // The new sections: runs of equal ordinals.
        var newNames: [String] = [], newStarts: [Int] = []
        var seen: Set<Int32> = []
        for (offset, section) in sectionOf.enumerated() where offset == 0 || sectionOf[offset - 1] != section {
            guard seen.insert(section).inserted else { throw IncrementalUpdateFailure() }
            newNames.append(names[Int(section)])
            newStarts.append(offset)
        }
        if sectionNameKeyPath == nil {
            newNames = [""]
            newStarts = [0]
        }
        let old = (names: sectionNames, starts: sectionStarts, count: entries.count)
        entries = list
        self.unsaved = unsaved
        sectionNames = newNames
        sectionStarts = newStarts
        view = nil
        report(oldOffsets: oldOffsets, newOffsets: newOffsets, old: old, relevant: relevant, updated: Set(relevant.keys))
    }

    /// Recomputes the results and reports the difference; `changed` objects that kept their
    /// place are reported as updated.
    func refetchAndReport(changed: Set<ObjectID>) {
        let oldIDs = (0..<entries.count).map(objectID(atOffset:))
        let old = (names: sectionNames, starts: sectionStarts, count: entries.count)
        guard let computed = try? computeResults() else { return }
        install(computed)
        let newIDs = (0..<entries.count).map(objectID(atOffset:))
        var oldOffsets: [ObjectID: Int] = [:], newOffsets: [ObjectID: Int] = [:]
        for (offset, id) in oldIDs.enumerated() { oldOffsets[id] = offset }
        for (offset, id) in newIDs.enumerated() { newOffsets[id] = offset }
        report(oldOffsets: oldOffsets, newOffsets: newOffsets, old: old, relevant: [:], updated: changed)
    }

    /// Classifies each object (deleted, inserted, moved or updated) and tells the delegate and
    /// the difference streams. An object present before and after stays in place (update or
    /// nothing) when it keeps its section and its order relative to the others that stay: the
    /// longest run of such objects in order (a longest increasing subsequence) stays.
    private func report(oldOffsets: [ObjectID: Int], newOffsets: [ObjectID: Int], old: (names: [String], starts: [Int], count: Int),
                        relevant: [ObjectID: ManagedObject?], updated: Set<ObjectID>) {
        func oldPath(_ offset: Int) -> IndexPath {
            var low = 0, high = old.starts.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if old.starts[middle] <= offset { low = middle } else { high = middle - 1 }
            }
            return .arbor(section: low, item: offset - (old.starts.isEmpty ? 0 : old.starts[low]))
        }
        let newNameSet = Set(sectionNames), oldNameSet = Set(old.names)
        var sectionChanges: [FetchedSectionChange] = []
        for (index, name) in old.names.enumerated() where !newNameSet.contains(name) {
            sectionChanges.append(FetchedSectionChange(name: name, type: .delete, index: index))
        }
        for (index, name) in sectionNames.enumerated() where !oldNameSet.contains(name) {
            sectionChanges.append(FetchedSectionChange(name: name, type: .insert, index: index))
        }
        // The objects not listed did not change, so they keep their order. A listed object can
        // stay in place only if it keeps its section and the number of unlisted objects before
        // it (its rank); among those, the ones on a longest increasing run of new offsets stay.
        let sortedOld = oldOffsets.values.sorted(), sortedNew = newOffsets.values.sorted()
        func rank(_ offset: Int, in sorted: [Int]) -> Int {
            var low = 0, high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if sorted[middle] < offset { low = middle + 1 } else { high = middle }
            }
            return offset - low
        }
        var common: [(id: ObjectID, new: Int)] = []
        for (id, offset) in oldOffsets.sorted(by: { $0.value < $1.value }) {
            guard let newOffset = newOffsets[id], rank(offset, in: sortedOld) == rank(newOffset, in: sortedNew) else { continue }
            let oldName = old.names[oldPath(offset).arborSection]
            let newName = sectionNames[indexPath(forOffset: newOffset).arborSection]
            if oldName == newName { common.append((id, newOffset)) }
        }
        let staying = Set(Self.longestIncreasingRun(common.map(\.new)).map { common[$0].id })
        var objectChanges: [FetchedObjectChange] = []
        for (id, offset) in oldOffsets.sorted(by: { $0.value < $1.value }) {
            if let newOffset = newOffsets[id] {
                if staying.contains(id) {
                    if updated.contains(id) {
                        objectChanges.append(FetchedObjectChange(objectID: id, type: .update, indexPath: oldPath(offset),
                                                                 newIndexPath: indexPath(forOffset: newOffset)))
                    }
                } else {
                    objectChanges.append(FetchedObjectChange(objectID: id, type: .move, indexPath: oldPath(offset),
                                                             newIndexPath: indexPath(forOffset: newOffset)))
                }
            } else {
                objectChanges.append(FetchedObjectChange(objectID: id, type: .delete, indexPath: oldPath(offset), newIndexPath: nil))
            }
        }
        for (id, offset) in newOffsets.sorted(by: { $0.value < $1.value }) where oldOffsets[id] == nil {
            objectChanges.append(FetchedObjectChange(objectID: id, type: .insert, indexPath: nil, newIndexPath: indexPath(forOffset: offset)))
        }
        let difference = FetchedResultsDifference(sectionChanges: sectionChanges, objectChanges: objectChanges,
                                                  sectionNames: sectionNames, count: entries.count)
        guard !difference.isEmpty else { return }
        if let delegate {
            delegate.controllerWillChangeContent(self)
            for change in sectionChanges {
                let section = change.type == .insert ? self.section(at: change.index)
                    : FetchedResultsSection(name: change.name, indexTitle: indexTitle(for: change.name), numberOfObjects: 0,
                                            controller: self, range: 0..<0)
                delegate.controller(self, didChange: section, atSectionIndex: change.index, for: change.type)
            }
            for change in objectChanges {
                let object = (relevant[change.objectID] ?? nil) ?? managedObjectContext.object(with: change.objectID)
                delegate.controller(self, didChange: object, at: change.indexPath, for: change.type, newIndexPath: change.newIndexPath)
            }
            delegate.controllerDidChangeContent(self)
        }
        streams.yield(difference)
    }

    /// Positions (into `values`) of a longest strictly increasing subsequence.
    /// - Complexity: O(n log n).
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []  // positions of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var result: [Int] = []
        var position = tails.last ?? -1
        while position >= 0 {
            result.append(position)
            position = previous[position]
        }
        return result.reversed()
    }
}

/// The changes cannot be placed one by one (sections out of order, an entry gone from under
/// the results, a new store): the results are recomputed instead.
private struct IncrementalUpdateFailure: Error {}
