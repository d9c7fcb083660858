import Foundation

/// The rules an attribute's value must satisfy at save, beyond its type and optionality (Core
/// Data's minimum and maximum values, string lengths and regular expression).
///
/// Rules are part of the model in code, not of the stored layout: they do not change the
/// model's `versionHash`, so adding or loosening one needs no migration (as in Core Data,
/// whose version hashes leave validation out). A nil value is checked only for optionality.
public struct AttributeValidation: Hashable, Sendable {
    /// The smallest valid value, of the attribute's type: numbers and dates (Core Data's
    /// `NSValidationNumberTooSmallError` and `NSValidationDateTooSoonError`).
    public var minimum: AttributeValue?
    /// The largest valid value, of the attribute's type: numbers and dates.
    public var maximum: AttributeValue?
    /// The shortest valid length: characters of a string, bytes of data.
    public var minimumLength: Int?
    /// The longest valid length: characters of a string, bytes of data.
    public var maximumLength: Int?
    /// A regular expression (ICU syntax, as `MATCHES` takes) the whole string must match.
    public var pattern: String?

    public init(minimum: AttributeValue? = nil, maximum: AttributeValue? = nil, minimumLength: Int? = nil,
                maximumLength: Int? = nil, pattern: String? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.minimumLength = minimumLength
        self.maximumLength = maximumLength
        self.pattern = pattern
    }

    /// No rules.
    public var isEmpty: Bool { self == AttributeValidation() }

    /// Why the rules cannot apply to an attribute of `type`, or nil when they can.
    func problem(for type: AttributeType) -> String? {
        for (name, bound) in [("minimum", minimum), ("maximum", maximum)] {
            guard let bound, !bound.isNull else { continue }
            guard type.isNumeric || type == .date else { return "a \(name) applies to numbers and dates, not \(type.rawValue)" }
            guard bound.fits(type) || (type.isNumeric && ValueOrder.number(bound) != nil) else {
                return "the \(name) \(bound) is not a \(type.rawValue)"
            }
        }
        if let minimum, let maximum, ValueOrder.compare(minimum, maximum, []) == .orderedDescending {
            return "the minimum \(minimum) is above the maximum \(maximum)"
        }
        if minimumLength != nil || maximumLength != nil {
            guard type == .string || type == .data else { return "a length applies to strings and data, not \(type.rawValue)" }
            if let low = minimumLength, low < 0 { return "the minimum length \(low) is negative" }
            if let low = minimumLength, let high = maximumLength, high < low {
                return "the maximum length \(high) is below the minimum length \(low)"
            }
        }
        if let pattern {
            guard type == .string else { return "a pattern applies to strings, not \(type.rawValue)" }
            guard CompiledPattern(pattern) != nil else { return "the pattern \(pattern) is not a valid regular expression" }
        }
        return nil
    }
}

/// A validation pattern compiled once per model, anchored to match the whole string.
/// `NSRegularExpression` is immutable and documented as safe to use from several threads.
struct CompiledPattern: @unchecked Sendable {
    let expression: NSRegularExpression

    init?(_ pattern: String) {
        guard let expression = try? NSRegularExpression(pattern: "^(?:" + pattern + ")$") else { return nil }
        self.expression = expression
    }

    func matches(_ text: String) -> Bool {
        expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}

extension EntityInfo.Attribute {
    /// The failures of `value` against the attribute's optionality and rules (its type is
    /// checked before: a value of another type is never passed here).
    /// - Complexity: O(1), O(length) for a string's length or pattern.
    func ruleFailures(of value: AttributeValue) -> [ValidationFailureKind] {
        if value.isNull { return isOptional ? [] : [.missingValue] }
        guard hasRules else { return [] }
        let rules = description.validation
        var failures: [ValidationFailureKind] = []
        let isDate = type == .date
        if let minimum = rules.minimum, ValueOrder.compare(value, minimum, []) == .orderedAscending {
            failures.append(isDate ? .dateTooSoon(minimum: minimum) : .numberTooSmall(minimum: minimum))
        }
        if let maximum = rules.maximum, ValueOrder.compare(value, maximum, []) == .orderedDescending {
            failures.append(isDate ? .dateTooLate(maximum: maximum) : .numberTooLarge(maximum: maximum))
        }
        if rules.minimumLength != nil || rules.maximumLength != nil {
            let length: Int
            switch value {
            case .string(let text): length = text.count
            case .data(let data): length = data.count
            default: length = 0
            }
            if let low = rules.minimumLength, length < low { failures.append(.tooShort(minimum: low, length: length)) }
            if let high = rules.maximumLength, length > high { failures.append(.tooLong(maximum: high, length: length)) }
        }
        if let pattern, case .string(let text) = value, !pattern.matches(text) {
            failures.append(.patternMismatch(pattern: rules.pattern ?? ""))
        }
        return failures
    }
}
