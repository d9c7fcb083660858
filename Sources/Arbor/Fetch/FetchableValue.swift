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
    /// The value from one fetched row, read during this call (`row` is not held after it).
    /// - Throws: whatever the reads throw (`FetchValueError`), or the type's own errors.
    init(row: FetchedRowValues) throws
}

/// A fetched row, read by the positions of `FetchableValue.fetchedProperties`.
///
/// A row is read during its `init(row:)`: rows read where they lie in the store are not kept
/// once the next is read, so a `FetchedRowValues` kept past that call reads no values
/// (`FetchValueError.rowNotCurrent`). Its `objectID` stays the row's.
public struct FetchedRowValues {
    /// What every row of the fetch shares: one reference, so that making a row's values
    /// retains one object, not three.
    let reader: PositionalReader
    /// The row's stored columns, read directly; nil when the row is read otherwise.
    let columns: RowColumns?
    /// For a row a visit loaded into the reader's slots: which row of theirs it is
    /// (`RowSlots.generation`).
    let visitedRow: UInt?
    /// The row's ID.
    public let objectID: ObjectID

    var decoding: RowValueDecoding { reader.decoding }

    /// The row `id` of `reader`'s fetch, read from `source` (for any source but `.loaded`,
    /// loaded into the decoding first). (Taken from `source` rather than asked of the
    /// decoding: each question copies its source, a retain and a release.)
    init(reader: PositionalReader, id: ObjectID, source: borrowing RowValueDecoding.Source) {
        self.reader = reader
        objectID = id
        switch source {
        case .slots(let slots, _):
            (columns, visitedRow) = (nil, slots === reader.slots ? slots.generation : nil)
        case .columns(let columns, _): (self.columns, visitedRow) = (columns, nil)
        case .loaded: (columns, visitedRow) = (nil, reader.slots?.generation)
        case .object, .none: (columns, visitedRow) = (nil, nil)
        }
    }

    /// The attribute at `position`, as `T`.
    /// - Throws: `FetchValueError` when the attribute is nil (use `optionalValue`) or of
    ///   another type, or when the row is no longer the current one.
    @inlinable
    public func value<T: AttributeConvertible>(_ position: Int) throws -> T {
        guard let value: T = try optionalValue(position) else { throw FetchValueError.missingValue(property: name(position)) }
        return value
    }

    /// The attribute at `position`, as `T`, or nil when it has no value.
    /// - Throws: `FetchValueError.typeMismatch` when it holds a value of another type;
    ///   `.rowNotCurrent` when the row is no longer the current one.
    @inlinable // specialized in the caller: unspecialized, each read looks up `Optional<T>` metadata
    public func optionalValue<T: AttributeConvertible>(_ position: Int) throws -> T? {
        let value = try currentAttribute(position)
        if value.isNull { return nil }
        guard let typed = T(attributeValue: value) else {
            throw FetchValueError.typeMismatch(property: name(position), expected: "\(T.self)", found: value.kindName)
        }
        return typed
    }

    /// The target of the to-one relationship at `position` (or the row's ID for `objectID`);
    /// nil when the row is no longer the current one.
    public func objectID(_ position: Int) -> ObjectID? {
        guard position >= 0, position < reader.fields.count, let field = reader.fields[position] else { return nil }
        switch field {
        case .toOne(let relationship):
            if let visitedRow, reader.slots?.isCurrent(visitedRow) != true { return nil }
            return decoding.target(relationship)
        case .objectID: return objectID
        case .attribute: return nil
        }
    }

    /// The attribute value at `position` (`.null` when it is not an attribute, or when the row
    /// is no longer the current one).
    public func attribute(_ position: Int) -> AttributeValue {
        (try? currentAttribute(position)) ?? .null
    }

    /// The attribute value at `position` (`.null` when it is not an attribute).
    /// - Throws: `FetchValueError.rowNotCurrent` when the row is no longer the current one.
    @usableFromInline
    func currentAttribute(_ position: Int) throws(FetchValueError) -> AttributeValue {
        let slot = reader.attributeSlot(position)
        guard slot >= 0 else { return .null }
        if let visitedRow {
            guard let slots = reader.slots, slots.isCurrent(visitedRow) else { throw .rowNotCurrent(property: name(position)) }
            return slots.attribute(slot)
        }
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
    /// A read of a row after its `init(row:)` returned: the row is no longer held.
    case rowNotCurrent(property: String)

    public var description: String {
        switch self {
        case .unknownProperty(let entity, let property): return "\(entity) has no attribute or to-one relationship \(property)"
        case .missingValue(let property): return "\(property) has no value"
        case .typeMismatch(let property, let expected, let found): return "\(property) is \(found), not \(expected)"
        case .rowNotCurrent(let property): return "\(property) read after its row's init(row:) returned"
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
    /// For each position of `fields`: the attribute's slot, or -1 when it is not an attribute.
    private let attributeSlots: [Int]

    init(decoding: RowValueDecoding, fields: [RowValueDecoding.Field?], slots: RowSlots?) {
        self.decoding = decoding
        self.fields = fields
        self.slots = slots
        attributeSlots = fields.map { field in
            if case .attribute(let slot)? = field { return slot }
            return -1
        }
    }

    /// The slot of the attribute at `position`, or -1 when it names no attribute.
    @inline(__always)
    func attributeSlot(_ position: Int) -> Int {
        position >= 0 && position < attributeSlots.count ? attributeSlots[position] : -1
    }
}
