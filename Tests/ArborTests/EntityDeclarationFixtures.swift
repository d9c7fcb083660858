import Arbor
import Foundation

// A model declared with @Entity that uses every attribute type, defaults, optionals, a
// transient property, an ordered to-many with a named inverse, a many-to-many paired by the
// model, a compound uniqueness constraint and an abstract superentity with a sub-entity.

@Entity("DeclaredLibrary")
final class DeclaredLibrary: ManagedObject {
    #Unique<DeclaredLibrary>([\.city, \.name])
    #Index<DeclaredLibrary>([\.city, \.rating])

    @Index(.normalized, .words) var name: String
    var city: String = "Berlin"
    var founded: Date?
    var rating: Double = 2.5
    var visitors: Int64 = 0
    var isOpen: Bool = true
    var code: UUID?
    var homepage: URL?
    var budget: Decimal?
    var logo: Data?
    var shelves: Int16 = 12
    var floors: Int32?
    var ratio: Float = 1
    @Index var rank: Int = 0
    @Relationship(inverse: \DeclaredBook.library, deleteRule: .cascade, ordered: true) var books: [DeclaredBook]
    var members: [DeclaredMember]
    @Transient var note = "not stored"
}

@Entity("DeclaredItem", abstract: true)
class DeclaredItem: ManagedObject {
    var title: String = ""
    @Attribute(originalName: "weight") var mass: Double?
}

@Entity("DeclaredBook")
final class DeclaredBook: DeclaredItem {
    var pages: Int32 = 0
    @Relationship(optional: false) var library: DeclaredLibrary?
}

@Entity("DeclaredMember")
final class DeclaredMember: ManagedObject {
    @Unique var card: String
    var libraries: [DeclaredLibrary]
}

enum DeclaredModel {
    static let types: [ManagedObject.Type] = [DeclaredLibrary.self, DeclaredItem.self, DeclaredBook.self, DeclaredMember.self]

    /// The same model written by hand.
    static func handWritten() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription("DeclaredLibrary", class: DeclaredLibrary.self, attributes: [
                AttributeDescription("name", .string),
                AttributeDescription("city", .string, defaultValue: .string("Berlin")),
                AttributeDescription("founded", .date, optional: true),
                AttributeDescription("rating", .double, defaultValue: .double(2.5)),
                AttributeDescription("visitors", .int64, defaultValue: .int(0)),
                AttributeDescription("isOpen", .bool, defaultValue: .bool(true)),
                AttributeDescription("code", .uuid, optional: true),
                AttributeDescription("homepage", .url, optional: true),
                AttributeDescription("budget", .decimal, optional: true),
                AttributeDescription("logo", .data, optional: true),
                AttributeDescription("shelves", .int16, defaultValue: .int(12)),
                AttributeDescription("floors", .int32, optional: true),
                AttributeDescription("ratio", .float, defaultValue: .float(1)),
                AttributeDescription("rank", .int64, defaultValue: .int(0), indexed: true),
            ], relationships: [
                .toMany("books", "DeclaredBook", inverse: "library", ordered: true, deleteRule: .cascade),
                .toMany("members", "DeclaredMember", inverse: "libraries"),
            ], indexes: [
                IndexDescription(["city", "rating"]), IndexDescription(["name"], normalized: true),
                IndexDescription(["name"], kind: .words),
            ], uniquenessConstraints: [["city", "name"]]),
            EntityDescription("DeclaredItem", class: DeclaredItem.self, isAbstract: true, attributes: [
                AttributeDescription("title", .string, defaultValue: .string("")),
                AttributeDescription("mass", .double, optional: true, renamingIdentifier: "weight"),
            ]),
            EntityDescription("DeclaredBook", class: DeclaredBook.self, superentity: "DeclaredItem", attributes: [
                AttributeDescription("pages", .int32, defaultValue: .int(0)),
            ], relationships: [.toOne("library", "DeclaredLibrary", inverse: "books", optional: false)]),
            EntityDescription("DeclaredMember", class: DeclaredMember.self, attributes: [AttributeDescription("card", .string)],
                              relationships: [.toMany("libraries", "DeclaredLibrary", inverse: "members")],
                              uniquenessConstraints: [["card"]]),
        ])
    }
}
