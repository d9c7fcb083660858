import ArborEngine
import Foundation

/// Failures of opening, reading and writing a persistent store.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No file at the path, and the store was not asked to create one.
    case fileNotFound(path: String)
    /// The file is not an Arbor store (another format, or an engine file without an object model).
    case notAStoreFile(path: String, detail: String)
    /// The file is an Arbor store, but damaged; the detail names the page or record.
    case corruptStore(path: String, detail: String)
    /// The store was written with a different model; `differences` lists each change.
    case modelMismatch(path: String, storeHash: String, modelHash: String, differences: [String])
    /// The store was written with a different model and the change is not a lightweight
    /// migration; `changes` names each offending change. The file is untouched.
    case migrationNotLightweight(path: String, changes: [String])
    /// A lightweight migration could not finish because the data does not fit the new model
    /// (a new unique index over equal values). The file is untouched.
    case migrationFailed(path: String, detail: String)
    /// A row's bytes do not decode; `location` names the tree and key.
    case corruptRow(location: String, detail: String)
    /// A write was attempted on a store opened read-only.
    case readOnlyStore(path: String)
    /// No store of the coordinator holds the entity.
    case noStoreForEntity(String)
    /// The storage engine failed (I/O error, corrupt page, …).
    case engine(ArborError)
    /// Rows changed or deleted by someone else since this context read them.
    case conflicts([SaveConflict])
    /// The store cannot do what was asked (a store in memory has no file to compact).
    case unsupported(String)

    public var description: String {
        switch self {
        case .fileNotFound(let path): return "\(path): no such store file"
        case .notAStoreFile(let path, let detail): return "\(path): not an Arbor store: \(detail)"
        case .corruptStore(let path, let detail): return "\(path): corrupt store: \(detail)"
        case .modelMismatch(let path, let storeHash, let modelHash, let differences):
            return "\(path): the store's model (\(storeHash)) differs from the app's model (\(modelHash)): "
                + differences.joined(separator: "; ")
        case .migrationNotLightweight(let path, let changes):
            return "\(path): the store's model cannot be migrated lightweight: " + changes.joined(separator: "; ")
        case .migrationFailed(let path, let detail): return "\(path): migration failed: \(detail)"
        case .corruptRow(let location, let detail): return "corrupt row \(location): \(detail)"
        case .readOnlyStore(let path): return "\(path): the store is read-only"
        case .noStoreForEntity(let name): return "no store of the coordinator holds entity \(name)"
        case .engine(let error): return error.description
        case .unsupported(let detail): return "unsupported: \(detail)"
        case .conflicts(let conflicts):
            return "optimistic locking failure: " + conflicts.map(\.description).joined(separator: "; ")
        }
    }
}

/// A row that changed underneath a context between its read and its save.
public struct SaveConflict: Equatable, Sendable, CustomStringConvertible {
    public var objectID: ObjectID
    /// The version the context last read.
    public var expectedVersion: UInt64
    /// The version in the store now (nil: the row was deleted).
    public var storedVersion: UInt64?

    public init(objectID: ObjectID, expectedVersion: UInt64, storedVersion: UInt64?) {
        self.objectID = objectID
        self.expectedVersion = expectedVersion
        self.storedVersion = storedVersion
    }

    public var description: String {
        "\(objectID): expected version \(expectedVersion), store has \(storedVersion.map(String.init) ?? "no row (deleted)")"
    }
}

/// Why an object cannot be saved.
public enum ValidationFailureKind: Equatable, Sendable {
    /// A non-optional attribute or to-one relationship is nil.
    case missingValue
    /// The value set does not have the attribute's type.
    case typeMismatch(expected: AttributeType, found: String)
    case tooFewMembers(minimum: Int, count: Int)
    case tooManyMembers(maximum: Int, count: Int)
    /// A relationship with the deny rule still has members.
    case deleteDenied(count: Int)
    /// Another object has the same values for a uniqueness constraint.
    case uniqueConstraint(properties: [String], conflictingObject: ObjectID)
    /// A to-one relationship points at an object that is being deleted or is not saved anywhere.
    case danglingReference(ObjectID)
    /// The object's class is not the class of any entity in the model.
    case entityNotInModel
    /// The object's entity is abstract: only its sub-entities can have instances.
    case abstractEntity
    /// An object of another context was used in this one (pass object IDs between contexts).
    case objectFromAnotherContext(ObjectID)
    /// A dynamic `setValue(_:forKey:)` could not be applied (unknown key, wrong type).
    case invalidValue(String)
    /// A number below the attribute's minimum (Core Data's `NSValidationNumberTooSmallError`).
    case numberTooSmall(minimum: AttributeValue)
    /// A number above the attribute's maximum (`NSValidationNumberTooLargeError`).
    case numberTooLarge(maximum: AttributeValue)
    /// A date before the attribute's minimum (`NSValidationDateTooSoonError`).
    case dateTooSoon(minimum: AttributeValue)
    /// A date after the attribute's maximum (`NSValidationDateTooLateError`).
    case dateTooLate(maximum: AttributeValue)
    /// A string (characters) or data (bytes) shorter than the minimum length
    /// (`NSValidationStringTooShortError`).
    case tooShort(minimum: Int, length: Int)
    /// A string (characters) or data (bytes) longer than the maximum length
    /// (`NSValidationStringTooLongError`).
    case tooLong(maximum: Int, length: Int)
    /// A string that does not match the attribute's pattern as a whole
    /// (`NSValidationStringPatternMatchingError`).
    case patternMismatch(pattern: String)
    /// The app set a derived attribute, whose value is computed at save from its expression.
    case derivedAttributeSet(derivation: String)
    /// A failure an app's validation method reported (`validateForInsert()`, `validateValue(_:forKey:)`, …).
    case custom(String)
}

/// One validation failure: which object, which property, what is wrong.
///
/// Validation methods of a `ManagedObject` subclass may throw one (or a `ValidationError` with
/// several); the save reports it with every other failure.
public struct ValidationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var objectID: ObjectID?
    public var entity: String
    /// The property, or "" for a failure of the whole object.
    public var key: String
    public var kind: ValidationFailureKind
    /// For a batch insert: the position of the object in the request (from 0).
    public var batchIndex: Int?

    public init(objectID: ObjectID?, entity: String, key: String, kind: ValidationFailureKind, batchIndex: Int? = nil) {
        self.objectID = objectID
        self.entity = entity
        self.key = key
        self.kind = kind
        self.batchIndex = batchIndex
    }

    /// A failure of `object`'s property `key` ("" for the whole object), as a validation
    /// method reports it: `throw ValidationFailure(self, key: "end", "ends before it starts")`.
    public init(_ object: ManagedObject, key: String = "", _ message: String) {
        self.init(objectID: object.objectID, entity: object.entityName, key: key, kind: .custom(message))
    }

    public var description: String {
        let subject = "\(entity).\(key)" + (objectID.map { " of \($0)" } ?? "") + (batchIndex.map { " of batch object \($0)" } ?? "")
        switch kind {
        case .missingValue: return "\(subject): a value is required"
        case .typeMismatch(let expected, let found): return "\(subject): expected \(expected.rawValue), found \(found)"
        case .tooFewMembers(let minimum, let count): return "\(subject): \(count) members, at least \(minimum) required"
        case .tooManyMembers(let maximum, let count): return "\(subject): \(count) members, at most \(maximum) allowed"
        case .deleteDenied(let count): return "\(subject): cannot delete while \(count) related objects remain (deny rule)"
        case .uniqueConstraint(let properties, let other):
            return "\(subject): values of (\(properties.joined(separator: ", "))) are already used by \(other)"
        case .danglingReference(let target): return "\(subject): refers to \(target), which is deleted or not in the graph"
        case .entityNotInModel: return "\(subject): the object's class is not an entity of the model"
        case .abstractEntity: return "\(subject): the entity is abstract; insert one of its sub-entities"
        case .objectFromAnotherContext(let other): return "\(subject): \(other) belongs to another context"
        case .invalidValue(let detail): return "\(subject): \(detail)"
        case .numberTooSmall(let minimum): return "\(subject): below the minimum \(minimum)"
        case .numberTooLarge(let maximum): return "\(subject): above the maximum \(maximum)"
        case .dateTooSoon(let minimum): return "\(subject): before the earliest date \(minimum)"
        case .dateTooLate(let maximum): return "\(subject): after the latest date \(maximum)"
        case .tooShort(let minimum, let length): return "\(subject): length \(length), at least \(minimum) required"
        case .tooLong(let maximum, let length): return "\(subject): length \(length), at most \(maximum) allowed"
        case .patternMismatch(let pattern): return "\(subject): does not match the pattern \(pattern)"
        case .derivedAttributeSet(let derivation): return "\(subject): is derived from \(derivation) at save and cannot be set"
        case .custom(let message): return "\(subject): \(message)"
        }
    }
}

/// A save refused before anything was written: every failure is listed.
public struct ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var failures: [ValidationFailure]

    public init(failures: [ValidationFailure]) { self.failures = failures }

    /// Runs every check, even after one throws, and throws the failures of all of them
    /// together: how a validation method combines its superclass's checks with its own, as
    /// Core Data asks (`NSValidationMultipleErrorsError`).
    /// ```swift
    /// override func validateForInsert() throws {
    ///     try ValidationError.collect({ try super.validateForInsert() }, { try self.checkTimes() })
    /// }
    /// ```
    /// A check's `ValidationError` gives its failures, a `ValidationFailure` itself; any other
    /// error becomes a `.custom` failure without an object or key.
    public static func collect(_ checks: (() throws -> Void)...) throws {
        var failures: [ValidationFailure] = []
        for check in checks {
            do { try check() } catch { failures += Self.failures(of: error) }
        }
        guard failures.isEmpty else { throw ValidationError(failures: failures) }
    }

    /// The failures an error thrown by a validation method stands for.
    static func failures(of error: any Error) -> [ValidationFailure] {
        switch error {
        case let error as ValidationError: return error.failures
        case let failure as ValidationFailure: return [failure]
        default: return [ValidationFailure(objectID: nil, entity: "", key: "", kind: .custom(String(describing: error)))]
        }
    }
    public var description: String {
        "validation failed (\(failures.count)): " + failures.map(\.description).joined(separator: "; ")
    }
}

/// Misuse of a context or object that the context detects at run time.
public enum ContextError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No row exists for the ID (deleted, or never saved).
    case objectNotFound(ObjectID)
    /// The object belongs to another context: pass its `objectID` instead.
    case objectFromAnotherContext(ObjectID)
    /// The entity has no property of that name.
    case unknownKey(entity: String, key: String)
    /// The value does not fit the property.
    case invalidValue(entity: String, key: String, detail: String)
    /// The URI does not name an object of this coordinator's stores.
    case invalidURI(String)
    /// The entity name is not in the model.
    case unknownEntity(String)
    /// The class is not the class of exactly one entity in the model.
    case unknownClass(String)
    /// The context has no persistent store coordinator with a store.
    case noPersistentStore

    public var description: String {
        switch self {
        case .objectNotFound(let id): return "no object for \(id): it was deleted or never saved"
        case .objectFromAnotherContext(let id): return "\(id) belongs to another context; pass its objectID instead"
        case .unknownKey(let entity, let key): return "entity \(entity) has no property \(key)"
        case .invalidValue(let entity, let key, let detail): return "\(entity).\(key): \(detail)"
        case .invalidURI(let uri): return "\(uri) does not name an object of this coordinator"
        case .unknownEntity(let name): return "entity \(name) is not in the model"
        case .unknownClass(let name): return "class \(name) is not the class of exactly one entity of the model"
        case .noPersistentStore: return "the context's coordinator has no persistent store"
        }
    }
}

/// Maps engine errors to store errors naming the file.
func storeError(_ error: Error, path: String) -> Error {
    guard let engine = error as? ArborError else { return error }
    switch engine {
    case .notAnArborFile, .unsupportedFormatVersion: return StoreError.notAStoreFile(path: path, detail: engine.description)
    case .corruptPage, .pageOutOfRange, .truncatedFile, .noValidMetaPage, .decompressionFailed, .malformedTupleKey:
        return StoreError.corruptStore(path: path, detail: engine.description)
    default: return StoreError.engine(engine)
    }
}
