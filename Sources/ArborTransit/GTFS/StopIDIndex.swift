import Foundation

/// The position of each stop of a feed by its stop_id, looked up by the bytes of a stop_times
/// row's field: no string is made and no SipHash computed per row (30 million rows would
/// spend a quarter of the feed's reading time on that). Open addressing over a table at least
/// twice the size of the feed's stops; ids hashed with FNV-1a.
struct StopIDIndex {
    /// Every id's bytes (prefix included), back to back; id `i` ends at `ends[i]`.
    private var bytes: [UInt8] = []
    private var ends: [Int] = [0]
    /// Slot → id number + 1 (0: empty).
    private var slots: [Int32] = [Int32](repeating: 0, count: 16)

    var count: Int { ends.count - 1 }

    /// The position of the id that is `prefix` followed by `id`, or nil.
    func position(prefix: String, id: ArraySlice<UInt8>) -> Int32? {
        if prefix.isEmpty { return id.withUnsafeBytes { position(of: $0) } }
        return (Array(prefix.utf8) + id).withUnsafeBytes { position(of: $0) }
    }

    /// The position of `id`, or nil.
    func position(of id: String) -> Int32? {
        var id = id
        return id.withUTF8 { position(of: UnsafeRawBufferPointer($0)) }
    }

    private func position(of id: UnsafeRawBufferPointer) -> Int32? {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(id)) & mask
        return bytes.withUnsafeBytes { stored in
            ends.withUnsafeBufferPointer { ends in
                slots.withUnsafeBufferPointer { slots in
                    while true {
                        let entry = Int(slots[slot])
                        if entry == 0 { return nil }
                        let start = ends[entry - 1], end = ends[entry]
                        if end - start == id.count && Self.equal(UnsafeRawBufferPointer(rebasing: stored[start..<end]), id) {
                            return Int32(entry - 1)
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    /// Adds `id` as the next position; false (and nothing added) when it is there already.
    mutating func insert(_ id: String) -> Bool {
        guard position(of: id) == nil else { return false }
        if ends.count * 2 > slots.count { grow() }
        bytes.append(contentsOf: id.utf8)
        ends.append(bytes.count)
        place(count - 1)
        return true
    }

    private mutating func place(_ number: Int) {
        let mask = slots.count - 1
        let hash = bytes.withUnsafeBytes { Self.hash(UnsafeRawBufferPointer(rebasing: $0[ends[number]..<ends[number + 1]])) }
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(number + 1)
    }

    private mutating func grow() {
        slots = [Int32](repeating: 0, count: slots.count * 2)
        for number in 0..<count { place(number) }
    }

    private static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let left = a.baseAddress, let right = b.baseAddress else { return true }  // both empty
        return memcmp(left, right, a.count) == 0
    }

    /// FNV-1a, mixed so that the low bits (the slot) depend on every byte.
    private static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash ^ (hash >> 29)
    }
}
