/// A context's inserted, updated and deleted objects, held strongly until saved or rolled back
/// (the identity map holds no object). Each object's `isMarkedChanged` flag says whether it is
/// here, so marking an object already marked costs no hashing; the set and the flags change
/// only here, together.
struct ChangedObjects {
    private var objects: [ObjectID: ManagedObject] = [:]

    /// The changed object with `id`. O(1).
    subscript(id: ObjectID) -> ManagedObject? { objects[id] }

    var values: Dictionary<ObjectID, ManagedObject>.Values { objects.values }
    var ids: Dictionary<ObjectID, ManagedObject>.Keys { objects.keys }
    var isEmpty: Bool { objects.isEmpty }

    /// Holds `object` (replacing another object with its ID, which is then unmarked).
    mutating func mark(_ object: ManagedObject) {
        guard !object.isMarkedChanged else { return }
        if let previous = objects.updateValue(object, forKey: object.objectID), previous !== object { previous.isMarkedChanged = false }
        object.isMarkedChanged = true
    }

    /// Lets go of `object`, when it is the one held for its ID.
    mutating func unmark(_ object: ManagedObject) {
        guard let present = objects[object.objectID], present === object else { return }
        objects[object.objectID] = nil
        object.isMarkedChanged = false
    }

    mutating func removeAll() {
        for object in objects.values { object.isMarkedChanged = false }
        objects = [:]
    }
}

extension ManagedObjectContext {
    public var insertedObjects: Set<ManagedObject> { Set(changed.values.filter { $0.insertedFlag && !$0.deletedFlag }) }
    public var updatedObjects: Set<ManagedObject> { Set(changed.values.filter { $0.isUpdated }) }
    public var deletedObjects: Set<ManagedObject> { Set(changed.values.filter { $0.deletedFlag && !$0.insertedFlag }) }
    /// Whether a save would write anything (or report a problem a setter met).
    public var hasChanges: Bool { changed.values.contains { $0.hasChanges } || !pendingFailures.isEmpty }

    /// Notes that `object` has unsaved changes (for observers too).
    func markChanged(_ object: ManagedObject) {
        notice(object)
        changed.mark(object)
    }

    func unmarkChanged(_ object: ManagedObject) { changed.unmark(object) }

    /// Forgets every change (after a save, a rollback or a reset).
    func clearChanged() { changed.removeAll() }
}
