@testable import Arbor
import ArborTestSupport
import Foundation
import Testing

/// Hand-written classes of the same shape, for the model's refusals.
final class UndeclaredStop: ManagedObject {
    @Attribute("name") var name: String
}

@Entity("TwinRoute")
final class TwinRoute: ManagedObject {
    var first: [TwinStop]
    var second: [TwinStop]
}

@Entity("TwinStop")
final class TwinStop: ManagedObject {
    var route: TwinRoute?
    var alternate: TwinRoute?
}

@Suite("@Entity: models declared by their classes")
struct EntityDeclarationTests {
    @Test("one model declared with @Entity and written by hand has one schema and one hash")
    func sameModelBothWays() throws {
        let declared = try ManagedObjectModel(types: DeclaredModel.types)
        let written = try DeclaredModel.handWritten()
        #expect(declared.schema == written.schema)
        #expect(declared.versionHash == written.versionHash)
    }

    @Test("every attribute type round-trips through the generated accessors, across a reopen; defaults apply on insert")
    func attributesRoundTrip() throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let founded = Date(timeIntervalSince1970: 1_234_567)
        let code = UUID()
        let id: ObjectID = try stack.context().performAndWait { [context = stack.context()] in
            let library = DeclaredLibrary(context: context)
            // Defaults from the initial values, before anything is set.
            #expect(library.city == "Berlin" && library.rating == 2.5 && library.isOpen && library.shelves == 12 && library.ratio == 1)
            #expect(library.founded == nil && library.floors == nil && library.books.isEmpty)
            library.name = "Stadtbibliothek"
            library.founded = founded
            library.visitors = 1 << 40
            library.isOpen = false
            library.code = code
            library.homepage = URL(string: "https://example.org/lib")
            library.budget = Decimal(string: "1234.56")
            library.logo = Data([1, 2, 3])
            library.floors = 4
            library.ratio = 0.5
            library.rank = -3
            library.note = "kept in memory"
            #expect(library.value(forKey: "visitors") as? Int64 == 1 << 40)  // the same slot as the dynamic API
            try context.save()
            return library.objectID
        }
        try stack.reopen()
        let context = stack.context()
        try context.performAndWait {
            let library = try #require(try context.existingObject(with: id) as? DeclaredLibrary)
            #expect(library.name == "Stadtbibliothek" && library.city == "Berlin" && library.founded == founded)
            #expect(library.visitors == 1 << 40 && !library.isOpen && library.code == code)
            #expect(library.homepage == URL(string: "https://example.org/lib") && library.budget == Decimal(string: "1234.56"))
            #expect(library.logo == Data([1, 2, 3]) && library.floors == 4 && library.ratio == 0.5 && library.rank == -3)
            #expect(library.shelves == 12 && library.rating == 2.5)
            #expect(library.note == "not stored")  // transient: a new instance has its initial value
            let request = FetchRequest(entityName: "DeclaredLibrary", predicate: try ObjectPredicate(format: "name BEGINSWITH[cd] 'stadt'"))
            #expect(try context.explain(request).first?.plan.contains("folded_name") == true)
            #expect(try context.fetch(request, as: DeclaredLibrary.self).map(\.objectID) == [id])
        }
    }

    @Test("relationships: an ordered to-many with its named inverse, a many-to-many paired by the model, cascade, inheritance")
    func relationships() throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "Amerika-Gedenkbibliothek"
            let books = (0..<3).map { index -> DeclaredBook in
                let book = DeclaredBook(context: context)
                book.title = "Book \(index)"
                book.pages = Int32(100 + index)
                book.mass = Double(index)
                return book
            }
            books[2].library = library
            books[0].library = library
            library.books.append(books[1])  // through the to-many side
            #expect(library.books.map(\.title) == ["Book 2", "Book 0", "Book 1"])
            #expect(books[1].library === library)
            let member = DeclaredMember(context: context)
            member.card = "A-1"
            member.libraries = [library]
            #expect(library.members.map(\.card) == ["A-1"])
            try context.save()

            // Fetching the abstract superentity finds the sub-entity's objects, with inherited accessors.
            var items = FetchRequest(entityName: "DeclaredItem", sortDescriptors: [ObjectSortDescriptor("title")])
            items.returnsObjectsAsFaults = false
            let fetched = try context.fetch(items, as: DeclaredItem.self)
            #expect(fetched.map(\.title) == ["Book 0", "Book 1", "Book 2"])
            #expect(fetched.compactMap { ($0 as? DeclaredBook)?.pages } == [100, 101, 102])
            #expect(fetched.map(\.mass) == [0, 1, 2])

            context.delete(library)  // cascades to the books; nullifies the member's side
            try context.save()
            #expect(try context.count(for: FetchRequest(entityName: "DeclaredBook")) == 0)
            #expect(member.libraries.isEmpty)
        }
    }

    @Test("a compound uniqueness constraint from #Unique holds at save")
    func compoundUnique() throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        context.performAndWait {
            for city in ["Berlin", "Berlin", "Potsdam"] {
                let library = DeclaredLibrary(context: context)
                library.name = "Stadtbibliothek"
                library.city = city
            }
            #expect(throws: (any Error).self) { try context.save() }
        }
    }

    @Test("a renamed attribute (originalName) keeps its data through a lightweight migration")
    func renamedAttribute() throws {
        let directory = TemporaryDirectory("arbor-entity-rename")
        defer { directory.remove() }
        let url = directory.file("store.arbor")
        // The model before the rename (DeclaredItem.mass was called weight), as the previous
        // version of an app had it: its objects are plain ManagedObjects here.
        var entities = try DeclaredModel.handWritten().entities
        for index in entities.indices {
            entities[index].managedObjectClass = ManagedObject.self
            if entities[index].name == "DeclaredItem" {
                entities[index].attributes[1] = AttributeDescription("weight", .double, optional: true)
            }
        }
        let before = try ManagedObjectModel(entities: entities)
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: before)
            _ = try coordinator.addPersistentStore(at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let library = try context.insertNewObject(forEntityName: "DeclaredLibrary")
                library.setValue(AttributeValue.string("Zentralbibliothek"), forKey: "name")
                let book = try context.insertNewObject(forEntityName: "DeclaredBook")
                book.setValue(library, forKey: "library")
                book.setValue(AttributeValue.double(1.25), forKey: "weight")
                try context.save()
            }
        }
        let after = try ManagedObjectModel(types: DeclaredModel.types)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: after)
        _ = try coordinator.addPersistentStore(at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let books = try context.fetch(FetchRequest(entityName: "DeclaredBook"), as: DeclaredBook.self)
            #expect(books.map(\.mass) == [1.25])
        }
    }

    @Test("refusals name the class, the property and the candidates")
    func refusals() throws {
        #expect(throws: ModelError.notAnEntityClass("UndeclaredStop")) {
            try ManagedObjectModel(types: [UndeclaredStop.self])
        }
        #expect(throws: ModelError.self) { try ManagedObjectModel(types: [TwinRoute.self, TwinStop.self]) }
        do {
            _ = try ManagedObjectModel(types: [TwinRoute.self, TwinStop.self])
        } catch let ModelError.ambiguousInverse(entity, relationship, candidates) {
            #expect(entity == "TwinRoute" && relationship == "first")
            #expect(candidates == ["TwinStop.route", "TwinStop.alternate"])
        }
        // A hand-written description that lacks a property its @Entity class persists.
        var entities = try DeclaredModel.handWritten().entities
        for index in entities.indices where entities[index].name == "DeclaredLibrary" {
            entities[index].attributes.removeAll { $0.name == "floors" }
        }
        #expect(throws: ModelError.classPropertyNotInEntity(entity: "DeclaredLibrary", property: "floors")) {
            try ManagedObjectModel(entities: entities)
        }
    }
}
