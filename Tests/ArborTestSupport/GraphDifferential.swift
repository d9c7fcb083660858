import Arbor
import ArborEngine
import ArborEngineTestSupport
import Foundation

/// Random bytes for a differential run: a fuzzer's input, or a seeded generator.
public struct ByteSource {
    var bytes: [UInt8]
    var position = 0
    var generator: SplitMix64?

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(seed: UInt64) { bytes = []; generator = SplitMix64(seed: seed) }

    public var isExhausted: Bool { generator == nil && position >= bytes.count }

    mutating func next() -> UInt8 {
        if var generator {
            defer { self.generator = generator }
            return UInt8(truncatingIfNeeded: generator.next())
        }
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next()) % bound }
}

/// Runs random context operations (insert, relate, reorder, delete, save, rollback, refresh,
/// reset) against a context and `ReferenceGraph`, and checks after every step that the context
/// shows the reference's current graph, and after every save that a fresh context on a fresh
/// coordinator shows the committed one.
public final class GraphDifferential {
    public struct Mismatch: Error, CustomStringConvertible {
        public var description: String
    }

    let model: ManagedObjectModel
    let file: SimulatedFile
    var store: PersistentStore
    var context: ManagedObjectContext
    var current = ReferenceGraph()
    var committed = ReferenceGraph()
    /// With child contexts: the context saving to the store, whose child `context` is; and
    /// the graph the root holds (what the child last pushed).
    var root: ManagedObjectContext?
    var pushed = ReferenceGraph()
    /// What the context falls back to on rollback: the parent's graph or the stored one.
    var base: ReferenceGraph { root == nil ? committed : pushed }
    /// Handle → object ID (temporary for unsaved objects).
    var ids: [Int: ObjectID] = [:]
    /// Objects inserted since the last save, held to learn their permanent IDs.
    var unsaved: [Int: ManagedObject] = [:]
    /// Every handle that was ever saved, with its permanent ID.
    var everSaved: [Int: ObjectID] = [:]
    var nextHandle = 0
    public internal(set) var log: [String] = []
    /// With undo: the graphs before each undoable group, oldest first, and those undone.
    var undoable: [ReferenceGraph]?
    var redoable: [ReferenceGraph] = []

    /// `childContext`: the operations run in a child context, whose saves push into a root
    /// context that saves to the store at random times. `options` open the store the first
    /// time (later opens read the file as it is).
    /// `inMemory`: the store is an in-memory store (its committed state is checked through a
    /// second coordinator over the same store instead of a reopened file).
    /// `undo`: the context has an undo manager; each operation is a group, and undo and redo
    /// are operations too (see `GraphDifferential+Undo`).
    public init(childContext: Bool = false, options: PersistentStore.Options = PersistentStore.Options(), inMemory: Bool = false,
                undo: Bool = false) throws {
        model = try GraphModel.make()
        file = SimulatedFile()
        store = inMemory ? try PersistentStore(inMemoryWith: model, options: options) : try PersistentStore(file: file, model: model, options: options)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        let first = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        if childContext {
            root = first
            context = ManagedObjectContext(concurrencyType: .privateQueue, parent: first)
        } else {
            context = first
        }
        if undo {
            context.undoManager = ContextUndoManager()
            undoable = []
        }
    }

    func object(_ handle: Int) -> ManagedObject? {
        if let object = unsaved[handle] { return object }
        return ids[handle].map { context.object(with: $0) }
    }

    func node(_ handle: Int) -> Node? { object(handle) as? Node }
    func tag(_ handle: Int) -> Tag? { object(handle) as? Tag }

    func pick(_ keys: Dictionary<Int, some Any>.Keys, _ source: inout ByteSource) -> Int? {
        let sorted = keys.sorted()
        return sorted.isEmpty ? nil : sorted[source.below(sorted.count)]
    }

    /// Runs `steps` operations; throws `Mismatch` at the first divergence.
    public func run(_ source: inout ByteSource, steps: Int) throws {
        try context.performAndWait {
            for step in 0..<steps {
                if source.isExhausted { break }
                try apply(&source)
                try checkCurrent(step: step)
            }
            try save()
        }
        let report = store.checkIntegrity()
        guard report.isSound else { throw Mismatch(description: "integrity: \(report.problems)") }
    }

    func apply(_ source: inout ByteSource) throws {
        if undoable != nil { return try applyWithUndo(&source) }
        try applyEdit(&source)
    }

    func applyEdit(_ source: inout ByteSource) throws {
        let operation = source.below(17)
        let nodeHandle = pick(current.nodes.keys, &source)
        let otherHandle = source.below(5) == 0 ? nil : pick(current.nodes.keys, &source)
        let tagHandle = pick(current.tags.keys, &source)
        switch operation {
        case 0, 1:
            let handle = nextHandle
            nextHandle += 1
            let node = Node(context: context)
            node.value = Int64(source.next())
            current.nodes[handle] = ReferenceGraph.NodeState(value: node.value)
            ids[handle] = node.objectID
            unsaved[handle] = node
            log.append("insert node \(handle)")
        case 2:
            let handle = nextHandle
            nextHandle += 1
            let tag = Tag(context: context)
            tag.name = "t\(source.next())"
            current.tags[handle] = ReferenceGraph.TagState(name: tag.name)
            ids[handle] = tag.objectID
            unsaved[handle] = tag
            log.append("insert tag \(handle)")
        case 3:
            guard let handle = nodeHandle, let node = node(handle) else { return }
            let value = Int64(source.next())
            node.value = value
            current.nodes[handle]?.value = value
            if source.below(2) == 0 {
                let label: String? = source.below(3) == 0 ? nil : "label \(source.next())"
                node.label = label
                current.nodes[handle]?.label = label
            }
            log.append("set value \(handle)")
        case 4, 5:
            guard let handle = nodeHandle, let node = node(handle) else { return }
            node.parent = otherHandle.flatMap { self.node($0) }
            current.setParent(handle, otherHandle)
            log.append("set parent \(handle) -> \(String(describing: otherHandle))")
        case 6:
            guard let handle = nodeHandle, let node = node(handle) else { return }
            node.partner = otherHandle.flatMap { self.node($0) }
            current.setPartner(handle, otherHandle)
            log.append("set partner \(handle) -> \(String(describing: otherHandle))")
        case 7, 8:
            guard let handle = nodeHandle, let node = node(handle), let tagHandle, let tag = tag(tagHandle) else { return }
            if source.below(2) == 0 {
                node.add(tag, toRelationship: "tags")
                current.addTag(handle, tagHandle)
                log.append("tag \(handle) with \(tagHandle)")
            } else {
                tag.remove(node, fromRelationship: "nodes")
                current.removeTag(handle, tagHandle)
                log.append("untag \(handle) from \(tagHandle)")
            }
        case 9:
            guard let handle = nodeHandle, let node = node(handle), let count = current.nodes[handle]?.children.count, count > 1 else { return }
            var order = current.nodes[handle]?.children ?? []
            let moved = order.remove(at: source.below(count))
            order.insert(moved, at: source.below(count))
            node.children = order.compactMap { self.node($0) }
            current.nodes[handle]?.children = order
            log.append("reorder children of \(handle)")
        case 10:
            guard let tagHandle, let tag = tag(tagHandle), let count = current.tags[tagHandle]?.nodes.count, count > 1 else { return }
            var order = current.tags[tagHandle]?.nodes ?? []
            order.reverse()
            tag.nodes = order.compactMap { self.node($0) }
            current.tags[tagHandle]?.nodes = order
            log.append("reverse nodes of tag \(tagHandle)")
        case 11:
            guard let handle = nodeHandle, let node = node(handle) else { return }
            context.delete(node)
            current.deleteNode(handle)
            log.append("delete node \(handle)")
        case 12:
            guard let tagHandle, let tag = tag(tagHandle) else { return }
            context.delete(tag)
            current.deleteTag(tagHandle)
            log.append("delete tag \(tagHandle)")
        case 13, 14:
            try save(toStore: source.below(2) == 0)
        case 15:
            context.rollback()
            current = base
            forgetUnsaved()
            log.append("rollback")
        default:
            switch source.below(3) {
            case 0:
                guard let handle = nodeHandle, let node = node(handle) else { return }
                // Discarding one object's changes also drops its half of changed relationships
                // (the inverse side stays changed), which the reference cannot express: discard
                // only when nothing is pending.
                let merge = source.below(2) == 0 || current != base
                context.refresh(node, mergeChanges: merge)
                log.append("refresh \(handle) merge=\(merge)")
            case 1:
                context.refreshAllObjects()
                log.append("refresh all")
            default:
                context.reset()
                current = base
                forgetUnsaved()
                log.append("reset")
            }
        }
    }

    func forgetUnsaved() {
        // With undo, `unsaved` keeps saved objects too: those the base has stay known by ID.
        for handle in unsaved.keys where base.nodes[handle] == nil && base.tags[handle] == nil { ids[handle] = nil }
        unsaved = [:]
        if undoable != nil { forgetHistory() }
    }

    /// Saves the context; with a child context, `toStore` also saves the root and merges its
    /// did-save notification into the child (which then knows the permanent IDs).
    func save(toStore: Bool = true) throws {
        try context.save()
        if undoable != nil {
            // Undo may bring back any object: every handle keeps its object and ID.
            for (handle, object) in unsaved { ids[handle] = object.objectID }
        } else {
            for (handle, object) in unsaved {
                let exists = current.nodes[handle] != nil || current.tags[handle] != nil
                ids[handle] = exists ? object.objectID : nil
            }
            unsaved = [:]
            for handle in base.nodes.keys where current.nodes[handle] == nil { ids[handle] = nil }
            for handle in base.tags.keys where current.tags[handle] == nil { ids[handle] = nil }
        }
        if let root {
            pushed = current
            log.append("save into parent")
            guard toStore, let coordinator = root.persistentStoreCoordinator else { return }
            let received = Locked<[ContextDidSave]>([])
            let observation = coordinator.addDidSaveObserver { notification in received.withLock { $0.append(notification) } }
            try root.performAndWait { try root.save() }
            observation.cancel()
            for notification in received.withLock({ $0 }) {
                context.mergeChanges(fromContextDidSave: notification)
                for (handle, id) in ids { ids[handle] = notification.permanentIDs[id] ?? id }
            }
        }
        committed = current
        for (handle, id) in ids { everSaved[handle] = id }
        log.append("save")
        try checkCommitted()
    }

    // MARK: Checks

    func handles(_ ids: [ObjectID]) -> [Int] {
        let reverse = Dictionary(self.ids.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        return ids.map { reverse[$0] ?? -1 }
    }

    func describe(_ context: ManagedObjectContext, graph: ReferenceGraph, objects: (Int) -> ManagedObject?) -> ReferenceGraph {
        var seen = ReferenceGraph()
        for handle in graph.nodes.keys {
            guard let node = objects(handle) as? Node else { continue }
            var state = ReferenceGraph.NodeState(value: node.value, label: node.label)
            state.parent = node.parent.map { handles([$0.objectID])[0] }
            state.children = handles(node.children.map(\.objectID))
            state.partner = node.partner.map { handles([$0.objectID])[0] }
            state.tags = Set(handles(node.tags.map(\.objectID)))
            seen.nodes[handle] = state
        }
        for handle in graph.tags.keys {
            guard let tag = objects(handle) as? Tag else { continue }
            seen.tags[handle] = ReferenceGraph.TagState(name: tag.name, nodes: handles(tag.nodes.map(\.objectID)))
        }
        return seen
    }

    func checkCurrent(step: Int) throws {
        let seen = describe(context, graph: current) { self.object($0) }
        if seen != current { throw mismatch("context after step \(step)", seen: seen, expected: current) }
    }

    func checkCommitted() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let reopened = store.type == .inMemory ? store : try PersistentStore(file: SimulatedFile(bytes: file.currentBytes), model: model)
        try coordinator.add(reopened)
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try fresh.performAndWait {
            for (handle, id) in everSaved {
                let exists = committed.nodes[handle] != nil || committed.tags[handle] != nil
                do {
                    _ = try fresh.existingObject(with: id)
                    if !exists { throw Mismatch(description: "deleted object \(handle) still stored\n\(log.joined(separator: "\n"))") }
                } catch let error as ContextError {
                    if exists || error != .objectNotFound(id) { throw Mismatch(description: "object \(handle): \(error)\n\(log.suffix(30).joined(separator: "\n"))") }
                }
            }
            let seen = describe(fresh, graph: committed) { handle in self.ids[handle].map { fresh.object(with: $0) } }
            if seen != committed { throw mismatch("reopened store", seen: seen, expected: committed) }
        }
    }

    func mismatch(_ place: String, seen: ReferenceGraph, expected: ReferenceGraph) -> Mismatch {
        var lines = ["\(place) differs from the reference"]
        for handle in Set(seen.nodes.keys).union(expected.nodes.keys).sorted() where seen.nodes[handle] != expected.nodes[handle] {
            lines.append("node \(handle): context \(String(describing: seen.nodes[handle])) reference \(String(describing: expected.nodes[handle]))")
        }
        for handle in Set(seen.tags.keys).union(expected.tags.keys).sorted() where seen.tags[handle] != expected.tags[handle] {
            lines.append("tag \(handle): context \(String(describing: seen.tags[handle])) reference \(String(describing: expected.tags[handle]))")
        }
        lines.append("ids \(ids.sorted { $0.key < $1.key }) unsaved \(unsaved.keys.sorted())")
        lines.append("last operations:")
        lines.append(contentsOf: log.suffix(25))
        return Mismatch(description: lines.joined(separator: "\n"))
    }
}
