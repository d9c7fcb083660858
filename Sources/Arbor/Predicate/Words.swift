/// The words of a text, as `WORDSBEGINWITH` and word indexes see them (Spec/predicates.md,
/// "Words"): Unicode word boundaries (UAX #29's default rules for letters, numbers, Katakana and
/// ideographs), keeping only the segments that hold a letter, a number or an ideograph.
///
/// "Gedenkstätte Dt. Widerstand (Berlin)" has the words "Gedenkstätte", "Dt", "Widerstand" and
/// "Berlin"; "can't" and "3.5" are one word each; every ideograph and Hiragana character is a
/// word of its own; emoji, spaces and punctuation between words belong to none.
enum Words {
    /// The words of `text`, in order, as written (not folded).
    /// - Complexity: O(n) in the text's scalars.
    static func split(_ text: String) -> [Substring] {
        var words: [Substring] = []
        var indices: [String.Index] = []
        let scalars = Array(text.unicodeScalars)
        var index = text.unicodeScalars.startIndex
        for _ in scalars {
            indices.append(index)
            index = text.unicodeScalars.index(after: index)
        }
        indices.append(text.unicodeScalars.endIndex)
        scalars.withUnsafeBufferPointer { scalars in
            forEachWord(in: scalars) { words.append(text[indices[$0.lowerBound]..<indices[$0.upperBound]]) }
        }
        return words
    }

    /// The words of `text`, each folded with `options` (as `ValueOrder.fold`).
    static func folded(_ text: String, _ options: StringOptions) -> [String] {
        var words: [String] = []
        forEachFolded(text, options) { words.append(String(decoding: $0, as: UTF8.self)) }
        return words
    }

    /// Calls `body` with the UTF-8 bytes of each word of `text` folded with `options` (as
    /// `folded`), valid only during the call: no string per word, and for a short text (a
    /// name) no heap allocation at all.
    /// - Complexity: O(n) in the text's scalars.
    static func forEachFolded(_ text: String, _ options: StringOptions, _ body: (UnsafeRawBufferPointer) -> Void) {
        // A text has at most as many scalars as UTF-8 bytes, and a scalar folds by table to at
        // most `LatinFold.maximumBytes` bytes. (Room on the stack; the heap for a long text.)
        let capacity = max(text.utf8.count, 1)
        withUnsafeTemporaryAllocation(of: Unicode.Scalar.self, capacity: capacity) { scalars in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity * LatinFold.maximumBytes) { folded in
                forEachFolded(text, options, scalars: scalars, folded: folded, body)
            }
        }
    }

    /// `forEachFolded` with room for the text's scalars and for the fold of any of its words.
    private static func forEachFolded(_ text: String, _ options: StringOptions, scalars room: UnsafeMutableBufferPointer<Unicode.Scalar>,
                                      folded: UnsafeMutableBufferPointer<UInt8>, _ body: (UnsafeRawBufferPointer) -> Void) {
        var count = 0
        for scalar in text.unicodeScalars where count < room.count {
            room.initializeElement(at: count, to: scalar)
            count += 1
        }
        let scalars = UnsafeBufferPointer(rebasing: room[..<count])
        let latin = options == LatinFold.options
        LatinFold.withTable { fold in
            forEachWord(in: scalars) { range in
                let word = UnsafeBufferPointer(rebasing: scalars[range])
                // Latin words fold scalar by scalar, by table; others as any comparison folds.
                if latin, let length = fold.fold(word, into: folded) {
                    body(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: folded[..<length])))
                    return
                }
                var view = String.UnicodeScalarView()
                view.append(contentsOf: word)
                var other = ValueOrder.fold(String(view), options)
                other.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// Calls `body` with the range (in positions of `scalars`) of each word, in order.
    /// - Complexity: O(n).
    static func forEachWord(in scalars: UnsafeBufferPointer<Unicode.Scalar>, _ body: (Range<Int>) -> Void) {
        Kind.withTable { kinds in forEachWord(in: scalars, kinds, body) }
    }

    private static func forEachWord(in scalars: UnsafeBufferPointer<Unicode.Scalar>, _ kinds: Kind.Table, _ body: (Range<Int>) -> Void) {
        var start: Int?
        var last: Kind = .other  // the kind of the last scalar of the current word, marks aside
        var hasContent = false
        func finish(at end: Int) {
            if let begin = start, hasContent { body(begin..<end) }
            start = nil
            last = .other
            hasContent = false
        }
        for index in scalars.indices {
            let kind = kinds.kind(scalars[index])
            switch kind {
            case .extend:
                // Marks and format characters stay with what they follow (WB4), and begin nothing.
                break
            case .single:
                // A word by itself (with the marks that follow it).
                finish(at: index)
                start = index
                last = .single
                hasContent = true
            case .letter, .numeric, .katakana, .connector:
                if start == nil || !Self.joins(last, kind) {
                    finish(at: index)
                    start = index
                }
                last = kind
                if kind != .connector { hasContent = true }
            case .midLetter, .midNum, .midNumLet:
                // Joins only between two letters (or two numbers for the numeric ones).
                let bridged = start != nil && Self.nextKind(in: scalars, after: index, kinds).map { Self.bridges(kind, last, $0) } == true
                if !bridged { finish(at: index) }
            case .other:
                finish(at: index)
            }
        }
        finish(at: scalars.count)
    }

    /// The words of `text` folded with `options`, as UTF-8 bytes (whose order and prefixes are
    /// those of Unicode scalars), with no string per word. A `WORDSBEGINWITH` query's words are
    /// made so once per query, a text's once per row.
    static func foldedBytes(_ text: String, _ options: StringOptions) -> [[UInt8]] {
        var words: [[UInt8]] = []
        forEachFolded(text, options) { words.append(Array($0)) }
        return words
    }

    /// Whether every word of `query` is a prefix (by Unicode scalars, after folding with
    /// `options`) of some word of `text`. True when the query has no words.
    static func allBeginWords(of text: String, query: String, _ options: StringOptions) -> Bool {
        allBeginWords(of: text, foldedBytes(query, options), options)
    }

    /// `allBeginWords(of:query:_:)` for query words made by `foldedBytes`.
    /// - Complexity: O((q + w) log w) for q query words and w words of the text.
    static func allBeginWords(of text: String, _ wanted: [[UInt8]], _ options: StringOptions) -> Bool {
        guard !wanted.isEmpty else { return true }
        // Sorted once, each query word is looked up by bisection.
        let words = foldedBytes(text, options).sorted { $0.lexicographicallyPrecedes($1) }
        return wanted.allSatisfy { prefix in
            var low = 0, high = words.count
            while low < high {
                let middle = (low + high) / 2
                if words[middle].lexicographicallyPrecedes(prefix) { low = middle + 1 } else { high = middle }
            }
            return low < words.count && words[low].starts(with: prefix)
        }
    }

    /// The word-break class of a scalar, reduced to what the rules below need.
    enum Kind: Equatable {
        case letter, numeric, katakana, connector
        /// An ideograph or a Hiragana character: a word by itself.
        case single
        /// A combining mark, a format character or a zero-width joiner: part of what precedes.
        case extend
        case midLetter, midNum, midNumLet
        case other

        /// The kinds of the scalars below U+0300 (ASCII and Latin), worked out once: looking up a
        /// scalar's Unicode properties costs more than the rest of splitting a Latin text.
        private static let latin: [Kind] = (0..<0x300).map { Kind(classifying: Unicode.Scalar(UInt32($0)) ?? " ") }

        /// The table of `latin` in place, for a loop over many scalars (one access to the
        /// shared array, not one per scalar).
        struct Table {
            let latin: UnsafeBufferPointer<Kind>

            @inline(__always)
            func kind(_ scalar: Unicode.Scalar) -> Kind {
                scalar.value < 0x300 ? latin[Int(scalar.value)] : Kind(classifying: scalar)
            }
        }

        static func withTable<R>(_ body: (Table) -> R) -> R { latin.withUnsafeBufferPointer { body(Table(latin: $0)) } }

        @inline(__always)
        init(_ scalar: Unicode.Scalar) {
            if scalar.value < 0x300 {
                self = Self.latin[Int(scalar.value)]
                return
            }
            self.init(classifying: scalar)
        }

        /// The kind by the rules of Spec/predicates.md, "Words", from the scalar's properties.
        init(classifying scalar: Unicode.Scalar) {
            let value = scalar.value
            switch value {
            case 0x27, 0x2E, 0x2018, 0x2019, 0x2024, 0xFE52, 0xFF07, 0xFF0E:
                self = .midNumLet
                return
            case 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2027, 0xFE13, 0xFE55, 0xFF1A:
                self = .midLetter
                return
            case 0x2C, 0x3B, 0x37E, 0x589, 0x60C, 0x60D, 0x66C, 0x7F8, 0x2044, 0xFE10, 0xFE14, 0xFE50, 0xFE54, 0xFF0C, 0xFF1B:
                self = .midNum
                return
            case 0x200D:
                self = .extend
                return
            case 0x3040...0x309F:
                self = .single  // Hiragana
                return
            case 0x30A1...0x30FA, 0x30FC...0x30FF, 0x31F0...0x31FF, 0x32D0...0x32FE, 0x3300...0x3357, 0xFF66...0xFF9D:
                self = .katakana
                return
            default:
                break
            }
            let properties = scalar.properties
            if properties.isIdeographic {
                self = .single
                return
            }
            switch properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark, .format:
                self = .extend
            case .decimalNumber, .letterNumber, .otherNumber:
                self = .numeric
            case .connectorPunctuation:
                self = .connector
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
                self = .letter
            default:
                self = properties.isAlphabetic ? .letter : .other
            }
        }
    }

    /// Whether a scalar of kind `next` continues a word whose last scalar is of kind `last`
    /// (WB5, WB8–WB10, WB13, WB13a–b).
    static func joins(_ last: Kind, _ next: Kind) -> Bool {
        switch (last, next) {
        case (.letter, .letter), (.letter, .numeric), (.numeric, .letter), (.numeric, .numeric), (.katakana, .katakana):
            return true
        case (.connector, .letter), (.connector, .numeric), (.connector, .katakana), (.connector, .connector),
             (.letter, .connector), (.numeric, .connector), (.katakana, .connector):
            return true
        default:
            return false
        }
    }

    /// Whether a middle character of kind `middle` between `before` and `after` keeps them in one
    /// word (WB6–WB7 for letters, WB11–WB12 for numbers).
    static func bridges(_ middle: Kind, _ before: Kind, _ after: Kind) -> Bool {
        switch middle {
        case .midLetter: return before == .letter && after == .letter
        case .midNum: return before == .numeric && after == .numeric
        case .midNumLet: return (before == .letter && after == .letter) || (before == .numeric && after == .numeric)
        default: return false
        }
    }

    /// The kind of the first scalar after `index` that is not a mark or format character.
    private static func nextKind(in scalars: UnsafeBufferPointer<Unicode.Scalar>, after index: Int, _ kinds: Kind.Table) -> Kind? {
        for position in (index + 1)..<scalars.count {
            let kind = kinds.kind(scalars[position])
            if kind != .extend { return kind }
        }
        return nil
    }
}
