/// What a child context's save pushes into its parent: one `ChildChange` per changed object,
/// built before the parent is touched; the parent applies them all in one step (`receive`).
struct ChildSavePlan {
    /// The child's changed objects.
    let objects: [ManagedObject]
    private(set) var changes: [ChildChange] = []
    private(set) var inserted: [ManagedObject] = []
    private(set) var updated: [ManagedObject] = []
    private(set) var deleted: [ObjectID] = []

    /// The plan for `context`'s changes (call it after validation).
    init(_ context: ManagedObjectContext) {
        objects = Array(context.changed.values)
        for object in objects where object.hasChanges {
            if object.deletedFlag {
                changes.append(ChildChange(id: object.objectID, inserted: false, deleted: true, values: [], toMany: []))
                deleted.append(object.objectID)
                continue
            }
            let info = object.info
            // An inserted object gives every column, and the transient values it set.
            let slots = object.insertedFlag ? Array(0..<info.columnCount) + object.changes.slots.filter { $0 >= info.columnCount }
                                            : object.changes.slots
            let values = slots.map { (slot: $0, value: context.currentValue(object, slot: $0)) }
            var toMany: [(slot: Int, members: [ObjectID], reordered: Bool)] = []
            for relationship in info.relationships where relationship.kind != .toOne {
                // An inserted object gives every list: the parent may hold an older state of it
                // (a deletion the child pushed, then undid), whose lists it must not keep.
                let state = object.toMany[relationship.slot]
                guard state?.isChanged == true || object.insertedFlag else { continue }
                toMany.append((relationship.slot, context.members(object, relationship), state?.orderChanged ?? false))
            }
            changes.append(ChildChange(id: object.objectID, inserted: object.insertedFlag, deleted: false, values: values, toMany: toMany))
            if object.insertedFlag { inserted.append(object) } else { updated.append(object) }
        }
    }
}

/// One object's changes, pushed by a child's save into its parent.
struct ChildChange {
    var id: ObjectID
    var inserted: Bool
    var deleted: Bool
    /// Changed column slots (every slot for an inserted object) and their values.
    var values: [(slot: Int, value: PropertyValue)]
    /// Changed to-many relationships: slot, the whole current member list, and whether the
    /// child rearranged the order.
    var toMany: [(slot: Int, members: [ObjectID], reordered: Bool)]
}
