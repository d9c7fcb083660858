/// An object's unsaved property values by column slot: an array indexed by slot (no hashing,
/// one allocation per changed object), with the number of slots set.
struct ChangeSet: ExpressibleByDictionaryLiteral {
    private var values: [PropertyValue?] = []
    /// How many slots hold a change.
    private(set) var count = 0

    /// No changes: what every object starts with (no loop over a literal's elements).
    init() {}

    init(dictionaryLiteral elements: (Int, PropertyValue)...) {
        for (slot, value) in elements { self[slot] = value }
    }

    var isEmpty: Bool { count == 0 }

    /// The slots that hold a change, in order.
    var slots: [Int] { values.indices.filter { values[$0] != nil } }

    subscript(slot: Int) -> PropertyValue? {
        get { slot >= 0 && slot < values.count ? values[slot] : nil }
        set {
            guard slot >= 0 else { return }
            if slot >= values.count {
                guard newValue != nil else { return }
                grow(toInclude: slot)
            }
            let hadValue = values[slot] != nil
            values[slot] = newValue
            count += (newValue != nil ? 1 : 0) - (hadValue ? 1 : 0)
        }
    }

    /// Makes room for `slot` and those after it: an object's values are usually set slot after
    /// slot, so the array grows once to a few slots more than asked, not once per slot.
    private mutating func grow(toInclude slot: Int) {
        let size = max(slot + 1, values.count * 2, 8)
        values.append(contentsOf: repeatElement(nil, count: size - values.count))
    }

    /// Calls `body` on every slot set and its value, in slot order (no array of slots made).
    func forEach(_ body: (Int, PropertyValue) -> Void) {
        guard count > 0 else { return }
        for slot in values.indices {
            if let value = values[slot] { body(slot, value) }
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
