/// A managed object seen by a predicate: its current (unsaved) state.
struct ObjectSubject: PredicateSubject {
    let object: ManagedObject
    let context: ManagedObjectContext

    var subjectID: ObjectID { object.objectID }
    var entity: EntityInfo { object.info }
    func attributeValue(slot: Int) throws -> AttributeValue { context.currentAttribute(object, slot: slot) }
    func toOneTarget(_ relationship: EntityInfo.Relationship) throws -> ObjectID? { context.toOneTarget(object, relationship) }
    func toManyMembers(_ relationship: EntityInfo.Relationship) throws -> [ObjectID] { context.members(object, relationship) }
}

struct ContextResolver: SubjectResolver {
    let context: ManagedObjectContext
    func subject(for id: ObjectID) throws -> PredicateSubject? {
        let object = context.object(with: id)
        if object.deletedFlag { return nil }
        guard (try? context.fulfill(object)) != nil || object.insertedFlag else { return nil }
        return ObjectSubject(object: object, context: context)
    }
}
