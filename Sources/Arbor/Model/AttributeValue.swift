import Foundation

/// The types an attribute can have (Core Data's `NSAttributeType`, without the "undefined" case).
public enum AttributeType: String, Codable, Sendable, CaseIterable {
    case int16, int32, int64, double, float, bool, string, date, data, uuid, url, decimal
    /// A `Codable` value stored as its JSON encoding (Core Data's "transformable").
    case transformable

    /// Whether values of this type compare as numbers (integers, floating point, decimal, bool).
    var isNumeric: Bool {
        switch self {
        case .int16, .int32, .int64, .double, .float, .decimal, .bool: return true
        case .string, .date, .data, .uuid, .url, .transformable: return false
        }
    }
}

/// One attribute value as the store holds it. Integers of every width are `int`; a to-one
/// relationship is never an `AttributeValue` (see `ObjectID`).
public enum AttributeValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case int(Int64)
    case double(Double)
    case float(Float)
    case bool(Bool)
    case string(String)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case url(URL)
    case decimal(Decimal)

    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Whether the value may be stored in an attribute of `type` (nil always may: optionality is
    /// checked separately). Integers must fit the attribute's width.
    public func fits(_ type: AttributeType) -> Bool {
        switch (self, type) {
        case (.null, _): return true
        case (.int(let value), .int16): return Int16(exactly: value) != nil
        case (.int(let value), .int32): return Int32(exactly: value) != nil
        case (.int, .int64), (.double, .double), (.float, .float), (.bool, .bool), (.string, .string),
             (.date, .date), (.data, .data), (.data, .transformable), (.uuid, .uuid), (.url, .url),
             (.decimal, .decimal):
            return true
        default: return false
        }
    }

    /// Converts a dynamically typed value (as given to `setValue(_:forKey:)`) to the attribute's
    /// type; nil when it cannot be represented.
    public static func converting(_ value: Any?, to type: AttributeType) -> AttributeValue? {
        guard let value else { return .null }
        if let already = value as? AttributeValue { return already.fits(type) ? already : nil }
        let converted: AttributeValue?
        switch type {
        case .int16, .int32, .int64:
            // Any integer type whose value fits 64 bits (the width check follows below).
            converted = (value as? any BinaryInteger).flatMap { Int64(exactly: $0) }.map(AttributeValue.int)
        case .double:
            switch value {
            case let v as Double: converted = .double(v)
            case let v as Float: converted = .double(Double(v))
            case let v as Int: converted = .double(Double(v))
            default: converted = nil
            }
        case .float:
            switch value {
            case let v as Float: converted = .float(v)
            case let v as Double: converted = .float(Float(v))
            default: converted = nil
            }
        case .bool: converted = (value as? Bool).map(AttributeValue.bool)
        case .string: converted = (value as? String).map(AttributeValue.string)
        case .date: converted = (value as? Date).map(AttributeValue.date)
        case .data, .transformable:
            if let data = value as? Data { converted = .data(data) } else if let bytes = value as? [UInt8] { converted = .data(Data(bytes)) } else { converted = nil }
        case .uuid: converted = (value as? UUID).map(AttributeValue.uuid)
        case .url: converted = (value as? URL).map(AttributeValue.url)
        case .decimal:
            switch value {
            case let v as Decimal: converted = .decimal(v)
            case let v as Int: converted = .decimal(Decimal(v))
            default: converted = nil
            }
        }
        guard let converted, converted.fits(type) else { return nil }
        return converted
    }

    /// The value as a plain Swift value (`Int64`, `Double`, `String`, `Date`, …), nil for null.
    public var anyValue: Any? {
        switch self {
        case .null: return nil
        case .int(let v): return v
        case .double(let v): return v
        case .float(let v): return v
        case .bool(let v): return v
        case .string(let v): return v
        case .date(let v): return v
        case .data(let v): return v
        case .uuid(let v): return v
        case .url(let v): return v
        case .decimal(let v): return v
        }
    }

    public var description: String {
        switch self {
        case .null: return "nil"
        case .int(let v): return String(v)
        case .double(let v): return String(v)
        case .float(let v): return String(v)
        case .bool(let v): return v ? "true" : "false"
        case .string(let v): return "\"\(v)\""
        case .date(let v): return "date(\(v.timeIntervalSince1970))"
        case .data(let v): return "data(\(v.count) bytes)"
        case .uuid(let v): return v.uuidString
        case .url(let v): return v.absoluteString
        case .decimal(let v): return "\(v)"
        }
    }

    /// The name of the case, for error messages.
    @usableFromInline
    var kindName: String {
        switch self {
        case .null: return "nil"
        case .int: return "integer"
        case .double: return "double"
        case .float: return "float"
        case .bool: return "bool"
        case .string: return "string"
        case .date: return "date"
        case .data: return "data"
        case .uuid: return "uuid"
        case .url: return "url"
        case .decimal: return "decimal"
        }
    }
}
