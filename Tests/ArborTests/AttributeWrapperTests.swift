import Arbor
import ArborTestSupport
import Foundation
import Testing

/// A class whose wrappers name one attribute of its entity, and one the entity lacks.
final class Labelled: ManagedObject {
    @Attribute("label") var label: String
    @Attribute("rank") var rank: Int64
    @Attribute("absent") var absent: Int64
}

/// Another entity with the same attribute names at other slots: each class's wrappers read
/// their own entity's columns.
final class Relabelled: ManagedObject {
    @Attribute("rank") var rank: Int64
    @Attribute("label") var label: String
}

/// A Swift base class that is no entity, its wrappers inherited by classes of two unrelated
/// entities that keep the same attributes at other slots: one key path, `\Tagged._tag`, then
/// names a different slot per entity, so a cached slot must be the one of the object's entity.
class Tagged: ManagedObject {
    @Attribute("tag") var tag: String
    @Attribute("weight") var weight: Int64
}

final class TaggedFirst: Tagged {}
final class TaggedLast: Tagged {}

@Suite("@Attribute reads and writes: the loaded fast path, the context's path, keys the entity lacks")
struct AttributeWrapperTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("Labelled", class: Labelled.self, attributes: [AttributeDescription("label", .string), AttributeDescription("rank", .int64)]),
            EntityDescription("TaggedFirst", class: TaggedFirst.self, attributes: [AttributeDescription("tag", .string), AttributeDescription("weight", .int64)]),
            EntityDescription("TaggedLast", class: TaggedLast.self, attributes: [AttributeDescription("weight", .int64), AttributeDescription("tag", .string)]),
            EntityDescription("Relabelled", class: Relabelled.self, attributes: [AttributeDescription("rank", .int64), AttributeDescription("label", .string)]),
        ])
    }

    @Test("reads agree on every path: faults, loaded rows, unsaved changes, inserted objects; a missing key reads the fallback")
    func readsOnEveryPath() throws {
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        let ids: [ObjectID] = try context.performAndWait {
            let labelled = (0..<5).map { index -> Labelled in
                let object = Labelled(context: context)
                object.label = "label \(index)"
                object.rank = Int64(index * 10)
                return object
            }
            let relabelled = Relabelled(context: context)
            relabelled.rank = 7
            relabelled.label = "other"
            // Inserted, unsaved: the context answers.
            #expect(labelled[3].label == "label 3" && labelled[3].rank == 30 && labelled[3].absent == 0)
            try context.save()
            return labelled.map(\.objectID) + [relabelled.objectID]
        }
        try stack.reopen()
        let reader = stack.context()
        try reader.performAndWait {
            // Faults: the first read loads the row through the context.
            let faults = try ids.prefix(5).map { try #require(reader.object(with: try stack.id($0)) as? Labelled) }
            #expect(faults.allSatisfy { $0.isFault })
            for (index, object) in faults.enumerated() {
                #expect(object.rank == Int64(index * 10))
                #expect(object.label == "label \(index)")
                #expect(object.absent == Int64.fallbackValue)
            }
            // Loaded and unchanged (the cached-slot path), then changed (the context again).
            let object = faults[2]
            #expect(object.label == "label 2")
            object.label = "changed"
            #expect(object.label == "changed" && object.rank == 20)
            reader.rollback()
            #expect(object.label == "label 2")
            // The same names at other slots in another entity read their own columns.
            let other = try #require(reader.object(with: try stack.id(ids[5])) as? Relabelled)
            #expect(other.rank == 7 && other.label == "other")
            #expect(faults[4].rank == 40 && faults[4].label == "label 4")
            // Writing a key the entity lacks changes nothing and fails the next save.
            faults[1].absent = 5
            #expect(faults[1].absent == Int64.fallbackValue)
            #expect(throws: (any Error).self) { try reader.save() }
        }
    }

    @Test("filled fetch results read through the cached slots, across contexts and resets")
    func fetchedObjectsAcrossResets() throws {
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<50 {
                let object = Labelled(context: context)
                object.label = String(repeating: "x", count: index)  // short and long strings
                object.rank = Int64(index)
            }
            try context.save()
        }
        for _ in 0..<2 {
            let reader = stack.context()
            try reader.performAndWait {
                for _ in 0..<3 {
                    var request = FetchRequest(entityName: "Labelled", predicate: try ObjectPredicate(format: "rank >= 10"))
                    request.returnsObjectsAsFaults = false
                    let objects = try reader.fetch(request, as: Labelled.self)
                    #expect(objects.count == 40)
                    for object in objects {
                        #expect(!object.isFault)
                        #expect(object.label.count == Int(object.rank))
                        #expect(object.absent == Int64.fallbackValue)
                    }
                    reader.reset()
                }
            }
        }
    }

    @Test("one inherited wrapper over entities whose slots differ reads each object's own column")
    func inheritedWrapperAcrossEntities() throws {
        let stack = try TestStack(model: try Self.model())
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<4 {
                let first = TaggedFirst(context: context)
                first.tag = "first \(index)"
                first.weight = Int64(index)
                let last = TaggedLast(context: context)
                last.tag = "last \(index)"
                last.weight = Int64(100 + index)
            }
            try context.save()
        }
        let reader = stack.context()
        try reader.performAndWait {
            var firsts = FetchRequest(entityName: "TaggedFirst")
            firsts.returnsObjectsAsFaults = false
            var lasts = FetchRequest(entityName: "TaggedLast")
            lasts.returnsObjectsAsFaults = false
            let first = try reader.fetch(firsts, as: TaggedFirst.self)
            let last = try reader.fetch(lasts, as: TaggedLast.self)
            #expect(first.count == 4 && last.count == 4)
            // Interleaved, so each entity's read follows a cached read of the other's.
            for (a, b) in zip(first, last) {
                #expect(a.tag.hasPrefix("first ") && b.tag.hasPrefix("last "))
                #expect(a.weight < 100 && b.weight >= 100)
                #expect(a.tag == "first \(a.weight)" && b.tag == "last \(b.weight - 100)")
            }
        }
    }
}
