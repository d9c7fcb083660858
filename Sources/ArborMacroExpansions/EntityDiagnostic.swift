import SwiftDiagnostics

/// What the `@Entity` macro reports: each message names the property and the fix.
enum EntityDiagnostic: DiagnosticMessage {
    case notAClass
    case notAManagedObject(String)
    case missingType(String)
    case unsupportedType(String, String, String)
    case notARelationship(String, String)
    case keyedForm(String, String)
    case transformable(String)
    case compoundNotAList(String)
    case compoundNotAProperty(String)
    case compoundNotPersisted(String)
    case compoundOutsideEntity(String)

    var message: String {
        switch self {
        case .notAClass:
            return "@Entity applies to a class: declare 'final class Name: ManagedObject'"
        case .notAManagedObject(let name):
            return "@Entity class '\(name)' must subclass ManagedObject (or another @Entity class)"
        case .missingType(let property):
            return "persisted property '\(property)' needs a type annotation (for example 'var \(property): String'), or mark it @Transient"
        case .unsupportedType(let property, let type, let why):
            return "property '\(property)' of type '\(type)' cannot be stored (\(why)): use String, Int, Int64, Int32, Int16, Double, "
                + "Float, Bool, Date, Data, UUID, URL, Decimal or an AttributeConvertible type, optional or not; 'T?' or '[T]' of a "
                + "ManagedObject subclass for a relationship; or mark it @Transient to keep it in memory only"
        case .notARelationship(let property, let type):
            return "@Relationship on '\(property)' needs a relationship type: 'Destination?' (to-one) or '[Destination]' (to-many), not '\(type)'"
        case .compoundNotAList(let macro):
            return "each argument of #\(macro) is one \(macro == "Index" ? "index" : "constraint"), a list of properties: "
                + "#\(macro)<Stop>([\\.longitude, \\.latitude])"
        case .compoundNotAProperty(let macro):
            return "#\(macro) names properties of the class itself, one key path component each: '\\.name'"
        case .compoundNotPersisted(let property):
            return "'\(property)' in #Index or #Unique is not a persisted property of this class (a transient, computed or "
                + "inherited one cannot be indexed here)"
        case .compoundOutsideEntity(let macro):
            return "#\(macro) belongs in the body of an @Entity class; for a hand-written model, list the index in its EntityDescription"
        case .transformable(let property):
            return "@Transformable(\"key\") belongs to hand-written models: in an @Entity class, give '\(property)' a type that "
                + "conforms to AttributeConvertible (for example by encoding it as Data), or mark it @Transient"
        case .keyedForm(let property, let form):
            return "in an @Entity class the property's name is the \(form == "Attribute" ? "attribute" : "relationship")'s name: "
                + "write 'var \(property)' without @\(form)(\"key\"), and use @\(form)(originalName:) when it was renamed"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "ArborMacros", id: "\(self)".prefix { $0 != "(" }.description) }
    var severity: DiagnosticSeverity { .error }
}
