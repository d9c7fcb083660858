import Foundation

/// An option of an `@Entity` attribute, written in `@Attribute(…)`: validation rules, a
/// transient (ephemeral) attribute, a derived one.
public struct AttributeOption: Sendable {
    enum Kind: Sendable {
        case ephemeral
        case derived(String)
        case minimum(AttributeValue)
        case maximum(AttributeValue)
        case minimumLength(Int)
        case maximumLength(Int)
        case pattern(String)
    }

    let kinds: [Kind]

    /// Tracked, observed and undone by its context, kept across saves, never stored
    /// (`AttributeDescription.isTransient`; SwiftData's `.ephemeral`).
    public static let ephemeral = AttributeOption(kinds: [.ephemeral])

    /// Computed at every save from `expression` (`AttributeDescription.derivation`): `"stopTimes.@count"`,
    /// `"stop.name"`, `"canonical:(name)"`, `"now()"`.
    public static func derived(_ expression: String) -> AttributeOption { AttributeOption(kinds: [.derived(expression)]) }

    /// The smallest valid value (numbers and dates).
    public static func minimum<V: AttributeConvertible>(_ value: V) -> AttributeOption {
        AttributeOption(kinds: [.minimum(value.attributeValue)])
    }

    /// The largest valid value (numbers and dates).
    public static func maximum<V: AttributeConvertible>(_ value: V) -> AttributeOption {
        AttributeOption(kinds: [.maximum(value.attributeValue)])
    }

    /// The valid values, both bounds included (numbers and dates).
    public static func range<V: AttributeConvertible & Comparable>(_ range: ClosedRange<V>) -> AttributeOption {
        AttributeOption(kinds: [.minimum(range.lowerBound.attributeValue), .maximum(range.upperBound.attributeValue)])
    }

    /// The valid lengths: characters of a string, bytes of data.
    public static func length(_ range: ClosedRange<Int>) -> AttributeOption {
        AttributeOption(kinds: [.minimumLength(range.lowerBound), .maximumLength(range.upperBound)])
    }

    /// The shortest valid length, with no longest: `.length(1...)`.
    public static func length(_ range: PartialRangeFrom<Int>) -> AttributeOption { AttributeOption(kinds: [.minimumLength(range.lowerBound)]) }

    /// The longest valid length: `.length(...64)`.
    public static func length(_ range: PartialRangeThrough<Int>) -> AttributeOption { AttributeOption(kinds: [.maximumLength(range.upperBound)]) }

    /// A regular expression the whole string must match.
    public static func pattern(_ regularExpression: String) -> AttributeOption { AttributeOption(kinds: [.pattern(regularExpression)]) }
}

extension AttributeDescription {
    /// The description with `options` applied; bounds are converted to the attribute's type
    /// when they can be (an integer bound of a `Double` attribute).
    func applying(_ options: [AttributeOption]) -> AttributeDescription {
        var description = self
        func bound(_ value: AttributeValue) -> AttributeValue { DerivedValueUpdater.convert(value, to: type) ?? value }
        for kind in options.flatMap(\.kinds) {
            switch kind {
            case .ephemeral: description.isTransient = true
            case .derived(let expression): description.derivation = expression
            case .minimum(let value): description.validation.minimum = bound(value)
            case .maximum(let value): description.validation.maximum = bound(value)
            case .minimumLength(let length): description.validation.minimumLength = length
            case .maximumLength(let length): description.validation.maximumLength = length
            case .pattern(let pattern): description.validation.pattern = pattern
            }
        }
        return description
    }
}
