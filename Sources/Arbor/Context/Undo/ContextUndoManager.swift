/// Undo and redo for one context's object graph (Core Data's `undoManager`).
///
/// Give a context one to turn undo on (it is off by default, and should stay off for imports):
/// ```swift
/// context.undoManager = ContextUndoManager()
/// context.performAndWait { stop.name = "Alex" }   // one group per outermost perform block
/// context.undo()                                    // stop.name is back
/// ```
/// Every change made in the context is recorded — inserts, deletes with their cascades and
/// nullified partners, attribute and relationship changes with their inverses — as the state of
/// each object the change touched, before and after; undo puts back the properties a group
/// changed and leaves the others (changes made while registration was off, merged values) as
/// they are. Changes are grouped per outermost
/// `perform` / `performAndWait` block (or by `processPendingChanges()`), or explicitly between
/// `beginUndoGrouping()` and `endUndoGrouping()`. Undoing after a save makes the objects dirty
/// again (a saved insert is deleted, a saved deletion re-inserted under its own ID) for the
/// next save to write. Refreshes, merges and saves are not undoable; `rollback()` and
/// `reset()` remove every action.
///
/// Use it on its context's queue only. Recording costs, per object first changed in a group,
/// a load of the object and of its to-many lists.
public final class ContextUndoManager {
    /// The number of groups kept for undo; the oldest go first. 0: no limit (the default).
    public var levelsOfUndo = 0 {
        didSet { trim() }
    }
    /// Whether changes are grouped per outermost `perform` block (true, the default); otherwise
    /// only explicit groups close, and changes outside them join the open group.
    public var groupsByPerform = true
    /// Whether undo or redo is running now.
    public private(set) var isUndoing = false
    public private(set) var isRedoing = false

    weak var context: ManagedObjectContext?
    private var undoStack: [UndoGroup] = []
    private var redoStack: [UndoGroup] = []
    /// The group being recorded: the objects changed since it opened, with their first state.
    private var open: UndoGroup.Recording?
    private var explicitDepth = 0
    private var disabledDepth = 0
    private var pendingActionName = ""

    public init() {}

    // MARK: State

    public var canUndo: Bool { !undoStack.isEmpty || open?.isEmpty == false }
    public var canRedo: Bool { !redoStack.isEmpty && (open?.isEmpty ?? true) }
    /// The name of the group `undo()` would undo ("" when unnamed).
    public var undoActionName: String { open.map { _ in pendingActionName } ?? undoStack.last?.actionName ?? "" }
    /// The name of the group `redo()` would redo.
    public var redoActionName: String { redoStack.last?.actionName ?? "" }
    /// How many explicit groups are open.
    public var groupingLevel: Int { explicitDepth }
    /// Whether changes are recorded (see `disableUndoRegistration()`).
    public var isUndoRegistrationEnabled: Bool { disabledDepth == 0 }

    /// Names the group being recorded (shown as "Undo \(name)" in a menu).
    public func setActionName(_ name: String) { pendingActionName = name }

    // MARK: Grouping

    /// Opens an explicit group: everything until the matching `endUndoGrouping()` is undone
    /// together. Nested groups join the outermost. Closes the automatic group first.
    public func beginUndoGrouping() {
        if explicitDepth == 0 { closeGroup() }
        explicitDepth += 1
    }

    /// Closes an explicit group opened by `beginUndoGrouping()`; unmatched calls do nothing.
    public func endUndoGrouping() {
        guard explicitDepth > 0 else { return }
        explicitDepth -= 1
        if explicitDepth == 0 { closeGroup() }
    }

    /// Stops recording until the matching `enableUndoRegistration()`.
    public func disableUndoRegistration() { disabledDepth += 1 }
    public func enableUndoRegistration() { disabledDepth = max(0, disabledDepth - 1) }

    /// Forgets every group, open or closed.
    public func removeAllActions() {
        undoStack = []
        redoStack = []
        open = nil
        explicitDepth = 0
        pendingActionName = ""
    }

    // MARK: Undo and redo

    /// Undoes the last group (closing the open one first, explicit or not).
    public func undo() {
        explicitDepth = 0
        closeGroup()
        guard let context, let group = undoStack.popLast() else { return }
        isUndoing = true
        defer { isUndoing = false }
        for change in group.changes { context.restore(change.resolved(in: context), to: change.before, from: change.after) }
        redoStack.append(group)
    }

    /// Redoes the last group undone. Any new change forgets what could be redone.
    public func redo() {
        explicitDepth = 0
        closeGroup()
        guard let context, let group = redoStack.popLast() else { return }
        isRedoing = true
        defer { isRedoing = false }
        for change in group.changes { context.restore(change.resolved(in: context), to: change.after, from: change.before) }
        undoStack.append(group)
        trim()
    }

    // MARK: Recording (called by the context)

    /// Records `object`'s state before its first change in the open group.
    func willChange(_ object: ManagedObject) {
        guard disabledDepth == 0, !isUndoing, !isRedoing, let context else { return }
        // Edited in place: a copy of the recording per edit would make a group quadratic.
        if open == nil { open = UndoGroup.Recording() }
        let key = ObjectIdentifier(object)
        guard open?.first[key] == nil else { return }
        let snapshot = context.snapshot(object)
        open?.first[key] = (object, snapshot)
        open?.order.append(key)
    }

    /// Closes the automatic group at the end of a `perform` block.
    func performDidEnd() {
        guard groupsByPerform, explicitDepth == 0 else { return }
        closeGroup()
    }

    /// Points every recorded state at the permanent IDs a save gave.
    func remap(_ permanent: [ObjectID: ObjectID]) {
        guard !permanent.isEmpty else { return }
        let map: (ObjectID) -> ObjectID = { permanent[$0] ?? $0 }
        undoStack = undoStack.map { $0.remapped(map) }
        redoStack = redoStack.map { $0.remapped(map) }
        open?.remap(map)
    }

    /// Ends the open group: each object's state now is its after-state; a group that changed
    /// nothing is dropped. A new group forgets what could be redone.
    private func closeGroup() {
        guard let recording = open, let context else {
            open = nil
            return
        }
        open = nil
        let changes = recording.order.compactMap { key -> UndoGroup.Change? in
            guard let (object, before) = recording.first[key] else { return nil }
            let after = context.snapshot(object)
            return before == after ? nil : UndoGroup.Change(object: object, before: before, after: after)
        }
        let name = pendingActionName
        pendingActionName = ""
        guard !changes.isEmpty else { return }
        undoStack.append(UndoGroup(changes: changes, actionName: name))
        redoStack = []
        trim()
    }

    private func trim() {
        if levelsOfUndo > 0, undoStack.count > levelsOfUndo { undoStack.removeFirst(undoStack.count - levelsOfUndo) }
    }
}

/// One undoable group: each object it changed, with its state before and after.
struct UndoGroup {
    struct Change {
        /// The instance changed; kept so an insert undone can be redone with the same object.
        let object: ManagedObject
        var before: ObjectSnapshot
        var after: ObjectSnapshot

        /// The instance to restore: the one registered for the object's ID now, if any.
        func resolved(in context: ManagedObjectContext) -> ManagedObject {
            context.registeredObject(for: object.objectID) ?? object
        }
    }

    /// A group being recorded: the first state of each object changed, in order of change.
    struct Recording {
        var first: [ObjectIdentifier: (ManagedObject, ObjectSnapshot)] = [:]
        var order: [ObjectIdentifier] = []
        var isEmpty: Bool { order.isEmpty }

        mutating func remap(_ map: (ObjectID) -> ObjectID) {
            first = first.mapValues { ($0.0, $0.1.remapped(map)) }
        }
    }

    var changes: [Change]
    var actionName: String

    func remapped(_ map: (ObjectID) -> ObjectID) -> UndoGroup {
        UndoGroup(changes: changes.map { Change(object: $0.object, before: $0.before.remapped(map), after: $0.after.remapped(map)) },
                  actionName: actionName)
    }
}
