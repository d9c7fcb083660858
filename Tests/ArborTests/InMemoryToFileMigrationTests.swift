@testable import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("Migrating an in-memory store to a file")
struct InMemoryToFileMigrationTests {
    /// A random graph of nodes (ordered children, partners, attributes) and tags (ordered
    /// many-to-many), built over several saves with deletes and reorders between them.
    static func buildGraph(_ context: ManagedObjectContext, seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        var nodes: [Node] = []
        var tags: [ArborTestSupport.Tag] = []
        for _ in 0..<6 {
            for _ in 0..<20 {
                switch below(9) {
                case 0, 1, 2:
                    let node = Node(context: context)
                    node.value = Int64(below(1000)) - 500
                    node.label = below(3) == 0 ? nil : "label \(below(50)) é"
                    nodes.append(node)
                case 3:
                    let tag = ArborTestSupport.Tag(context: context)
                    tag.name = "tag \(below(100))"
                    tags.append(tag)
                case 4 where nodes.count > 1:
                    let child = nodes[below(nodes.count)], parent = nodes[below(nodes.count)]
                    // No cycles: a parent is never below its child.
                    var ancestor: Node? = parent
                    while let current = ancestor, current !== child { ancestor = current.parent }
                    if ancestor == nil { child.parent = parent }
                case 5 where nodes.count > 1:
                    nodes[below(nodes.count)].partner = nodes[below(nodes.count)]
                case 6 where !nodes.isEmpty && !tags.isEmpty:
                    tags[below(tags.count)].add(nodes[below(nodes.count)], toRelationship: "nodes")
                case 7 where !nodes.isEmpty:
                    let node = nodes[below(nodes.count)]
                    if node.children.count > 1 { node.children = node.children.shuffled(using: &random) }
                case 8 where nodes.count > 4:
                    let node = nodes.remove(at: below(nodes.count))
                    context.delete(node)
                    nodes.removeAll { $0.isDeleted }
                default:
                    break
                }
            }
            try context.save()
            nodes.removeAll { $0.managedObjectContext == nil }
        }
    }

    /// The whole stored graph as text, objects named by their rank in primary-key order (a
    /// copy keeps that order, not the keys).
    static func dump(_ store: PersistentStore, model: ManagedObjectModel) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(store)
        defer { coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait {
            let nodes = try context.fetch(FetchRequest(entityName: "Node"), as: Node.self).sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
            let tags = try context.fetch(FetchRequest(entityName: "Tag"), as: ArborTestSupport.Tag.self).sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
            var rank: [ObjectID: Int] = [:]
            for (index, node) in nodes.enumerated() { rank[node.objectID] = index }
            for (index, tag) in tags.enumerated() { rank[tag.objectID] = index }
            func name(_ object: ManagedObject?) -> String { object.map { "\(rank[$0.objectID] ?? -1)" } ?? "-" }
            var lines = nodes.map { node in
                "node \(name(node)) value=\(node.value) label=\(node.label ?? "nil") parent=\(name(node.parent)) "
                    + "partner=\(name(node.partner)) children=\(node.children.map(name)) tags=\(node.tags.map(name).sorted())"
            }
            lines += tags.map { "tag \(name($0)) \($0.name) nodes=\($0.nodes.map(name))" }
            return lines
        }
    }

    @Test("every object, attribute, relationship and member order arrives; the coordinator uses the file", arguments: 0..<6)
    func migratesEverything(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let model = try GraphModel.make()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let memory = try coordinator.addPersistentStore(with: .inMemory())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { try Self.buildGraph(context, seed: seed) }
        let expected = try Self.dump(memory, model: model)
        #expect(expected.count > 10)

        let url = directory.file("saved.arbor")
        let file = try coordinator.migratePersistentStore(memory, to: url)
        #expect(file.type == .file)
        #expect(coordinator.persistentStores.count == 1 && coordinator.persistentStores[0] === file)
        #expect(try Self.dump(file, model: model) == expected)
        #expect(file.checkIntegrity().isSound)
        #expect(try file.btree().consistencyProblems() == [])
        // No working files are left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { !$0.hasPrefix("saved.arbor") } == [])

        // A new context saves into the file, and the file reopens with everything.
        let later = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try later.performAndWait {
            let node = Node(context: later)
            node.value = 12_345
            try later.save()
        }
        let reopened = try PersistentStore(url: url, model: model)
        let after = try Self.dump(reopened, model: model)
        #expect(after.count == expected.count + 1)
        #expect(after.contains { $0.contains("value=12345") })
    }

    @Test("an existing file or an unwritable place: an error, and the coordinator keeps the store in memory")
    func failures() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let model = try GraphModel.make()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let memory = try coordinator.addPersistentStore(with: .inMemory())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { try Self.buildGraph(context, seed: 99) }
        let expected = try Self.dump(memory, model: model)

        let existing = directory.file("existing.arbor")
        _ = FileManager.default.createFile(atPath: existing.path, contents: Data("keep me".utf8))
        #expect(throws: StoreError.self) { try coordinator.migratePersistentStore(memory, to: existing) }
        #expect(FileManager.default.contents(atPath: existing.path) == Data("keep me".utf8))

        let nowhere = directory.file("missing-folder").appendingPathComponent("saved.arbor")
        #expect(throws: StoreError.self) { try coordinator.migratePersistentStore(memory, to: nowhere) }
        #expect(!FileManager.default.fileExists(atPath: nowhere.path))

        #expect(coordinator.persistentStores.count == 1 && coordinator.persistentStores[0] === memory)
        #expect(try Self.dump(memory, model: model) == expected)
    }

    @Test("a crash at every write and sync point of the copy leaves an empty store or the whole copy")
    func crashAtEveryPoint() throws {
        let model = try GraphModel.make()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let memory = try coordinator.addPersistentStore(with: .inMemory())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { try Self.buildGraph(context, seed: 7) }
        let copy = try StoreCopy(from: memory)
        let expected = try Self.dump(memory, model: model)

        let baseFile = SimulatedFile()
        _ = try PersistentStore(file: baseFile, model: model)
        let baseImage = baseFile.currentBytes
        let probe = SimulatedFile(bytes: baseImage)
        try copy.write(into: try PersistentStore(file: probe, model: model))
        let points = probe.operationCount
        #expect(points >= 4)

        var sawEmpty = 0, sawWhole = 0
        for point in 0..<points {
            let file = SimulatedFile(bytes: baseImage, crashAfter: point)
            let store = try PersistentStore(file: file, model: model)
            #expect(throws: (any Error).self) { try copy.write(into: store) }
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(point * 7 + modeIndex))
                let reopened = try PersistentStore(file: SimulatedFile(bytes: image), model: model)
                let state = try Self.dump(reopened, model: model)
                #expect(state.isEmpty || state == expected, "crash point \(point), \(mode): \(state.count) lines")
                if state.isEmpty { sawEmpty += 1 } else if state == expected { sawWhole += 1 }
                #expect(reopened.checkIntegrity().isSound, "crash point \(point), \(mode)")
                #expect(try reopened.btree().consistencyProblems() == [], "crash point \(point), \(mode)")
            }
        }
        #expect(sawEmpty > 0)
        #expect(sawWhole > 0)
    }
}
