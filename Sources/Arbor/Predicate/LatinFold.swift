import Foundation

/// The `[cd]` fold of Latin text by table: each scalar below U+0250 (ASCII, Latin-1, Latin
/// Extended-A and -B) folds on its own, and its fold is Foundation's, taken once per scalar.
/// Stop names are mostly such text, and Foundation's general folding costs microseconds per
/// call; text with any other scalar (a combining mark, Greek, CJK) is left to Foundation.
enum LatinFold {
    static let options: StringOptions = [.caseInsensitive, .diacriticInsensitive]
    /// Scalars below this fold by table.
    static let limit: UInt32 = 0x250

    /// The UTF-8 bytes of each scalar's fold, Foundation's by construction.
    private static let table: [[UInt8]] = (0..<limit).map { value in
        guard let scalar = Unicode.Scalar(value) else { return [] }
        return Array(String(Character(scalar)).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).utf8)
    }

    /// `text` folded by `[cd]`, or nil when it holds a scalar the table does not cover.
    /// - Complexity: O(n) in the text's scalars.
    static func fold(_ text: String) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            guard scalar.value < limit else { return nil }
            if scalar.value < 0x80 {
                let byte = UInt8(scalar.value)
                bytes.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
            } else {
                bytes.append(contentsOf: table[Int(scalar.value)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
