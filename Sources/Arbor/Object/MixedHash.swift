/// Hashes one word for a dictionary or set with `seed` (the table's own), keyed by a random
/// value drawn once per process, so that colliding keys cannot be chosen in advance: a
/// 64 × 64 → 128-bit multiply folded to 64 bits. About ten instructions, where `Hasher`
/// (SipHash-1-3) takes about 150 for the same word; hashing IDs and row keys was several
/// percent of a fetch. Used through `_rawHashValue(seed:)` by `ObjectID`, `RowKey` and
/// `KeyPathIdentity`.
@inline(__always)
func mixedHash(_ bits: UInt64, seed: Int) -> Int {
    let product = (bits ^ UInt64(UInt(bitPattern: seed)) ^ hashKey).multipliedFullWidth(by: 0x9E37_79B9_7F4A_7C15)
    return Int(truncatingIfNeeded: product.high ^ product.low)
}

/// The per-process random key of `mixedHash`.
private let hashKey = UInt64.random(in: .min ... .max)
