import Arbor
import ArborTestSupport
import Foundation
import Observation
import Testing

@Suite("Undo: groups per perform or explicit, inserts, deletes with cascades, across saves")
struct UndoTests {
    private func stack() throws -> (TestStack, ManagedObjectContext, ContextUndoManager) {
        let stack = try TestStack(model: try ManagedObjectModel(types: DeclaredModel.types))
        let context = stack.context()
        let undo = ContextUndoManager()
        context.undoManager = undo
        return (stack, context, undo)
    }

    /// The libraries stored now, read by a new context: name → book titles in order.
    private func stored(_ stack: TestStack) throws -> [String: [String]] {
        let fresh = stack.context()
        return try fresh.performAndWait {
            let libraries = try fresh.fetch(FetchRequest(entityName: "DeclaredLibrary"), as: DeclaredLibrary.self)
            return Dictionary(libraries.map { ($0.name, $0.books.map(\.title)) }, uniquingKeysWith: { a, _ in a })
        }
    }

    @Test("off by default; each outermost perform block is one group; undo and redo walk them")
    func groupsPerPerform() throws {
        let (stack, context, undo) = try stack()
        #expect(stack.context().undoManager == nil)
        let library = context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            undo.setActionName("Add Library")
            return library
        }
        context.performAndWait { library.name = "Stabi"; library.rating = 5 }
        context.performAndWait {
            #expect(undo.canUndo)
            #expect(!undo.canRedo)
            context.undo()
            #expect(library.name == "AGB")
            #expect(library.rating == 2.5)
            #expect(undo.undoActionName == "Add Library")
            context.undo()
            #expect(!library.isInserted)
            #expect(context.registeredObject(for: library.objectID) == nil)
            #expect(!undo.canUndo)
            context.redo()
            #expect(library.isInserted && library.name == "AGB")
            context.redo()
            #expect(library.name == "Stabi" && library.rating == 5)
            #expect(!undo.canRedo)
            context.undo()
            library.city = "Potsdam"  // a new change forgets what could be redone
            undo.endUndoGrouping()
        }
        context.performAndWait { #expect(!undo.canRedo) }
    }

    @Test("explicit groups span perform blocks and nest; registration can be paused")
    func explicitGroups() throws {
        let (_, context, undo) = try stack()
        let library = context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "A"
            return library
        }
        context.performAndWait {
            undo.beginUndoGrouping()
            library.name = "B"
        }
        context.performAndWait {
            undo.beginUndoGrouping()
            library.rating = 1
            undo.endUndoGrouping()
            #expect(undo.groupingLevel == 1)
            undo.endUndoGrouping()
            undo.disableUndoRegistration()
            library.city = "not recorded"
            undo.enableUndoRegistration()
            context.undo()
            #expect(library.name == "A" && library.rating == 2.5)
            #expect(library.city == "not recorded")
        }
    }

    @Test("a cascading delete comes back whole: the deleted objects, their relationships and order")
    func cascadeDelete() throws {
        let (stack, context, _) = try stack()
        try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            for title in ["Momo", "Krabat", "Emil"] {
                let book = DeclaredBook(context: context)
                book.title = title
                book.library = library
            }
            try context.save()
        }
        try context.performAndWait {
            let library = try #require(try context.fetch(FetchRequest(entityName: "DeclaredLibrary"), as: DeclaredLibrary.self).first)
            context.delete(library)
            #expect(context.deletedObjects.count == 4)
        }
        try context.performAndWait {
            context.undo()
            #expect(context.deletedObjects.isEmpty)
            #expect(!context.hasChanges)
            try context.save()
        }
        #expect(try stored(stack) == ["AGB": ["Momo", "Krabat", "Emil"]])
    }

    @Test("undo after a save makes objects dirty again; the next save stores the undone state")
    func acrossSaves() throws {
        let (stack, context, _) = try stack()
        let library = try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            try context.save()
            return library
        }
        try context.performAndWait {
            library.name = "Stabi"
            try context.save()
        }
        try context.performAndWait {
            #expect(!context.hasChanges)
            context.undo()
            #expect(library.name == "AGB")
            #expect(library.isUpdated)
            try context.save()
        }
        #expect(try stored(stack) == ["AGB": []])
        // Undoing the saved insert deletes the object; redoing it brings it back.
        try context.performAndWait {
            context.undo()
            #expect(context.hasChanges)  // the rename back to "AGB" was undone first
            context.undo()
            #expect(library.isDeleted)
            try context.save()
        }
        #expect(try stored(stack) == [:])
        try context.performAndWait {
            context.redo()
            #expect(library.isInserted)
            try context.save()
        }
        #expect(try stored(stack) == ["AGB": []])
    }

    @Test("a saved deletion undone writes the row back under its own ID")
    func savedDeletionUndone() throws {
        let (stack, context, _) = try stack()
        let (libraryID, bookID) = try context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            let book = DeclaredBook(context: context)
            book.title = "Momo"
            book.library = library
            try context.save()
            return (library.objectID, book.objectID)
        }
        try context.performAndWait {
            context.delete(try context.existingObject(with: libraryID))
            try context.save()
        }
        #expect(try stored(stack) == [:])
        try context.performAndWait {
            context.undo()
            try context.save()
        }
        #expect(try stored(stack) == ["AGB": ["Momo"]])
        let fresh = stack.context()
        try fresh.performAndWait {
            let book = try #require(try fresh.existingObject(with: bookID) as? DeclaredBook)
            #expect(book.library?.objectID == libraryID)
        }
    }

    @Test("a parent's undo manager records a child's push as one group of the parent, which undo takes back")
    func childPushUndoneInParent() throws {
        let (stack, parent, undo) = try stack()
        _ = stack
        let id = try parent.performAndWait {
            let library = DeclaredLibrary(context: parent)
            library.name = "AGB"
            try parent.save()
            undo.removeAllActions()
            return library.objectID
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            let library = try #require(try child.existingObject(with: id) as? DeclaredLibrary)
            library.name = "Stabi"
            let book = DeclaredBook(context: child)
            book.title = "Faust"
            book.library = library
            try child.save()
        }
        try parent.performAndWait {
            let library = try #require(parent.registeredObject(for: id) as? DeclaredLibrary)
            #expect(library.name == "Stabi")
            #expect(library.books.map(\.title) == ["Faust"])
            #expect(undo.canUndo)
            parent.undo()
            #expect(library.name == "AGB")
            #expect(library.books.isEmpty)
            #expect(parent.insertedObjects.isEmpty)
            parent.redo()
            #expect(library.name == "Stabi")
            #expect(library.books.map(\.title) == ["Faust"])
            try parent.save()
        }
        #expect(try stored(stack) == ["Stabi": ["Faust"]])
    }

    @Test("levelsOfUndo keeps the newest groups; rollback and reset forget them all")
    func levelsAndForgetting() throws {
        let (_, context, undo) = try stack()
        undo.levelsOfUndo = 2
        let library = context.performAndWait { DeclaredLibrary(context: context) }
        for name in ["a", "b", "c"] { context.performAndWait { library.name = name } }
        context.performAndWait {
            context.undo()
            context.undo()
            #expect(library.name == "a")
            #expect(!undo.canUndo)
            library.name = "d"
            context.rollback()
            #expect(!undo.canUndo && !undo.canRedo)
        }
    }

    @Test("undo fires Observation and objectsDidChange for what it changes")
    func undoIsObserved() throws {
        let (_, context, _) = try stack()
        context.observesObjects = true
        let library = context.performAndWait {
            let library = DeclaredLibrary(context: context)
            library.name = "AGB"
            return library
        }
        context.performAndWait { library.name = "Stabi" }
        var changes: [ObjectsDidChange] = []
        let observation = context.addObjectsDidChangeObserver { changes.append($0) }
        context.performAndWait {
            nonisolated(unsafe) var fired = 0
            withObservationTracking { _ = library.name } onChange: { fired += 1 }
            withObservationTracking { _ = library.rating } onChange: { fired += 100 }
            context.undo()
            #expect(fired == 1)
        }
        #expect(changes.last?.inserted == [library.objectID] || changes.last?.updated == [library.objectID])
        observation.cancel()
    }
}
