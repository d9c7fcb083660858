import ArborEngine
import Foundation

/// The constants of an `IN` list, hashed so that whether a value is in the list costs O(1)
/// instead of a comparison with every element, with exactly the equality of
/// Spec/predicates.md §4 (`ValueOrder.equal`): integers compare exactly with integers, every
/// other mix of numbers as doubles; strings (and URLs, as their absolute strings) by their
/// folded Unicode scalars; dates by time; data by bytes; UUIDs by value; objects by ID; nil
/// equals only nil. Values of different kinds are never equal.
final class ValueSet: Sendable {
    /// Lists shorter than this are compared element by element: hashing them costs more.
    static let threshold = 8

    private let hasNull: Bool
    private let integers: Set<Int64>
    /// Every numeric element (integers, floats, doubles, decimals, booleans) as a double.
    private let numbers: Set<Double>
    /// The numeric elements that are not integers, as doubles: what an integer is compared
    /// with as a double.
    private let inexactNumbers: Set<Double>
    /// Strings and URLs, folded with the comparison's options, as UTF-8 (one sequence of
    /// scalars is one sequence of bytes; `String`'s own equality would merge canonically
    /// equivalent strings, which predicates keep apart).
    private let strings: Set<[UInt8]>
    private let dates: Set<Double>
    private let datas: Set<Data>
    private let uuids: Set<UUID>
    private let objects: Set<ObjectID>
    private let options: StringOptions

    /// The set of `items`; nil when one is not a constant or an object (a key path, a
    /// variable), which only evaluation can tell.
    /// - Complexity: O(n), O(total length) for strings.
    init?(_ items: [PredicateExpression], options: StringOptions) {
        var hasNull = false
        var integers: Set<Int64> = [], numbers: Set<Double> = [], inexactNumbers: Set<Double> = []
        var strings: Set<[UInt8]> = [], dates: Set<Double> = [], datas: Set<Data> = [], uuids: Set<UUID> = []
        var objects: Set<ObjectID> = []
        for item in items {
            switch item {
            case .object(let id): objects.insert(id)
            case .constant(let value):
                switch value {
                case .null: hasNull = true
                case .int(let v):
                    integers.insert(v)
                    numbers.insert(Double(v))
                case .string(let v): strings.insert(Array(ValueOrder.fold(v, options).utf8))
                case .url(let v): strings.insert(Array(ValueOrder.fold(v.absoluteString, options).utf8))
                case .date(let v): dates.insert(v.timeIntervalSinceReferenceDate)
                case .data(let v): datas.insert(v)
                case .uuid(let v): uuids.insert(v)
                case .double, .float, .decimal, .bool:
                    guard let number = ValueOrder.number(value), !number.isNaN else { continue }
                    numbers.insert(number)
                    inexactNumbers.insert(number)
                }
            default: return nil
            }
        }
        (self.hasNull, self.integers, self.numbers, self.inexactNumbers) = (hasNull, integers, numbers, inexactNumbers)
        (self.strings, self.dates, self.datas, self.uuids, self.objects, self.options) = (strings, dates, datas, uuids, objects, options)
    }

    /// Whether `value` equals an element; nil for a collection (evaluation decides).
    /// - Complexity: O(1), O(length) for strings.
    func contains(_ value: PredicateValue) -> Bool? {
        switch value {
        case .many: return nil
        case .object(nil): return hasNull
        case .object(let id?): return objects.contains(id)
        case .scalar(let scalar): return contains(scalar)
        }
    }

    private func contains(_ value: AttributeValue) -> Bool {
        switch value {
        case .null: return hasNull
        case .int(let v): return integers.contains(v) || inexactNumbers.contains(Double(v))
        case .string(let v): return strings.contains(Array(ValueOrder.fold(v, options).utf8))
        case .url(let v): return strings.contains(Array(ValueOrder.fold(v.absoluteString, options).utf8))
        case .date(let v): return dates.contains(v.timeIntervalSinceReferenceDate)
        case .data(let v): return datas.contains(v)
        case .uuid(let v): return uuids.contains(v)
        case .double, .float, .decimal, .bool:
            guard let number = ValueOrder.number(value), !number.isNaN else { return false }
            return numbers.contains(number)
        }
    }
}

extension ValueSet {
    private struct Entry: Sendable {
        var address: Int
        var items: [PredicateExpression]
        var options: StringOptions
        var set: ValueSet?
    }

    /// The lists hashed last, most recent first: `evaluate(with:)` called on every object of
    /// a collection with one predicate hashes its list once, not once per object. Each entry
    /// holds its list, so the address of the list's elements names it while it is here.
    private static let recent = Locked<[Entry]>([])
    private static let recentLimit = 8

    /// The set of `items` with `options`, made once while it stays among the recent ones.
    static func of(_ items: [PredicateExpression], options: StringOptions) -> ValueSet? {
        let address = items.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) }
        let hit = recent.withLock { entries -> Entry? in
            guard let position = entries.firstIndex(where: { $0.address == address && $0.options == options && $0.items.count == items.count })
            else { return nil }
            let entry = entries.remove(at: position)
            entries.insert(entry, at: 0)
            return entry
        }
        if let hit { return hit.set }
        let set = ValueSet(items, options: options)
        recent.withLock { entries in
            entries.insert(Entry(address: address, items: items, options: options, set: set), at: 0)
            if entries.count > recentLimit { entries.removeLast() }
        }
        return set
    }
}
