import Foundation

/// The parameters the framework passes when it instantiates a managed object class.
/// Subclasses inherit the initializer that takes it; they never build one themselves.
public struct ObjectConstruction {
    let id: ObjectID
    /// The context's shared link, not the context: a context is weakly referenced (by its
    /// link, by observers), so its reference counts live in a side table, and each retain and
    /// release of it took the runtime's slow path, twice for every object made.
    let link: ContextLink

    init(id: ObjectID, context: ManagedObjectContext) {
        self.id = id
        link = context.link
    }
}

/// A context's weak reference to itself, which its objects share (see
/// `ManagedObject.managedObjectContext`).
final class ContextLink {
    weak var context: ManagedObjectContext?
    /// The context again, not retained: valid while `isAlive` (the context's `deinit` clears
    /// that first). For a deinitializing object, which takes itself out of the context's
    /// identity map: a weak load costs a retain and a release of the context on top.
    @exclusivity(unchecked) var owner: Unmanaged<ManagedObjectContext>?
    /// False once the context has gone: what a property read tests instead of loading the weak
    /// reference (a load and a release). Unchecked, as are the slots: a link is used on its
    /// context's queue only, and its accesses never overlap.
    @exclusivity(unchecked) var isAlive = true
    /// `@Attribute` wrappers' slots by the wrapper's key path (see
    /// `ManagedObjectContext.attributeSlot`), at most 1,024.
    @exclusivity(unchecked) var attributeSlots: [KeyPathIdentity: AttributeSlot] = [:]
    /// Whether property reads register with Swift's Observation (`observesObjects`).
    @exclusivity(unchecked) var observesObjects = false

    /// A cached slot: the key path and entity are kept so their identities stay unique.
    struct AttributeSlot {
        let keyPath: AnyKeyPath
        let info: EntityInfo
        let slot: Int
    }

    /// The cached slot of the wrapper at `keyPath` in an object of `info`, if cached.
    /// - Complexity: O(1).
    @inline(__always)
    func cachedSlot(_ keyPath: AnyKeyPath, info: EntityInfo) -> Int? {
        guard let cached = attributeSlots[KeyPathIdentity(id: ObjectIdentifier(keyPath))], cached.info === info else { return nil }
        return cached.slot
    }
}

/// An object of the graph, owned by one context (Core Data's `NSManagedObject`).
///
/// Subclass it per entity, marked `@Entity`: its stored properties are the entity's attributes
/// and relationships.
/// ```swift
/// @Entity
/// final class Stop: ManagedObject {
///     var name: String = ""
///     @Relationship(inverse: \StopTime.stop, deleteRule: .cascade) var stopTimes: [StopTime]
/// }
/// ```
/// (With a model written by hand, mark the properties `@Attribute("name")` and
/// `@Relationship("stopTimes")` instead.)
/// Property reads go through the context: a fault loads its row on the first read (from the
/// store's row cache or one point lookup). Related objects are held by ID, never retained, so
/// graphs have no retain cycles. Not `Sendable`: use it only inside its context's `perform` —
/// letting go of it too, as its release takes it out of the context's identity map; pass
/// `objectID` to other contexts.
open class ManagedObject: Hashable, CustomStringConvertible {
    /// The object's ID: temporary until the first save, permanent afterwards.
    // Unchecked: read for nearly everything done with an object (a checked read costs about
    // 120 instructions), written only by saves and merges on the context's queue, never while
    // being read.
    @exclusivity(unchecked) public internal(set) var objectID: ObjectID
    /// The owning context (nil once the object is deleted and saved, or its context is gone).
    public internal(set) var managedObjectContext: ManagedObjectContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
    /// The context's one weak reference to itself, shared by all its objects: storing a weak
    /// reference in every object cost about 200 instructions an object to create.
    private(set) var contextLink: ContextLink?
    let info: EntityInfo
    /// What few objects have (see `ObjectExtras`), made when first set. Unchecked: read by every
    /// release (`deinit`), used on the context's queue only.
    @exclusivity(unchecked) var extras: ObjectExtras?

    // State, read and written only on the context's queue.
    var isFaultState = true
    /// The committed state. A stored row's is kept as its parts (`storedColumns` and
    /// `storedReferences`) and made when asked: a fetched object then holds each part once, and
    /// its creation and release skip the state's enum and its slot table.
    var committedValues: CommittedValues? {
        get {
            if let storedReferences, let storedColumns { return CommittedValues(columns: storedColumns, references: storedReferences, info: info) }
            return givenCommitted
        }
        set {
            if let newValue, let columns = newValue.storedColumns, let references = newValue.storedReferences {
                givenCommitted = nil
                storedReferences = references
                keep(columns)
            } else {
                givenCommitted = newValue
                storedReferences = nil
                keep(nil)
            }
        }
    }
    /// The committed state when it is not a stored row's: values given by a parent context or a save.
    private var givenCommitted: CommittedValues?
    /// How the reference columns of `storedColumns` become IDs, when they are the committed state.
    private var storedReferences: StoredReferences?
    /// Whether the committed state is known (read without making it).
    var hasCommittedValues: Bool { storedReferences != nil || givenCommitted != nil }
    /// The committed state's stored columns, when it holds a row's: a property read takes
    /// them without copying the committed state (see `storedAttribute`). Unchecked, as is
    /// `changes`: read at every property read, never accessed in overlapping ways.
    @exclusivity(unchecked) private(set) var storedColumns: RowColumns?
    /// The storage of `storedColumns` when kept encoded, not retained, and where the row's
    /// record starts in it (set with them, by `keep(_:)`): a property read through the columns
    /// themselves retained and released their storage, as the column's decoding might (for all
    /// the compiler knows) replace them.
    @exclusivity(unchecked) private var storedEncoded: Unmanaged<EncodedRows>?
    @exclusivity(unchecked) private var storedEncodedRow = 0
    var committedVersion: UInt64?
    @exclusivity(unchecked) var changes = ChangeSet()
    /// Whether the object is in its context's `changed` map (kept by the context's
    /// `markChanged`/`unmarkChanged`/`clearChanged`, so a property write skips the map).
    var isMarkedChanged = false
    var toMany = ToManySlots()
    var insertedFlag = false
    var deletedFlag = false
    /// Where the context's identity map holds this object (see `IdentityMap.remove`).
    /// Unchecked: read and written by the map on the context's queue only.
    @exclusivity(unchecked) var identitySlot = -1

    /// The initializer the framework calls; subclasses inherit it.
    public required init(_ construction: ObjectConstruction) {
        objectID = construction.id
        contextLink = construction.link
        info = construction.id.info
    }

    /// Creates an object of the entity whose class is `Self` and inserts it into `context`.
    /// If the class is not the class of exactly one entity, the next save fails with
    /// `ValidationFailureKind.entityNotInModel`.
    public convenience init(context: ManagedObjectContext) {
        let info = context.model?.info(for: Self.self) ?? EntityInfo.unknown(Self.self)
        self.init(ObjectConstruction(id: ObjectID.makeTemporary(info), context: context))
        context.registerInserted(self)
    }

    deinit {
        if let retention = extras?.cacheRetention { retention.cache.release(retention.key) }
        // The link is the object's own field, alive until the deinitializer ends: taken
        // unretained, as a bound copy was retained and released around `forget`.
        guard let link = contextLink.map(Unmanaged.passUnretained) else { return }
        link._withUnsafeGuaranteedRef { link in
            if link.isAlive, let owner = link.owner { owner._withUnsafeGuaranteedRef { $0.forget(self) } }
        }
    }

    /// The value of attribute `slot` when the object is loaded, has no unsaved changes and
    /// holds a stored row: the common case of a property read, which then needs neither the
    /// context nor a copy of the committed state. nil otherwise (the context answers).
    /// - Complexity: O(1), O(length) for a string or data column.
    @inline(__always)
    func storedAttribute(_ slot: Int) -> AttributeValue? {
        guard changes.isEmpty, !isFaultState, !insertedFlag else { return nil }
        if let encoded = storedEncoded {
            // `storedColumns` keeps the storage alive, and decoding a column changes no object.
            let row = storedEncodedRow
            return encoded._withUnsafeGuaranteedRef { $0.attributeValue(at: slot, row: row) }
        }
        return storedColumns?.attributeValue(at: slot)
    }

    /// Makes `columns` the stored columns.
    @inline(__always)
    private func keep(_ columns: RowColumns?) {
        let encoded = columns?.unretainedEncodedStorage
        storedEncoded = encoded?.rows
        storedEncodedRow = encoded?.row ?? 0
        storedColumns = columns
    }

    /// Takes a stored row's columns as the committed state (`CommittedValues(columns:references:info:)`),
    /// each part retained once: a fetch fills every object it returns this way.
    func loadCommitted(columns: RowColumns, references: StoredReferences, version: UInt64) {
        keep(columns)
        givenCommitted = nil
        storedReferences = references
        committedVersion = version
    }

    // MARK: State

    /// The entity's name.
    public var entityName: String { info.name }

    /// Whether the object's data is not loaded yet (reading a property loads it).
    public var isFault: Bool { isFaultState && !insertedFlag }
    public var isInserted: Bool { insertedFlag }
    public var isDeleted: Bool { deletedFlag }
    /// Changed since the last save (and not inserted or deleted).
    public var isUpdated: Bool {
        !insertedFlag && !deletedFlag && (!changes.isEmpty || toMany.hasChanges)
    }
    public var hasChanges: Bool { insertedFlag || deletedFlag || isUpdated }

    // MARK: Lifecycle hooks (override; call super)

    /// Called once when the object is inserted, before any property is set by the app.
    open func awakeFromInsert() {}
    /// Called when a fault's data has been loaded.
    open func awakeFromFetch() {}
    /// Called at the start of a save for each inserted, updated or deleted object; changes made
    /// here are saved too.
    open func willSave() {}
    /// Called when the object is deleted, before delete rules are applied.
    open func prepareForDeletion() {}

    // MARK: Validation (override; combine your failures with super's, see `ValidationError.collect`)

    /// Validates the object before a save inserts it (Core Data's `validateForInsert()`). The
    /// default validates every attribute and to-one relationship with `validateValue(_:forKey:)`,
    /// and each to-many relationship whose member count the model bounds (with its members), and
    /// throws every failure together as a `ValidationError`. Override to check the object as a
    /// whole (its other lists too), calling super.
    /// - Complexity: O(properties), plus the members of each bounded to-many relationship.
    /// - Throws: `ValidationError`, `ValidationFailure`, or any error (reported as `.custom`).
    open func validateForInsert() throws { try validateProperties(changedOnly: false) }

    /// Validates the object before a save writes its changes (Core Data's `validateForUpdate()`):
    /// as `validateForInsert()`, but only the properties that changed (the others were valid
    /// when saved; checking them would load every fault whose list changed).
    open func validateForUpdate() throws { try validateProperties(changedOnly: true) }

    /// Validates the object before a save deletes it (Core Data's `validateForDelete()`). The
    /// default refuses while a relationship with the deny rule still has members (`.deleteDenied`).
    open func validateForDelete() throws { try validateDeleteRules() }

    /// Validates `value` for the property `key` (Core Data's `validateValue(_:forKey:)`, which
    /// calls `validate<Key>`): the default checks the model's rules — a required value, the
    /// attribute's type, its minimum and maximum, length and pattern; a to-many relationship's
    /// member count (`value` an array of objects). Override to add rules per key, calling super:
    /// ```swift
    /// override func validateValue(_ value: Any?, forKey key: String) throws {
    ///     try super.validateValue(value, forKey: key)
    ///     if key == "code", let code = value as? String, code.hasPrefix("X") {
    ///         throw ValidationFailure(self, key: key, "codes starting with X are reserved")
    ///     }
    /// }
    /// ```
    /// Saves call it for every property validated (see `validateForInsert()`); an app may call
    /// it before setting a value, as a form does.
    /// - Throws: `ValidationError` listing the key's failures.
    open func validateValue(_ value: Any?, forKey key: String) throws { try validateModelRules(value, forKey: key) }

    // MARK: The entity `@Entity` declares (overridden by its expansion)

    /// The entity's name: the class's, or the one `@Entity` gives.
    open class var _$entityName: String { String(describing: self) }
    /// The properties `@Entity` persists, this class's after its superclasses'.
    open class var _$propertyNames: [String] { [] }
    /// `_$propertyNames.count`, without building the list.
    open class var _$propertyCount: Int { 0 }
    /// The entity `@Entity` declares for this class; nil for a class without the macro.
    open class func _$entityDescription() -> EntityDescription? { nil }
    /// Whether this `@Entity` class or one of its superclasses overrides `validateValue(_:forKey:)`
    /// (the macro says so when one does): a save then calls it for every property validated,
    /// and otherwise applies the model's rules directly. Classes without `@Entity` are always
    /// called.
    open class var _$overridesValidateValue: Bool { false }

    // MARK: Hashable (identity, as for any class instance)

    public static func == (a: ManagedObject, b: ManagedObject) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    open var description: String {
        let state = isFault ? " (fault)" : (isInserted ? " (inserted)" : (isDeleted ? " (deleted)" : ""))
        return "<\(info.name) \(objectID)\(state)>"
    }
}

extension EntityInfo {
    /// A stand-in entity for a class that is not in the model; saving such an object fails.
    static func unknown(_ type: ManagedObject.Type) -> EntityInfo {
        EntityInfo(name: String(describing: type), code: 0,
                   schema: EntitySchema(name: String(describing: type), superentity: nil, isAbstract: false, attributes: [],
                                        relationships: [], indexes: [], renamingIdentifier: nil),
                   managedObjectClass: type, rootName: String(describing: type), rootCode: 0, descendantCodes: [0],
                   attributes: [], relationships: [], columnCount: 0, toManyCount: 0, indexes: [])
    }
}
