import Foundation

/// A Swift type an `@Attribute` property can have.
public protocol AttributeConvertible {
    /// The value from its stored form; nil when the stored value is of another type.
    init?(attributeValue: AttributeValue)
    var attributeValue: AttributeValue { get }
    /// What a non-optional property reads as when it has no value (unset, or its fault could
    /// not be loaded): zero, empty, the Unix epoch. Optional properties read nil.
    static var fallbackValue: Self { get }
    /// The value from its stored form, or `fallbackValue` when it is of another type. Called
    /// through the conformance, whose witness is specialized for the concrete type, so reading
    /// an `@Attribute` in unspecialized generic code needs no `Optional<Self>` metadata.
    static func reading(_ attributeValue: AttributeValue) -> Self
    /// For `Optional`, the wrapped type; nil for every other type. Asked when a model is
    /// declared, instead of a dynamic cast to a protocol, whose first use for each type
    /// searches every protocol conformance the process has loaded.
    static var wrappedAttributeType: (any AttributeConvertible.Type)? { get }
}

extension AttributeConvertible {
    public static func reading(_ attributeValue: AttributeValue) -> Self {
        Self(attributeValue: attributeValue) ?? fallbackValue
    }

    public static var wrappedAttributeType: (any AttributeConvertible.Type)? { nil }
}

extension Int64: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .int(self) }
    public static var fallbackValue: Int64 { 0 }
}

extension Int32: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue, let narrow = Int32(exactly: value) else { return nil }
        self = narrow
    }
    public var attributeValue: AttributeValue { .int(Int64(self)) }
    public static var fallbackValue: Int32 { 0 }
}

extension Int16: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue, let narrow = Int16(exactly: value) else { return nil }
        self = narrow
    }
    public var attributeValue: AttributeValue { .int(Int64(self)) }
    public static var fallbackValue: Int16 { 0 }
}

extension Int: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .int(let value) = attributeValue, let narrow = Int(exactly: value) else { return nil }
        self = narrow
    }
    public var attributeValue: AttributeValue { .int(Int64(self)) }
    public static var fallbackValue: Int { 0 }
}

extension Double: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        switch attributeValue {
        case .double(let value): self = value
        case .float(let value): self = Double(value)
        default: return nil
        }
    }
    public var attributeValue: AttributeValue { .double(self) }
    public static var fallbackValue: Double { 0 }
}

extension Float: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        switch attributeValue {
        case .float(let value): self = value
        case .double(let value): self = Float(value)
        default: return nil
        }
    }
    public var attributeValue: AttributeValue { .float(self) }
    public static var fallbackValue: Float { 0 }
}

extension Bool: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .bool(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .bool(self) }
    public static var fallbackValue: Bool { false }
}

extension String: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .string(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .string(self) }
    public static var fallbackValue: String { "" }
}

extension Date: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .date(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .date(self) }
    public static var fallbackValue: Date { Date(timeIntervalSince1970: 0) }
}

extension Data: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .data(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .data(self) }
    public static var fallbackValue: Data { Data() }
}

extension UUID: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .uuid(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .uuid(self) }
    public static var fallbackValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
}

extension URL: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .url(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .url(self) }
    public static var fallbackValue: URL { URL(fileURLWithPath: "/") }
}

extension Decimal: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        guard case .decimal(let value) = attributeValue else { return nil }
        self = value
    }
    public var attributeValue: AttributeValue { .decimal(self) }
    public static var fallbackValue: Decimal { 0 }
}

extension Optional: AttributeConvertible where Wrapped: AttributeConvertible {
    public init?(attributeValue: AttributeValue) {
        if attributeValue.isNull {
            self = .none
        } else if let value = Wrapped(attributeValue: attributeValue) {
            self = .some(value)
        } else {
            return nil
        }
    }
    public var attributeValue: AttributeValue { self?.attributeValue ?? .null }
    public static var fallbackValue: Wrapped? { nil }
    public static var wrappedAttributeType: (any AttributeConvertible.Type)? { Wrapped.self }
}

// Optional's conformance is itself generic: spelled out, its witness needs no metadata for
// `Optional<Optional<Wrapped>>`.
extension Optional where Wrapped: AttributeConvertible {
    public static func reading(_ attributeValue: AttributeValue) -> Wrapped? {
        attributeValue.isNull ? nil : Wrapped(attributeValue: attributeValue)
    }
}
