import Arbor
import Foundation

/// The entities of the context differential test: nodes in a tree (ordered children, cascade),
/// paired one-to-one with each other, and tagged many-to-many (ordered on the tag side).
public final class Node: ManagedObject {
    @Attribute("value") public var value: Int64
    @Attribute("label") public var label: String?
    @Relationship("parent") public var parent: Node?
    @Relationship("children") public var children: [Node]
    @Relationship("partner") public var partner: Node?
    @Relationship("tags") public var tags: [Tag]
}

public final class Tag: ManagedObject {
    @Attribute("name") public var name: String
    @Relationship("nodes") public var nodes: [Node]
}

public enum GraphModel {
    public static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                "Node", class: Node.self,
                attributes: [
                    AttributeDescription("value", .int64, defaultValue: .int(0), indexed: true),
                    AttributeDescription("label", .string, optional: true),
                ],
                relationships: [
                    .toOne("parent", "Node", inverse: "children"),
                    .toMany("children", "Node", inverse: "parent", ordered: true, deleteRule: .cascade),
                    .toOne("partner", "Node", inverse: "partner"),
                    .toMany("tags", "Tag", inverse: "nodes"),
                ]),
            EntityDescription(
                "Tag", class: Tag.self,
                attributes: [AttributeDescription("name", .string, defaultValue: .string(""))],
                relationships: [.toMany("nodes", "Node", inverse: "tags", ordered: true)]),
        ])
    }
}

/// The object graph as plain values: what the context should show.
public struct ReferenceGraph: Equatable, Sendable {
    public struct NodeState: Equatable, Sendable {
        public var value: Int64 = 0
        public var label: String?
        public var parent: Int?
        public var children: [Int] = []
        public var partner: Int?
        public var tags: Set<Int> = []
    }

    public struct TagState: Equatable, Sendable {
        public var name = ""
        public var nodes: [Int] = []
    }

    public var nodes: [Int: NodeState] = [:]
    public var tags: [Int: TagState] = [:]

    public init() {}

    mutating func setParent(_ node: Int, _ parent: Int?) {
        let old = nodes[node]?.parent
        guard old != parent else { return }
        if let old { nodes[old]?.children.removeAll { $0 == node } }
        nodes[node]?.parent = parent
        if let parent, nodes[parent]?.children.contains(node) == false { nodes[parent]?.children.append(node) }
    }

    mutating func setPartner(_ node: Int, _ other: Int?) {
        guard nodes[node]?.partner != other else { return }
        if let old = nodes[node]?.partner, nodes[old]?.partner == node { nodes[old]?.partner = nil }
        nodes[node]?.partner = other
        if let other {
            if let previous = nodes[other]?.partner, previous != node, nodes[previous]?.partner == other { nodes[previous]?.partner = nil }
            nodes[other]?.partner = node
        }
    }

    mutating func addTag(_ node: Int, _ tag: Int) {
        guard nodes[node]?.tags.contains(tag) == false else { return }
        nodes[node]?.tags.insert(tag)
        tags[tag]?.nodes.append(node)
    }

    mutating func removeTag(_ node: Int, _ tag: Int) {
        nodes[node]?.tags.remove(tag)
        tags[tag]?.nodes.removeAll { $0 == node }
    }

    mutating func deleteNode(_ start: Int) {
        var work = [start]
        var deleted: Set<Int> = []
        while let node = work.popLast() {
            guard let state = nodes[node], deleted.insert(node).inserted else { continue }
            if let parent = state.parent { nodes[parent]?.children.removeAll { $0 == node } }
            if let partner = state.partner, nodes[partner]?.partner == node { nodes[partner]?.partner = nil }
            for tag in state.tags { tags[tag]?.nodes.removeAll { $0 == node } }
            for child in state.children {
                if nodes[child]?.parent == node { nodes[child]?.parent = nil }
                work.append(child)
            }
        }
        for node in deleted { nodes[node] = nil }
    }

    mutating func deleteTag(_ tag: Int) {
        for node in tags[tag]?.nodes ?? [] { nodes[node]?.tags.remove(tag) }
        tags[tag] = nil
    }
}
