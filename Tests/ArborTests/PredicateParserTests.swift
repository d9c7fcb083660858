@testable import Arbor
import Foundation
import Testing

@Suite("ObjectPredicate format parser")
struct PredicateParserTests {
    @Test("the NSPredicate syntax: operators, options, arguments, literals, subqueries, aggregates", arguments: [
        ("name == \"x\"", "name == \"x\""),
        ("name = 'x' AND latitude > 52.5", "name == \"x\" AND latitude > 52.5"),
        ("a < 1 OR b >= 2 || c =< 3 && d => 4", "a < 1 OR b >= 2 OR (c <= 3 AND d >= 4)"),
        ("NOT name BEGINSWITH[cd] \"u gorli\"", "NOT name BEGINSWITH[cd] \"u gorli\""),
        ("!(x != nil)", "NOT x != nil"),
        ("x <> NULL", "x != nil"),
        ("x BETWEEN {1, 2}", "x BETWEEN {1, 2}"),
        ("x IN {1, 2, 3}", "x IN {1, 2, 3}"),
        ("ANY stopTimes.departureTime > 5", "ANY stopTimes.departureTime > 5"),
        ("SOME tags.name == 'a'", "ANY tags.name == \"a\""),
        ("ALL tags.name ENDSWITH[c] 'a'", "ALL tags.name ENDSWITH[c] \"a\""),
        ("NONE tags.name LIKE 'a*'", "NONE tags.name LIKE \"a*\""),
        ("stopTimes.@count > 2", "stopTimes.@count > 2"),
        ("stopTimes.@sum.pickupType == 0", "stopTimes.@sum.pickupType == 0"),
        ("SUBQUERY(stopTimes, $x, $x.departureTime >= 1 AND $x.departureTime <= 2).@count != 0",
         "SUBQUERY(stopTimes, $x, $x.departureTime >= 1 AND $x.departureTime <= 2).@count != 0"),
        ("TRUEPREDICATE", "TRUEPREDICATE"),
        ("FALSEPREDICATE OR x == YES", "FALSEPREDICATE OR x == TRUE"),
        ("x == -0x1F", "x == -31"),
        ("x == 1e3", "x == 1000.0"),
        ("#name MATCHES '[A-Z].*'", "name MATCHES \"[A-Z].*\""),
        ("text CONTAINS \"quote \\\" inside\"", "text CONTAINS \"quote \\\" inside\""),
        ("SELF == $obj", "SELF == $obj"),
    ])
    func roundTrip(format: String, expected: String) throws {
        let predicate = try ObjectPredicate(format: format)
        #expect(predicate.description == expected)
        #expect(try ObjectPredicate(format: predicate.description) == predicate)
    }

    @Test("%@ and %K arguments, CAST to dates in Core Data's reference-date convention")
    func arguments() throws {
        let date = Date(timeIntervalSince1970: 28800)
        let predicate = try ObjectPredicate(format: "%K >= %@ AND stop.name IN %@ AND flag == %@ AND n == %d", "departureTime", date, ["a", "b"], true, 7)
        guard case .and(let parts) = predicate, case .comparison(let first) = parts[0] else {
            Issue.record("unexpected shape \(predicate)")
            return
        }
        #expect(first.left == .keyPath(["departureTime"]))
        #expect(first.right == .constant(.date(date)))
        #expect(parts[1] == .comparison(Comparison(.keyPath(["stop", "name"]), .in, .list([.constant(.string("a")), .constant(.string("b"))]))))
        let cast = try ObjectPredicate(format: "departureTime >= CAST(%@, \"NSDate\")", 28800 - 978_307_200)
        #expect(cast == .comparison(Comparison(.keyPath(["departureTime"]), .greaterOrEqual, .constant(.date(date)))))
        let substituted = try ObjectPredicate(format: "name == $NAME").withSubstitutionVariables(["NAME": .string("x")])
        #expect(substituted == (try ObjectPredicate(format: "name == 'x'")))
    }

    @Test("malformed formats give the position and what was expected", arguments: [
        ("name ==", 7, "a value or key path"),
        ("name \"x\"", 5, "a comparison operator (==, <, BEGINSWITH, IN, …)"),
        ("(a == 1", 7, "\")\""),
        ("a == 'open", 5, "a closing '"),
        ("a BEGINSWITH[x] 'b'", 13, "c, d or cd"),
        ("a == 1 b", 7, "end of predicate"),
        ("SUBQUERY(x, y, z == 1).@count > 0", 12, "a $variable"),
        ("a == CAST('x', \"NSDate\")", 15, "CAST of a number to \"NSDate\" (or to \"NSNumber\", \"NSString\")"),
        ("a ~ 1", 2, "a token"),
    ])
    func syntaxErrors(format: String, position: Int, expected: String) {
        #expect(throws: ObjectPredicateError.self) { try ObjectPredicate(format: format) }
        do {
            _ = try ObjectPredicate(format: format)
        } catch let ObjectPredicateError.syntax(actualPosition, actualExpected, _) {
            #expect(actualPosition == position)
            #expect(actualExpected == expected)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("argument errors")
    func argumentErrors() {
        #expect(throws: ObjectPredicateError.argumentCount(placeholders: 1, arguments: 0)) { try ObjectPredicate(format: "a == %@") }
        #expect(throws: ObjectPredicateError.argumentCount(placeholders: 1, arguments: 2)) { try ObjectPredicate(format: "a == %@", 1, 2) }
        #expect(throws: ObjectPredicateError.invalidArgument(index: 0, detail: "%K needs a non-empty key path string")) {
            try ObjectPredicate(format: "%K == 1", 5)
        }
        #expect(throws: ObjectPredicateError.unsupported("nesting deeper than 200 levels")) {
            try ObjectPredicate(format: String(repeating: "(", count: 500) + "a == 1" + String(repeating: ")", count: 500))
        }
    }

    @Test("token classes answer as Unicode's properties do: ASCII by table, the rest by lookup")
    func scalarClasses() {
        let scalars = (0..<0x800).compactMap(Unicode.Scalar.init) + stride(from: 0x800, to: 0x110000, by: 61).compactMap(Unicode.Scalar.init)
        for scalar in scalars {
            #expect(scalar.isPredicateSpace == scalar.properties.isWhitespace, "U+\(String(scalar.value, radix: 16))")
            #expect(scalar.isPredicateLetter == scalar.properties.isAlphabetic, "U+\(String(scalar.value, radix: 16))")
            #expect(scalar.isPredicateKeyCharacter == (scalar.properties.isAlphabetic || scalar == "_" || ("0"..."9").contains(scalar)))
        }
    }

    @Test("keys and spaces beyond ASCII")
    func unicodeKeysAndSpaces() throws {
        let predicate = try ObjectPredicate(format: "\tgröße_2\u{00A0}==\u{2003}1\u{3000}AND\u{0B}名前\u{0C}== 'x'\r\n")
        #expect(predicate.description == "größe_2 == 1 AND 名前 == \"x\"")
        #expect(throws: ObjectPredicateError.self) { try ObjectPredicate(format: "a\u{2}== 1") }
    }
}
