@testable import Arbor
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

/// Words and substrings indexes: searches through them return what a scan returns, and saves,
/// batch requests and migrations keep their entries exactly as the rows call for.
@Suite("Text indexes: words and substrings")
struct TextIndexTests {
    static func entities(textIndexes: Bool) -> [EntityDescription] {
        [EntityDescription("Place", attributes: [
            AttributeDescription("rank", .int64),
            AttributeDescription("name", .string, optional: true),
        ], indexes: textIndexes ? [IndexDescription(["name"], kind: .words), IndexDescription(["name"], kind: .substrings)] : [])]
    }

    static func stack(textIndexes: Bool) throws -> TestStack {
        try TestStack(model: try ManagedObjectModel(entities: entities(textIndexes: textIndexes)))
    }

    // Diacritics, both forms of a mark, case pairs that fold to several letters, compatibility
    // signs (Kelvin, Ohm), apostrophes, CJK, Katakana, emoji, empty.
    static let pieces = ["Gedenkstätte", "Dt.", "Widerstand", "(Berlin)", "Görlitzer", "Go\u{308}rlitzer", "Bahnhof", "U", "S+U",
                         "Straße", "STRASSE", "can't", "l’Étoile", "3.5", "東京駅", "カタカナ", "🚇", "Zoo-Station", "A\u{30A}lex",
                         "Ålex", "\u{301}x", "e\u{301}", "é", "ß", "ss", "Ǆ", "ﬁ", "\u{212A}elvin", "\u{2126}", "", "the", "a",
                         "berlin", "Ber", "x\u{316}\u{301}y", "Zoo"]
    static let separators = [" ", " ", "-", ", ", "", "  ", "/"]

    struct Generator {
        var random: SplitMix64
        mutating func below(_ n: Int) -> Int { Int(random.next() % UInt64(max(n, 1))) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

        mutating func name() -> String? {
            if below(12) == 0 { return nil }
            return (0..<below(5)).map { _ in pick(TextIndexTests.pieces) + pick(TextIndexTests.separators) }.joined()
        }

        /// A piece of `text` of up to `length` scalars.
        mutating func fragment(of text: String, length: Int) -> String {
            let scalars = Array(text.unicodeScalars)
            guard !scalars.isEmpty else { return "" }
            let start = below(scalars.count)
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[start..<min(scalars.count, start + 1 + below(length))])
            return String(view)
        }

        mutating func query(names: [String]) -> String {
            let text = names.isEmpty ? "" : pick(names)
            func quoted(_ value: String) -> String { "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            let options = below(5) == 0 ? pick(["", "[c]", "[d]"]) : "[cd]"
            switch below(6) {
            case 0, 1:
                let words = (0..<1 + below(3)).map { _ in below(3) == 0 ? pick(["a", "b", "e", "ber", "wider", "gor", "zoo", "st", "東", "カタ"]) : fragment(of: pick(TextIndexTests.pieces), length: 5) }
                return "name WORDSBEGINWITH\(options) \(quoted(words.joined(separator: " ")))"
            case 2:
                return "name CONTAINS\(options) \(quoted(below(3) == 0 ? pick(["e", "tätte", "str", "", "a\u{301}", "\u{301}", "ss", "SS", "kelvin", "x\u{301}"]) : fragment(of: text, length: 7)))"
            case 3:
                return "name \(pick(["BEGINSWITH", "ENDSWITH"]))\(options) \(quoted(fragment(of: text, length: 6)))"
            case 4:
                let parts = (0..<1 + below(3)).map { _ in fragment(of: text, length: 4) }
                return "name LIKE\(options) \(quoted(pick(["*", "", "?"]) + parts.joined(separator: pick(["*", "?", "*?"])) + pick(["*", "", "?"])))"
            default:
                return "(name WORDSBEGINWITH[cd] \(quoted(fragment(of: text, length: 4)))) AND (rank < \(below(300)) OR name CONTAINS[cd] \(quoted(fragment(of: text, length: 3))))"
            }
        }
    }

    /// Inserts `names` as places ranked in order.
    static func insert(_ names: [String?], into stack: TestStack) throws {
        let context = stack.context()
        try context.performAndWait {
            for (rank, name) in names.enumerated() {
                let place = try context.insertNewObject(forEntityName: "Place")
                place.setValue(Int64(rank), forKey: "rank")
                place.setValue(name, forKey: "name")
            }
            try context.save()
        }
    }

    static func ranks(_ stack: TestStack, _ predicate: ObjectPredicate) throws -> [Int64] {
        let context = stack.context()
        return try context.performAndWait {
            let request = FetchRequest(entityName: "Place", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("rank")])
            return try context.fetch(request).map { $0.value(forKey: "rank") as? Int64 ?? -1 }
        }
    }

    static func plan(_ stack: TestStack, _ predicate: ObjectPredicate) throws -> String {
        let context = stack.context()
        return try context.performAndWait {
            try context.explain(FetchRequest(entityName: "Place", predicate: predicate)).first?.plan ?? ""
        }
    }

    @Test("random names and queries: a search through the indexes returns what a scan returns", arguments: 0..<4)
    func differential(seed: UInt64) throws {
        var generator = Generator(random: SplitMix64(seed: 0x7E47 + seed))
        let names = (0..<300).map { _ in generator.name() }
        let indexed = try Self.stack(textIndexes: true), scanned = try Self.stack(textIndexes: false)
        try Self.insert(names, into: indexed)
        try Self.insert(names, into: scanned)
        var searched = 0
        for _ in 0..<250 {
            let format = generator.query(names: names.compactMap { $0 })
            let predicate = try ObjectPredicate(format: format)
            let expected = try Self.ranks(scanned, predicate)
            #expect(try Self.ranks(indexed, predicate) == expected, "\(format)")
            if try Self.plan(indexed, predicate).hasPrefix("SEARCH index.Place.") { searched += 1 }
        }
        #expect(searched > 100, "the indexes served \(searched) of 250 queries")
        try MigrationFixture.expectConsistent(indexed.store)
    }

    @Test("the Latin fold table gives Foundation's [cd] fold, scalar by scalar and for random text")
    func latinFold() throws {
        let foundation = { (text: String) in text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
        for value in UInt32(0)..<LatinFold.limit {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = String(Character(scalar))
            #expect(LatinFold.fold(text).map { Array($0.unicodeScalars) } == Array(foundation(text).unicodeScalars), "U+\(String(value, radix: 16))")
        }
        var random = SplitMix64(seed: 0x1A71)
        for _ in 0..<2000 {
            var view = String.UnicodeScalarView()
            for _ in 0..<Int(random.next() % 12) {
                // Mostly letters, some of every kind below the limit.
                let value = random.next() % 3 == 0 ? UInt32(random.next() % UInt64(LatinFold.limit)) : UInt32(0x41 + random.next() % 0x1C0)
                if let scalar = Unicode.Scalar(value) { view.append(scalar) }
            }
            let text = String(view)
            #expect(LatinFold.fold(text).map { Array($0.unicodeScalars) } == Array(foundation(text).unicodeScalars), "\(Array(text.unicodeScalars))")
        }
        #expect(LatinFold.fold("Go\u{308}rlitzer") == nil)  // a combining mark: Foundation's
        #expect(ValueOrder.fold("Gedenkstätte STRASSE Straße", IndexKeys.normalization) == "gedenkstatte strasse strasse")
    }

    @Test("CONTAINS compares bytes where that is String.contains, and agrees with it everywhere")
    func containsFastPath() {
        let alphabet: [Unicode.Scalar] = ["a", "b", "e", "\r", "\n", "\u{E9}", "\u{301}", "\u{DF}", " ", "\u{1C6}", "x", "\u{2FF}"]
        var random = SplitMix64(seed: 0xC0117)
        func text(_ length: Int) -> String {
            var view = String.UnicodeScalarView()
            for _ in 0..<length { view.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
            return String(view)
        }
        for _ in 0..<5000 {
            let haystack = text(Int(random.next() % 10)), needle = text(Int(random.next() % 4))
            // Every string contains "" (the predicate's rule; String.contains says no).
            #expect(ValueOrder.contains(haystack, needle) == (needle.isEmpty || haystack.contains(needle)), "\(Array(haystack.unicodeScalars)) ∋ \(Array(needle.unicodeScalars))")
        }
    }

    @Test("explain shows the words index for the seed's question, and the substrings index for CONTAINS")
    func explain() throws {
        let stack = try Self.stack(textIndexes: true)
        try Self.insert(["Gedenkstätte Dt. Widerstand (Berlin)", "U Görlitzer Bahnhof", "Widerstandsplatz", nil, "Berliner Straße"], into: stack)
        let words = try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'wider berl'")
        #expect(try Self.plan(stack, words) == "SEARCH index.Place.words_name (name WORDSBEGINWITH[cd] \"wider berl\") × 2 prefixes")
        #expect(try Self.ranks(stack, words) == [0])
        let contains = try ObjectPredicate(format: "name CONTAINS[cd] 'tätte'")
        #expect(try Self.plan(stack, contains).hasPrefix("SEARCH index.Place.substrings_name (name CONTAINS[cd] \"tätte\")"))
        #expect(try Self.ranks(stack, contains) == [0])
        #expect(try Self.ranks(stack, ObjectPredicate(format: "name LIKE[cd] '*strasse'")) == [4])
        #expect(try Self.ranks(stack, ObjectPredicate(format: "name ENDSWITH[cd] 'platz'")) == [2])
        // Without [cd] the index does not serve: a scan evaluates every row.
        #expect(try Self.plan(stack, ObjectPredicate(format: "name CONTAINS 'tätte'")) == "SCAN rows.Place")
    }

    @Test("a scan that answered a word search suggests the index")
    func hint() throws {
        let stack = try Self.stack(textIndexes: false)
        try Self.insert((0..<1200).map { "Stop \($0)" }, into: stack)
        let context = stack.context()
        let statistics = try context.performAndWait {
            try context.explain(FetchRequest(entityName: "Place", predicate: try ObjectPredicate(format: "name WORDSBEGINWITH[cd] '117'")))
        }
        #expect(statistics.first?.suggestion?.contains("a words index on Place(name) would help") == true, "\(statistics)")
    }

    @Test("a prefix in most rows gives way to a scan, with the same answer")
    func commonPrefix() throws {
        let stack = try Self.stack(textIndexes: true)
        try Self.insert((0..<400).map { "Stop \($0)" }, into: stack)
        let predicate = try ObjectPredicate(format: "name WORDSBEGINWITH[cd] 'stop 12'")
        #expect(try Self.ranks(stack, predicate) == [12] + Array(120...129))
        // "stop" is in every row, "12" in 11: the rarer one narrows.
        let context = stack.context()
        let statistics = try context.performAndWait { try context.explain(FetchRequest(entityName: "Place", predicate: predicate)) }
        #expect(try #require(statistics.first).rowsExamined < 40)
        let common = try ObjectPredicate(format: "name CONTAINS[cd] 'o'")
        #expect(try Self.ranks(stack, common).count == 400)
        let plan = try context.performAndWait { try context.explain(FetchRequest(entityName: "Place", predicate: common)).first?.plan }
        #expect(plan?.hasPrefix("SCAN rows.Place (index.Place.substrings_name not used") == true, "\(plan ?? "")")
    }
}
