import Arbor
import ArborEngine
import ArborTestSupport
import Foundation
import Observation
import Testing

/// Watches what `read` reads with Observation and counts the changes reported. Tracking ends
/// with the first change; `arm()` starts it again. Observation calls `onChange` on the thread
/// making the change, inside the context's `perform`, so the count is never shared.
private final class Watch: @unchecked Sendable {
    private(set) var fired = 0
    private let read: () -> Void

    init(_ read: @escaping () -> Void) {
        self.read = read
        arm()
    }

    func arm() {
        withObservationTracking { read() } onChange: { [self] in fired += 1 }
    }
}

@Suite("Observation: reads register, changes fire once, for their own property only")
struct ObservationTests {
    private func declaredStack() throws -> (TestStack, ManagedObjectContext) {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        context.observesObjects = true
        return (stack, context)
    }

    /// A saved library named `name` with one book, as the context sees it after the save.
    private func savedLibrary(_ context: ManagedObjectContext, _ name: String = "AGB") throws -> DeclaredLibrary {
        let library = DeclaredLibrary(context: context)
        library.name = name
        let book = DeclaredBook(context: context)
        book.title = "Momo"
        book.library = library
        try context.save()
        return library
    }

    @Test("a set fires the observers of that property once, and not those of another")
    func setFiresOnce() throws {
        let (_, context) = try declaredStack()
        context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "Amerika-Gedenkbibliothek"
            let name = Watch { _ = library.name }
            let rating = Watch { _ = library.rating }
            library.rating = 4
            #expect(name.fired == 0)
            #expect(rating.fired == 1)
            library.name = "AGB"
            #expect(name.fired == 1)
            library.name = "Amerika-Gedenkbibliothek"  // tracking ended with the first change
            #expect(name.fired == 1)
            name.arm()
            library.name = "AGB"
            #expect(name.fired == 2)
        }
    }

    @Test("a context that does not observe its objects registers nothing")
    func offByDefaultInBackground() throws {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        #expect(!context.observesObjects)
        #expect(ManagedObjectContext(concurrencyType: .mainQueue, coordinator: stack.coordinator).observesObjects)
        context.performAndWait {
            let library = DeclaredLibrary(context: context)
            let name = Watch { _ = library.name }
            library.name = "changed"
            #expect(name.fired == 0)
        }
    }

    @Test("moving a book fires its to-one and both libraries' lists, and nothing else")
    func relationshipEdits() throws {
        let (_, context) = try declaredStack()
        context.performAndWait {
            let first = DeclaredLibrary(context: context), second = DeclaredLibrary(context: context)
            let book = DeclaredBook(context: context)
            book.library = first
            let firstBooks = Watch { _ = first.books }
            let secondBooks = Watch { _ = second.books }
            let library = Watch { _ = book.library }
            let title = Watch { _ = book.title }
            let firstName = Watch { _ = first.name }
            book.library = second
            #expect(firstBooks.fired == 1)
            #expect(secondBooks.fired == 1)
            #expect(library.fired == 1)
            #expect(title.fired == 0)
            #expect(firstName.fired == 0)

            // Adding through the to-many side fires the same way.
            firstBooks.arm(); library.arm()
            first.books = [book]
            #expect(firstBooks.fired == 2)
            #expect(library.fired == 2)
            // Setting what is already there fires nothing.
            firstBooks.arm(); library.arm()
            book.library = first
            #expect(firstBooks.fired == 2)
            #expect(library.fired == 2)
        }
    }

    @Test("hand-written @Attribute properties and value(forKey:) register reads too")
    func keyedReads() throws {
        let stack = try TestStack()
        let context = stack.context()
        context.observesObjects = true
        context.performAndWait {
            let stop = Stop(context: context)
            stop.name = "Alexanderplatz"
            let name = Watch { _ = stop.name }
            let latitude = Watch { _ = stop.value(forKey: "latitude") }
            let times = Watch { _ = stop.objectIDs(forRelationshipNamed: "stopTimes") }
            stop.latitude = 52.52
            #expect(name.fired == 0)
            #expect(latitude.fired == 1)
            stop.setValue("Alex", forKey: "name")
            #expect(name.fired == 1)
            let time = StopTime(context: context)
            time.stop = stop
            #expect(times.fired == 1)
        }
    }

    @Test("refresh and rollback fire for the properties whose values they change, and only those")
    func refreshAndRollback() throws {
        let (_, context) = try declaredStack()
        try context.performAndWait {
            let library = try savedLibrary(context)
            library.name = "changed"
            let name = Watch { _ = library.name }
            let rating = Watch { _ = library.rating }
            let books = Watch { _ = library.books }
            context.refresh(library, mergeChanges: true)  // keeps the change: nothing differs
            #expect(name.fired == 0)
            context.refresh(library, mergeChanges: false)
            #expect(name.fired == 1)
            #expect(rating.fired == 0)
            #expect(books.fired == 0)
            #expect(library.name == "AGB")

            name.arm()
            library.rating = 4
            #expect(rating.fired == 1)
            rating.arm()
            context.rollback()
            #expect(rating.fired == 2)
            #expect(name.fired == 1)
            #expect(library.rating == 2.5)
        }
    }

    @Test("a merged save from another context fires what it changed: attributes and lists")
    func mergedSave() throws {
        let (stack, context) = try declaredStack()
        let library = try context.performAndWait { try savedLibrary(context) }
        let id = library.objectID
        let (name, rating, books) = context.performAndWait {
            (Watch { _ = library.name }, Watch { _ = library.rating }, Watch { _ = library.books })
        }
        let saves = Locked<[ContextDidSave]>([])
        let observation = stack.coordinator.addDidSaveObserver { note in saves.withLock { $0.append(note) } }
        let other = stack.context()
        try other.performAndWait {
            let there = try #require(try other.existingObject(with: id) as? DeclaredLibrary)
            there.name = "Zentral- und Landesbibliothek"
            let book = DeclaredBook(context: other)
            book.library = there
            try other.save()
        }
        observation.cancel()
        let note = try #require(saves.withLock { $0.first })
        context.performAndWait {
            context.mergeChanges(fromContextDidSave: note)
            #expect(name.fired == 1)
            #expect(books.fired == 1)
            #expect(rating.fired == 0)
            #expect(library.name == "Zentral- und Landesbibliothek")
            #expect(library.books.count == 2)
        }
    }

    @Test("reset fires every property observers had read")
    func reset() throws {
        let (_, context) = try declaredStack()
        try context.performAndWait {
            let library = try savedLibrary(context)
            let name = Watch { _ = library.name }
            let unread = Watch {}
            context.reset()
            #expect(name.fired == 1)
            #expect(unread.fired == 0)
        }
    }
}
