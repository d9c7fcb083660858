@testable import Arbor
import ArborEngineTestSupport
import Foundation
import Testing

/// `WORDSBEGINWITH`: words by Unicode word boundaries, every query word the start of some word.
@Suite("Word search: WORDSBEGINWITH and the words of a text")
struct WordSearchTests {
    static func words(_ text: String) -> [String] { Words.split(text).map(String.init) }

    @Test("words: the seed's example, apostrophes, numbers, punctuation and emoji")
    func splitExamples() {
        #expect(Self.words("Gedenkstätte Dt. Widerstand (Berlin)") == ["Gedenkstätte", "Dt", "Widerstand", "Berlin"])
        #expect(Self.words("can't stop, won't stop") == ["can't", "stop", "won't", "stop"])
        #expect(Self.words("l’Étoile") == ["l’Étoile"])
        #expect(Self.words("3.5 km, 1,000 m; U.S.A.") == ["3.5", "km", "1,000", "m", "U.S.A"])
        #expect(Self.words("🚇 Zoo-Station 🚇") == ["Zoo", "Station"])
        #expect(Self.words("snake_case x__y _") == ["snake_case", "x__y"])
        #expect(Self.words("") == [])
        #expect(Self.words("  ...  ") == [])
        #expect(Self.words("'quoted'") == ["quoted"])
    }

    @Test("words: every ideograph and Hiragana character is a word, Katakana runs are one")
    func splitScripts() {
        #expect(Self.words("東京駅") == ["東", "京", "駅"])
        #expect(Self.words("すし") == ["す", "し"])
        #expect(Self.words("カタカナ ラーメン") == ["カタカナ", "ラーメン"])
        #expect(Self.words("서울역 Seoul") == ["서울역", "Seoul"])
        #expect(Self.words("Ålex A\u{30A}lex") == ["Ålex", "A\u{30A}lex"])  // a mark stays with its letter
        #expect(Self.words("\u{301}abc") == ["abc"])  // a mark that begins the text belongs to no word
        #expect(Self.words("葛\u{E0100}飾") == ["葛\u{E0100}", "飾"])  // a variation selector stays with its ideograph
    }

    struct NoResolver: SubjectResolver {
        func subject(for id: ObjectID) throws -> PredicateSubject? { nil }
    }

    /// Whether `format` (a comparison of `name` with a constant) holds for a name.
    static func holds(_ name: String?, _ format: String) throws -> Bool {
        guard case .comparison(let comparison) = try ObjectPredicate(format: format), case .constant(let query) = comparison.right else {
            Issue.record("\(format) is not a comparison with a constant")
            return false
        }
        var evaluator = PredicateEvaluator(resolver: NoResolver())
        return try evaluator.compare(.scalar(name.map { .string($0) } ?? .null), comparison.op, .scalar(query), comparison.options)
    }

    @Test("the operator: order free, prefixes, options, empty queries and nil")
    func operatorExamples() throws {
        let name = "Gedenkstätte Dt. Widerstand (Berlin)"
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] 'wider berl'"))
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] 'berl wider'"))
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] 'GEDENKSTATTE'"))
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] 'dt dt'"))  // two query words may match one word
        #expect(try !Self.holds(name, "name WORDSBEGINWITH[cd] 'wider paris'"))
        #expect(try !Self.holds(name, "name WORDSBEGINWITH[cd] 'iderstand'"))  // a prefix, not a substring
        #expect(try !Self.holds(name, "name WORDSBEGINWITH 'wider'"))  // case matters without [c]
        #expect(try Self.holds(name, "name WORDSBEGINWITH 'Wider'"))
        #expect(try !Self.holds(name, "name WORDSBEGINWITH[c] 'gedenkstatte'"))  // the mark matters without [d]
        #expect(try Self.holds(name, "name WORDSBEGINWITH[d] 'Gedenkstatte'"))
        #expect(try Self.holds("Straße", "name WORDSBEGINWITH[c] 'STRASS'"))
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] ''"))
        #expect(try Self.holds(name, "name WORDSBEGINWITH[cd] '(...)'"))
        #expect(try !Self.holds(nil, "name WORDSBEGINWITH[cd] 'x'"))
        #expect(try !Self.holds(nil, "name WORDSBEGINWITH[cd] ''"))
        #expect(try Self.holds("東京駅", "name WORDSBEGINWITH '駅 東'"))
    }

    @Test("the operator prints and parses back, and builds from the helper")
    func formatting() throws {
        let parsed = try ObjectPredicate(format: "name wordsbeginwith[cd] %@", "wider berl")
        #expect(parsed.description == "name WORDSBEGINWITH[cd] \"wider berl\"")
        #expect(try ObjectPredicate(format: parsed.description) == parsed)
        #expect(PredicateExpression.key("name").wordsBeginWith("wider berl", options: [.caseInsensitive, .diacriticInsensitive]) == parsed)
        #expect(throws: ObjectPredicateError.self) { try ObjectPredicate(format: "name WORDSBEGINWITH") }
    }

    /// The reference for ASCII text: a word is a run of letters and digits, joined across one
    /// `'` or `.` between two letters or two digits, or one `,` or `;` between two digits.
    static func referenceWords(_ text: String) -> [String] {
        let characters = Array(text)
        func isLetter(_ c: Character) -> Bool { c.isASCII && c.isLetter }
        func isDigit(_ c: Character) -> Bool { c.isASCII && c.isNumber }
        var words: [String] = []
        var current = ""
        var index = 0
        while index < characters.count {
            let c = characters[index]
            if isLetter(c) || isDigit(c) || c == "_" {
                current.append(c)
            } else if !current.isEmpty, index + 1 < characters.count, let last = current.last,
                      (["'", "."].contains(c) && ((isLetter(last) && isLetter(characters[index + 1])) || (isDigit(last) && isDigit(characters[index + 1]))))
                        || ([",", ";"].contains(c) && isDigit(last) && isDigit(characters[index + 1])) {
                current.append(c)
            } else {
                if current.contains(where: { $0 != "_" }) { words.append(current) }
                current = ""
            }
            index += 1
        }
        if current.contains(where: { $0 != "_" }) { words.append(current) }
        return words
    }

    @Test("words of random ASCII text against the reference", arguments: 0..<4)
    func splitDifferential(seed: UInt64) {
        var random = SplitMix64(seed: 0x3D5 + seed)
        let alphabet = Array("ab Z9 1'.,;_-( )x")
        for _ in 0..<2_000 {
            let text = String((0..<Int(random.next() % 16)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            #expect(Self.words(text) == Self.referenceWords(text), "\(text.debugDescription)")
        }
    }

    @Test("the operator on random texts and queries against a quadratic reference", arguments: 0..<4)
    func operatorDifferential(seed: UInt64) {
        var random = SplitMix64(seed: 0x77D + seed)
        let pool = ["Bahnhof", "bahn", "Zoo", "zoo", "Straße", "strasse", "Görlitzer", "gor", "b", "z", "", "Ä", "a\u{308}", "東", "京"]
        func phrase(_ count: Int) -> String {
            (0..<count).map { _ in pool[Int(random.next() % UInt64(pool.count))] }.joined(separator: random.next() % 2 == 0 ? " " : " - ")
        }
        for _ in 0..<1_000 {
            let text = phrase(Int(random.next() % 5)), query = phrase(Int(random.next() % 4))
            let options = [StringOptions(), [.caseInsensitive], [.diacriticInsensitive], [.caseInsensitive, .diacriticInsensitive]][Int(random.next() % 4)]
            let words = Words.folded(text, options)
            let expected = Words.folded(query, options).allSatisfy { prefix in
                words.contains { $0.unicodeScalars.starts(with: prefix.unicodeScalars) }
            }
            #expect(Words.allBeginWords(of: text, query: query, options) == expected, "\(text) / \(query) / \(options)")
        }
    }

    @Test("hostile input: a 1 MB name and a query of 10,000 words answer")
    func hostileInput() throws {
        let huge = String(repeating: "Widerstand Berlin ", count: 58_255)
        #expect(huge.utf8.count > 1_000_000)
        #expect(Words.allBeginWords(of: huge, query: "berl wider", [.caseInsensitive]))
        let longQuery = (0..<10_000).map { "w\($0)" }.joined(separator: " ")
        #expect(!Words.allBeginWords(of: huge, query: longQuery, [.caseInsensitive]))
        #expect(Words.allBeginWords(of: longQuery, query: longQuery, []))
    }
}
