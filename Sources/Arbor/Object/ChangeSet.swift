/// An object's unsaved property values by column slot: an array indexed by slot (no hashing,
/// one allocation per changed object), with the number of slots set.
struct ChangeSet: ExpressibleByDictionaryLiteral {
    private var values: [PropertyValue?] = []
    /// How many slots hold a change.
    private(set) var count = 0

    init(dictionaryLiteral elements: (Int, PropertyValue)...) {
        for (slot, value) in elements { self[slot] = value }
    }

    var isEmpty: Bool { count == 0 }

    subscript(slot: Int) -> PropertyValue? {
        get { slot >= 0 && slot < values.count ? values[slot] : nil }
        set {
            guard slot >= 0 else { return }
            if slot >= values.count {
                guard newValue != nil else { return }
                values.append(contentsOf: repeatElement(nil, count: slot + 1 - values.count))
            }
            let hadValue = values[slot] != nil
            values[slot] = newValue
            count += (newValue != nil ? 1 : 0) - (hadValue ? 1 : 0)
        }
    }

    /// Calls `body` on every value set, in slot order, letting it replace the value.
    mutating func updateEach(_ body: (inout PropertyValue) -> Void) {
        for slot in values.indices {
            guard var value = values[slot] else { continue }
            body(&value)
            values[slot] = value
        }
    }
}
