import Foundation

/// The `[cd]` fold of Latin text by table: each scalar below U+0250 (ASCII, Latin-1, Latin
/// Extended-A and -B) folds on its own, and its fold is Foundation's, taken once per scalar.
/// Stop names are mostly such text, and Foundation's general folding costs microseconds per
/// call; text with any other scalar (a combining mark, Greek, CJK) is left to Foundation.
enum LatinFold {
    static let options: StringOptions = [.caseInsensitive, .diacriticInsensitive]
    /// Scalars below this fold by table.
    static let limit: UInt32 = 0x250

    /// Each scalar's fold, Foundation's by construction: its UTF-8 bytes packed in a word, the
    /// first in bits 8–15 and so on, the count in the low byte (a fold longer than seven bytes
    /// would be marked 0xFF and left to Foundation; none is).
    private static let table: [UInt64] = (0..<limit).map { value in
        guard let scalar = Unicode.Scalar(value) else { return 0xFF }
        let bytes = Array(String(Character(scalar)).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).utf8)
        guard bytes.count <= maximumBytes else { return 0xFF }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) } << 8 | UInt64(bytes.count)
    }

    /// The table in place, for a loop over many scalars (one access to the shared array).
    struct Table {
        let packed: UnsafeBufferPointer<UInt64>

        /// Writes the fold of `scalars` (as `fold`) to the start of `output`, which has room for
        /// `maximumBytes` per scalar; returns the bytes written, or nil when a scalar is at or
        /// above `limit`.
        @inline(__always)
        func fold<Scalars: Sequence<Unicode.Scalar>>(_ scalars: Scalars, into output: UnsafeMutableBufferPointer<UInt8>) -> Int? {
            var length = 0
            for scalar in scalars {
                guard scalar.value < limit else { return nil }
                if scalar.value < 0x80 {
                    let byte = UInt8(truncatingIfNeeded: scalar.value)
                    output[length] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                    length += 1
                    continue
                }
                var word = packed[Int(scalar.value)]
                let count = Int(word & 0xFF)
                guard count <= LatinFold.maximumBytes else { return nil }
                for _ in 0..<count {
                    word >>= 8
                    output[length] = UInt8(truncatingIfNeeded: word)
                    length += 1
                }
            }
            return length
        }
    }

    /// The most bytes the table folds one scalar to.
    static let maximumBytes = 7

    static func withTable<R>(_ body: (Table) -> R) -> R { table.withUnsafeBufferPointer { body(Table(packed: $0)) } }

    /// `text` folded by `[cd]`, or nil when it holds a scalar the table does not cover.
    /// - Complexity: O(n) in the text's scalars.
    static func fold(_ text: String) -> String? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(text.utf8.count, 1) * maximumBytes) { buffer in
            withTable { $0.fold(text.unicodeScalars, into: buffer) }.map {
                String(decoding: UnsafeMutableBufferPointer(rebasing: buffer[..<$0]), as: UTF8.self)
            }
        }
    }
}
