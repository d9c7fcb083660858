extension ManagedObjectContext {
    /// Marks `object` deleted and applies its relationships' delete rules at once: nullify
    /// removes it from each related object's inverse, cascade deletes the related objects too,
    /// deny is checked by `save`, no action leaves the related objects as they are. Deleting an
    /// object inserted since the last save simply forgets it.
    public func delete(_ object: ManagedObject) {
        guard owns(object) else {
            pendingFailures.append(ValidationFailure(objectID: object.objectID, entity: object.entityName, key: "",
                                                     kind: .objectFromAnotherContext(object.objectID)))
            return
        }
        graph.delete(object)
    }
}
