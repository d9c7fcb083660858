import Foundation

/// The canonical JSON of a stored model (Spec/object-store.md §2) written directly: the same
/// bytes `JSONEncoder` with `.sortedKeys` writes, without its generic machinery. In a fresh
/// process that machinery instantiates metadata for every `Codable` type it meets, which made
/// opening a store spend more instructions on hashing its model than on its first fetch.
///
/// Covers what models hold: names, flags, counts, and default values of the kinds whose
/// encoding is plain (`nil` for the rest: double, float, date and URL defaults, and
/// configuration names outside ASCII, which `canonicalJSON` leaves to `JSONEncoder`).
/// `CanonicalModelJSONTests` checks the bytes against `JSONEncoder` on random models.
struct CanonicalModelJSON {
    private(set) var bytes: [UInt8] = []

    /// The canonical JSON of `schema`, or nil when it holds a value whose encoding this writer
    /// leaves to `JSONEncoder`.
    static func encode(_ schema: ModelSchema) -> [UInt8]? {
        var writer = CanonicalModelJSON()
        writer.bytes.reserveCapacity(256 * max(schema.entities.count, 1))
        return writer.model(schema) ? writer.bytes : nil
    }

    // Keys are written in ascending byte order, as `.sortedKeys` sorts them.

    private mutating func model(_ schema: ModelSchema) -> Bool {
        let names = schema.configurations.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        // `.sortedKeys` compares UTF-16 code units; ASCII names order the same as by bytes.
        guard names.allSatisfy({ $0.utf8.allSatisfy { $0 < 0x80 } }) else { return false }
        raw("{\"configurations\":{")
        for (position, name) in names.enumerated() {
            if position > 0 { raw(",") }
            string(name)
            raw(":")
            strings(schema.configurations[name] ?? [])
        }
        raw("},\"entities\":")
        guard array(schema.entities, { $0.entity($1) }) else { return false }
        raw("}")
        return true
    }

    private mutating func entity(_ entity: EntitySchema) -> Bool {
        raw("{\"attributes\":")
        guard array(entity.attributes, { $0.attribute($1) }) else { return false }
        raw(",\"indexes\":")
        array(entity.indexes) { $0.index($1); return true }
        raw(",\"isAbstract\":")
        bool(entity.isAbstract)
        raw(",\"name\":")
        string(entity.name)
        raw(",\"relationships\":")
        array(entity.relationships) { $0.relationship($1); return true }
        if let renaming = entity.renamingIdentifier {
            raw(",\"renamingIdentifier\":")
            string(renaming)
        }
        if let superentity = entity.superentity {
            raw(",\"superentity\":")
            string(superentity)
        }
        raw("}")
        return true
    }

    private mutating func attribute(_ attribute: AttributeDescription) -> Bool {
        raw("{")
        if let value = attribute.defaultValue {
            raw("\"defaultValue\":")
            guard self.value(value) else { return false }
            raw(",")
        }
        if let derivation = attribute.derivation {
            raw("\"derivation\":")
            string(derivation)
            raw(",")
        }
        raw("\"isIndexed\":")
        bool(attribute.isIndexed)
        raw(",\"isOptional\":")
        bool(attribute.isOptional)
        raw(",\"name\":")
        string(attribute.name)
        if let renaming = attribute.renamingIdentifier {
            raw(",\"renamingIdentifier\":")
            string(renaming)
        }
        raw(",\"type\":")
        string(attribute.type.rawValue)
        raw("}")
        return true
    }

    /// A default value: one key naming its kind (see `AttributeValue+Codable`).
    private mutating func value(_ value: AttributeValue) -> Bool {
        switch value {
        case .null: raw("{\"null\":true}")
        case .int(let v): raw("{\"int\":"); raw(String(v)); raw("}")
        case .bool(let v): raw("{\"bool\":"); bool(v); raw("}")
        case .string(let v): raw("{\"string\":"); string(v); raw("}")
        case .data(let v): raw("{\"data\":"); string(v.base64EncodedString()); raw("}")
        case .uuid(let v): raw("{\"uuid\":"); string(v.uuidString); raw("}")
        case .decimal(let v): raw("{\"decimal\":"); string(v.description); raw("}")
        case .double, .float, .date, .url: return false
        }
        return true
    }

    private mutating func relationship(_ relationship: RelationshipDescription) {
        raw("{\"deleteRule\":")
        string(relationship.deleteRule.rawValue)
        raw(",\"destination\":")
        string(relationship.destination)
        raw(",\"inverse\":")
        string(relationship.inverse)
        raw(",\"isOptional\":")
        bool(relationship.isOptional)
        raw(",\"isOrdered\":")
        bool(relationship.isOrdered)
        raw(",\"isToMany\":")
        bool(relationship.isToMany)
        if let maxCount = relationship.maxCount {
            raw(",\"maxCount\":")
            raw(String(maxCount))
        }
        raw(",\"minCount\":")
        raw(String(relationship.minCount))
        raw(",\"name\":")
        string(relationship.name)
        if let renaming = relationship.renamingIdentifier {
            raw(",\"renamingIdentifier\":")
            string(renaming)
        }
        raw("}")
    }

    private mutating func index(_ index: IndexDescription) {
        raw("{\"isNormalized\":")
        bool(index.isNormalized)
        raw(",\"isUnique\":")
        bool(index.isUnique)
        // A values index is written without its kind (see `IndexDescription.encode(to:)`).
        if index.kind != .values {
            raw(",\"kind\":")
            string(index.kind.rawValue)
        }
        raw(",\"name\":")
        string(index.name)
        raw(",\"properties\":")
        strings(index.properties)
        raw("}")
    }

    private mutating func strings(_ items: [String]) {
        array(items) { $0.string($1); return true }
    }

    /// `items` as a JSON array, each written by `element`; false as soon as one cannot be.
    @discardableResult
    private mutating func array<Item>(_ items: [Item], _ element: (inout CanonicalModelJSON, Item) -> Bool) -> Bool {
        raw("[")
        for (position, item) in items.enumerated() {
            if position > 0 { raw(",") }
            guard element(&self, item) else { return false }
        }
        raw("]")
        return true
    }

    private mutating func bool(_ value: Bool) { raw(value ? "true" : "false") }

    private mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// A JSON string as `JSONEncoder` escapes it: quote, backslash and slash escaped, control
    /// characters as `\b \t \n \f \r` or `\u00xx` (lowercase hex), everything else as UTF-8.
    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x08: raw("\\b")
            case 0x09: raw("\\t")
            case 0x0A: raw("\\n")
            case 0x0C: raw("\\f")
            case 0x0D: raw("\\r")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                raw("\\u00")
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
