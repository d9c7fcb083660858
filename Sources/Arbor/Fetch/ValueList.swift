/// The values a value fetch makes, one appended per row, then handed over as one array.
///
/// The code that appends is generic over the caller's type and, that type being declared in
/// another module, runs unspecialized. There, inside the closure a fetch calls per row,
/// `Array.append` looked up `Array<T>`'s metadata in the runtime's cache and then called the
/// library's generic append: about 480 instructions a row, 7% of a value fetch's row. This list
/// appends through a typed pointer, which needs only `T`'s own value witnesses, reached
/// through the list's class. (A plain loop asks for the metadata once, before it starts.)
///
/// One fetch, one thread, like the fetch that fills it.
final class ValueList<T> {
    private var base: UnsafeMutablePointer<T>
    private var capacity: Int
    /// The number of values appended.
    private(set) var count = 0

    init(capacity: Int = 16) {
        self.capacity = max(capacity, 1)
        base = UnsafeMutablePointer<T>.allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Makes room for `total` values in all, so that appending up to that many moves nothing.
    func reserveCapacity(_ total: Int) {
        if total > capacity { grow(to: total) }
    }

    /// Appends `value`. Amortized O(1): the storage doubles when full.
    func append(_ value: consuming T) {
        if count == capacity { grow(to: capacity * 2) }
        (base + count).initialize(to: value)
        count += 1
    }

    /// The values in the order appended, as an array; the list is left empty.
    /// - Complexity: O(count), moving each value once.
    func takeArray() -> [T] {
        let taken = count
        let source = base
        count = 0
        return [T](unsafeUninitializedCapacity: taken) { buffer, initialized in
            if let destination = buffer.baseAddress { destination.moveInitialize(from: source, count: taken) }
            initialized = taken
        }
    }

    private func grow(to total: Int) {
        let larger = UnsafeMutablePointer<T>.allocate(capacity: total)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity = total
    }
}
