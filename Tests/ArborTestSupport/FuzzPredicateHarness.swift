import Arbor
import ArborEngine
import ArborEngineTestSupport
import Foundation

/// The body of the predicate fuzz target: parse, print, re-parse, evaluate and fetch.
public final class FuzzPredicateHarness: @unchecked Sendable {
    public struct Finding: Error, CustomStringConvertible {
        public var description: String
    }

    let context: ManagedObjectContext
    let objects: [ManagedObject]

    /// Builds the graph once; every fuzz input only reads it.
    public init() throws {
        let model = try GraphModel.make()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.add(try PersistentStore(file: SimulatedFile(), model: model))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        self.context = context
        var built: [ManagedObject] = []
        try context.performAndWait {
            var nodes: [Node] = []
            for index in 0..<12 {
                let node = Node(context: context)
                node.value = Int64(index)
                node.label = index % 3 == 0 ? nil : "label \(index)"
                if index > 0 { node.parent = nodes[index / 2] }
                nodes.append(node)
            }
            let tag = Tag(context: context)
            tag.name = "t"
            tag.nodes = Array(nodes.prefix(5))
            try context.save()
            built = nodes
        }
        objects = built
    }

    public func run(_ format: String) throws {
        let predicate: ObjectPredicate
        do {
            predicate = try ObjectPredicate(format: format)
        } catch is ObjectPredicateError {
            return
        }
        let printed = predicate.description
        let reparsed: ObjectPredicate
        do {
            reparsed = try ObjectPredicate(format: printed)
        } catch {
            throw Finding(description: "\(format) printed as \(printed), which does not parse: \(error)")
        }
        guard reparsed == predicate else { throw Finding(description: "\(format) printed as \(printed), which parses differently") }
        try context.performAndWait {
            var inMemory: [ObjectID] = []
            do {
                for object in objects where try predicate.evaluate(with: object) { inMemory.append(object.objectID) }
            } catch is ObjectPredicateError {
                return
            }
            let request = FetchRequest(entityName: "Node", predicate: predicate)
            let fetched: [ObjectID]
            do {
                fetched = try context.fetchObjectIDs(request)
            } catch is ObjectPredicateError {
                return
            }
            if Set(fetched) != Set(inMemory) {
                throw Finding(description: "\(format): fetch found \(fetched.count), evaluation \(inMemory.count)")
            }
        }
    }
}
