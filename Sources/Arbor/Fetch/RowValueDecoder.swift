import Foundation

/// Decodes a fetched row into a `Decodable` value, as `fetchValues(_:as:)` returns it: each
/// coding key names an attribute (read from the row's stored column, or from the object's
/// current value when the context changed it), a to-one relationship (an `ObjectID?`), or
/// `objectID` (the row's own ID). No managed object is made.
///
/// Keys are looked up by name on the first row; later rows that ask for the same keys in the
/// same order (what synthesized `init(from:)` does) compare each name with the one recorded
/// at its place instead of hashing it.
final class RowValueDecoding {
    enum Field {
        /// An attribute, by its slot (a plain number: reading one retains nothing).
        case attribute(slot: Int)
        case toOne(EntityInfo.Relationship)
        case objectID
    }

    let info: EntityInfo
    let context: ManagedObjectContext
    /// The fields asked for, in the order the first row asked for them.
    private var recorded: [(name: String, field: Field?)] = []
    /// The keys the rows asked for, in their order (for `explainValues`).
    var recordedKeys: [String] { recorded.map(\.name) }
    private var position = 0
    /// The row being decoded.
    private(set) var id: ObjectID
    private var source: Source = .none

    enum Source {
        case none
        case columns(RowColumns, StoredReferences?)
        /// The columns a visit loaded (see `RowSlots`), and the store's references.
        case slots(RowSlots, StoredReferences?)
        case object(ManagedObject)
        /// The source the decoding already holds: the rows of a visit share one (the slots the
        /// visit loads each row into), which is loaded once, not stored again for every row
        /// (a retain and a release of each of its parts).
        case loaded

        var isLoaded: Bool {
            if case .loaded = self { return true }
            return false
        }
    }

    init(info: EntityInfo, context: ManagedObjectContext) {
        self.info = info
        self.context = context
        id = ObjectID(info: info, store: nil, key: 0)
    }

    /// Decodes `T` from the row `id`, read from `source`.
    func decode<T: Decodable>(_ type: T.Type, id: ObjectID, from source: Source) throws -> T {
        load(id: id, from: source)
        // A row's own source is let go with the row; a shared one stays for the next.
        defer { if !source.isLoaded { self.source = .none } }
        return try T(from: RowDecoder(state: self, codingPath: []))
    }

    /// Makes the row `id`, read from `source`, the current row (`.loaded`: from the source
    /// already held).
    func load(id: ObjectID, from source: Source) {
        self.id = id
        if !source.isLoaded { self.source = source }
        position = 0
    }

    /// The names a `FetchableValue` reads, by position (for errors).
    private(set) var names: [String] = []

    /// Takes `names` as the names read, resolved before (see `resolve`).
    func use(names: [String]) { self.names = names }

    /// The stored columns `fields` read, laid out for a visit (`RowSlots`).
    func layout(of fields: [Field?]) -> RowSlotLayout {
        let slots = fields.compactMap { field -> Int? in
            switch field {
            case .attribute(let slot)?: return slot
            case .toOne(let relationship)?: return relationship.slot
            case .objectID?, nil: return nil
            }
        }
        return RowSlotLayout(slots, columnCount: info.columnCount)
    }

    /// The fields of `names` in the fetched entity, by position.
    /// - Throws: `FetchValueError.unknownProperty` for a name the entity lacks.
    func resolve(_ names: [String]) throws -> [Field?] {
        self.names = names
        return try names.map { name in
            switch info.propertiesByName[name] {
            case .attribute(let index)?: return .attribute(slot: info.attributes[index].slot)
            case .transient(let index)?: return .attribute(slot: info.transientAttributes[index].slot)
            case .relationship(let index)? where info.relationships[index].kind == .toOne: return .toOne(info.relationships[index])
            default:
                guard name == "objectID" else { throw FetchValueError.unknownProperty(entity: info.name, property: name) }
                return .objectID
            }
        }
    }

    /// The field `key` names in the fetched entity (nil: none).
    func field(_ key: String) -> Field? {
        if position < recorded.count, recorded[position].name == key {
            defer { position += 1 }
            return recorded[position].field
        }
        let field: Field?
        switch id.info.propertiesByName[key] {
        case .attribute(let index)?: field = .attribute(slot: id.info.attributes[index].slot)
        case .transient(let index)?: field = .attribute(slot: id.info.transientAttributes[index].slot)
        case .relationship(let index)? where id.info.relationships[index].kind == .toOne: field = .toOne(id.info.relationships[index])
        default: field = key == "objectID" ? .objectID : nil
        }
        // Rows of one entity ask in one order: recorded once, for the entity fetched.
        if id.info === info, recorded.count < 64, position == recorded.count {
            recorded.append((key, field))
            position += 1
        }
        return field
    }

    /// The value of the attribute in `slot` in the current row.
    func value(slot: Int) -> AttributeValue {
        switch source {
        case .columns(let columns, _): return Self.value(slot: slot, in: columns)
        case .slots(let slots, _): return slots.attribute(slot)
        case .object(let object): return context.currentAttribute(object, slot: slot)
        case .none, .loaded: return .null
        }
    }

    /// The value of the attribute in `slot` of stored `columns` (transient slots lie past them: nil).
    static func value(slot: Int, in columns: RowColumns) -> AttributeValue {
        guard slot < columns.count, case .value(let value) = columns[slot] else { return .null }
        return value
    }

    /// The target of the to-one `relationship` in the current row.
    func target(_ relationship: EntityInfo.Relationship) -> ObjectID? {
        switch source {
        case .columns(let columns, let references):
            guard relationship.slot < columns.count, case .reference(let code, let key) = columns[relationship.slot] else { return nil }
            return references?.objectID(code: code, key: key)
        case .slots(let slots, let references):
            guard case .reference(let code, let key) = slots.column(relationship.slot) else { return nil }
            return references?.objectID(code: code, key: key)
        case .object(let object): return context.toOneTarget(object, relationship)
        case .none, .loaded: return nil
        }
    }

    /// What an attribute key reads in the current row.
    enum Lookup {
        case value(AttributeValue)
        /// The entity has no property of that name.
        case missing
        /// The key names a relationship or `objectID`, not an attribute.
        case notAnAttribute
    }

    /// The value of the attribute `name` in the current row: the non-generic work of every
    /// typed `decode` (the container is generic over the app's keys, so code there runs
    /// unspecialized).
    func attributeValue(_ name: String) -> Lookup {
        guard let field = field(name) else { return .missing }
        guard case .attribute(let slot) = field else { return .notAnAttribute }
        return .value(value(slot: slot))
    }

    /// Whether `field` has no value in the current row.
    func isNil(_ field: Field) -> Bool {
        switch field {
        case .attribute(let slot): return value(slot: slot).isNull
        case .toOne(let relationship): return target(relationship) == nil
        case .objectID: return false
        }
    }
}

/// The `Decoder` a fetched row's value is made with: a keyed container over the row.
private struct RowDecoder: Decoder {
    let state: RowValueDecoding
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowContainer<Key>(state: state, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath, debugDescription: "a fetched row decodes as a keyed value (a struct)"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "a fetched row decodes as a keyed value (a struct)"))
    }
}

private struct RowContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: RowValueDecoding
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        (state.info.attributes.map(\.description.name) + state.info.relationships.filter { $0.kind == .toOne }.map(\.description.name) + ["objectID"])
            .compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool { state.field(key.stringValue) != nil }

    private func field(_ key: Key) throws -> RowValueDecoding.Field {
        guard let field = state.field(key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                                                        debugDescription: "\(state.id.info.name) has no attribute or to-one relationship \(key.stringValue)"))
        }
        return field
    }

    func decodeNil(forKey key: Key) throws -> Bool { state.isNil(try field(key)) }

    /// The non-nil attribute value of `key`.
    private func value(_ key: Key, _ type: Any.Type) throws -> AttributeValue {
        switch state.attributeValue(key.stringValue) {
        case .value(let value):
            guard !value.isNull else {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "\(state.id) has no value for \(key.stringValue)"))
            }
            return value
        case .missing:
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                                                        debugDescription: "\(state.id.info.name) has no attribute or to-one relationship \(key.stringValue)"))
        case .notAnAttribute: throw mismatch(type, key, "not an attribute")
        }
    }

    /// The attribute value of `key`, as `T` (which is an attribute type).
    private func attribute<T: AttributeConvertible>(_ type: T.Type, _ key: Key) throws -> T {
        let value = try value(key, type)
        guard let typed = T(attributeValue: value) else { throw mismatch(type, key, "\(value.kindName) \(value)") }
        return typed
    }

    private func mismatch(_ type: Any.Type, _ key: Key, _ found: String) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath + [key], debugDescription: "\(state.id.info.name).\(key.stringValue) is \(found)"))
    }

    // The common types switch on the value here, without a generic call.
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        let value = try value(key, type)
        if case .bool(let bool) = value { return bool }
        throw mismatch(type, key, "\(value.kindName) \(value)")
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let value = try value(key, type)
        if case .string(let string) = value { return string }
        throw mismatch(type, key, "\(value.kindName) \(value)")
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        switch try value(key, type) {
        case .double(let double): return double
        case .float(let float): return Double(float)
        case let value: throw mismatch(type, key, "\(value.kindName) \(value)")
        }
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try attribute(type, key) }

    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        let value = try value(key, type)
        if case .int(let integer) = value { return integer }
        throw mismatch(type, key, "\(value.kindName) \(value)")
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }

    /// An integer attribute's value as `T`, when it fits.
    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        let value = try value(key, type)
        guard case .int(let integer) = value, let typed = T(exactly: integer) else { throw mismatch(type, key, "\(value.kindName) \(value)") }
        return typed
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let field = try field(key)
        switch field {
        case .objectID:
            if let id = state.id as? T { return id }
        case .toOne(let relationship):
            if let target = state.target(relationship), let id = target as? T { return id }
            if T.self == ObjectID.self {
                throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "\(state.id) has no \(key.stringValue)"))
            }
        case .attribute:
            if let convertible = T.self as? any AttributeConvertible.Type, let value = try attributeValue(convertible, key) as? T {
                return value
            }
            // A Codable value stored as JSON (a transformable attribute).
            if case .attribute(let slot) = field, case .data(let data) = state.value(slot: slot) {
                return try JSONDecoder().decode(T.self, from: data)
            }
        }
        throw mismatch(type, key, "not convertible to \(T.self)")
    }

    private func attributeValue<C: AttributeConvertible>(_ type: C.Type, _ key: Key) throws -> C { try attribute(type, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw mismatch([String: Any].self, key, "a single value, not a nested container")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw mismatch([Any].self, key, "a single value, not a list")
    }

    func superDecoder() throws -> any Decoder { RowDecoder(state: state, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(state: state, codingPath: codingPath + [key]) }
}

extension ObjectID: Decodable {
    /// An `ObjectID` decodes only as a field of a value `fetchValues(_:as:)` makes (`objectID`
    /// or a to-one relationship); elsewhere, keep its `uriRepresentation`.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.typeMismatch(ObjectID.self, .init(codingPath: decoder.codingPath,
                                                              debugDescription: "an ObjectID decodes only from a row fetched with fetchValues(_:as:)"))
    }
}
