/// A value made from a fetched row by position, with no key looked up per row: the lean form of
/// `fetchValues(_:as:)` (GRDB's `FetchableRecord` is its model).
///
/// ```swift
/// struct StopRow: FetchableValue {
///     static let fetchedProperties = ["identifier", "name", "latitude"]
///     var identifier: Int64, name: String, latitude: Double
///     init(row: FetchedRowValues) throws {
///         identifier = try row.value(0)
///         name = try row.value(1)
///         latitude = try row.value(2)
///     }
/// }
/// ```
/// Each name of `fetchedProperties` is an attribute of the fetched entity, a to-one
/// relationship (read with `row.objectID(_:)`), or `objectID` (the row's ID); they are resolved
/// once per fetch.
public protocol FetchableValue {
    /// The properties `init(row:)` reads, by position.
    static var fetchedProperties: [String] { get }
    /// The value from one fetched row.
    /// - Throws: whatever the reads throw (`FetchValueError`), or the type's own errors.
    init(row: FetchedRowValues) throws
}

/// A fetched row, read by the positions of `FetchableValue.fetchedProperties`.
public struct FetchedRowValues {
    /// What every row of the fetch shares: one reference, so that making a row's values
    /// retains one object, not three.
    let reader: PositionalReader
    /// The row's stored columns, read directly; nil when the row is read otherwise.
    let columns: RowColumns?
    /// Whether the row is the one the reader's slots hold (a visit loaded it there).
    let inSlots: Bool

    var decoding: RowValueDecoding { reader.decoding }
    var fields: [RowValueDecoding.Field?] { reader.fields }

    /// The current row of `reader`'s decoding, which was loaded from `source`. (Taken from
    /// `source` rather than asked of the decoding: each question copies its source, a retain
    /// and a release.)
    init(reader: PositionalReader, source: borrowing RowValueDecoding.Source) {
        self.reader = reader
        switch source {
        case .slots(let slots, _): (columns, inSlots) = (nil, slots === reader.slots)
        case .columns(let columns, _): (self.columns, inSlots) = (columns, false)
        case .loaded: (columns, inSlots) = (nil, true)
        case .object, .none: (columns, inSlots) = (nil, false)
        }
    }

    /// The row's ID.
    public var objectID: ObjectID { decoding.id }

    /// The attribute at `position`, as `T`.
    /// - Throws: `FetchValueError` when the attribute is nil (use `optionalValue`) or of another type.
    @inlinable
    public func value<T: AttributeConvertible>(_ position: Int) throws -> T {
        guard let value: T = try optionalValue(position) else { throw FetchValueError.missingValue(property: name(position)) }
        return value
    }

    /// The attribute at `position`, as `T`, or nil when it has no value.
    /// - Throws: `FetchValueError.typeMismatch` when it holds a value of another type.
    @inlinable // specialized in the caller: unspecialized, each read looks up `Optional<T>` metadata
    public func optionalValue<T: AttributeConvertible>(_ position: Int) throws -> T? {
        let value = attribute(position)
        if value.isNull { return nil }
        guard let typed = T(attributeValue: value) else {
            throw FetchValueError.typeMismatch(property: name(position), expected: "\(T.self)", found: value.kindName)
        }
        return typed
    }

    /// The target of the to-one relationship at `position` (or the row's ID for `objectID`).
    public func objectID(_ position: Int) -> ObjectID? {
        guard position >= 0, position < fields.count, let field = fields[position] else { return nil }
        switch field {
        case .toOne(let relationship): return decoding.target(relationship)
        case .objectID: return decoding.id
        case .attribute: return nil
        }
    }

    /// The attribute value at `position` (`.null` when it is not an attribute).
    public func attribute(_ position: Int) -> AttributeValue {
        guard position >= 0, position < fields.count, case .attribute(let slot)? = fields[position] else { return .null }
        if inSlots, let slots = reader.slots { return slots.attribute(slot) }
        if let columns { return RowValueDecoding.value(slot: slot, in: columns) }
        return decoding.value(slot: slot)
    }

    @usableFromInline
    func name(_ position: Int) -> String {
        position >= 0 && position < decoding.names.count ? decoding.names[position] : "#\(position)"
    }
}

/// A fetched row that does not fit the value made from it.
public enum FetchValueError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A property of `fetchedProperties` that the entity lacks.
    case unknownProperty(entity: String, property: String)
    /// A non-optional read of a property with no value.
    case missingValue(property: String)
    /// A read as a type the attribute's value is not.
    case typeMismatch(property: String, expected: String, found: String)

    public var description: String {
        switch self {
        case .unknownProperty(let entity, let property): return "\(entity) has no attribute or to-one relationship \(property)"
        case .missingValue(let property): return "\(property) has no value"
        case .typeMismatch(let property, let expected, let found): return "\(property) is \(found), not \(expected)"
        }
    }
}

/// What the rows of one fetch by position share: the decoding, the fields of
/// `fetchedProperties`, and the slots a visit loads each row into (nil when rows are read
/// otherwise).
final class PositionalReader {
    let decoding: RowValueDecoding
    let fields: [RowValueDecoding.Field?]
    let slots: RowSlots?

    init(decoding: RowValueDecoding, fields: [RowValueDecoding.Field?], slots: RowSlots?) {
        self.decoding = decoding
        self.fields = fields
        self.slots = slots
    }
}
