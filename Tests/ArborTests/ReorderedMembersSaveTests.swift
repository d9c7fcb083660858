import Arbor
import Testing

@Suite("Saving a reordered list keeps its members' versions current in the context")
struct ReorderedMembersSaveTests {
    @Test("a member held across the save of its reordered list can be changed and saved")
    func heldMemberSavesAfterReorder() throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            let books = ["Momo", "Krabat", "Emil"].map { title in
                let book = DeclaredBook(context: context)
                book.title = title
                book.library = library
                return book
            }
            try context.save()
            _ = books.map(\.title)  // loaded, and held
            library.books = books.reversed()  // rewrites the books' order columns
            try context.save()
            books[0].title = "Momo und die grauen Herren"
            try context.save()  // expected the version the reorder wrote
            #expect(library.books.map(\.title) == ["Emil", "Krabat", "Momo und die grauen Herren"])
        }
    }
}
