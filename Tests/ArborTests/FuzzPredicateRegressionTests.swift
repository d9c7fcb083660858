import ArborTestSupport
import Testing

@Suite("Predicate fuzz harness on seed and tricky inputs")
struct FuzzPredicateRegressionTests {
    @Test("parse, print, re-parse, evaluate and fetch agree", arguments: [
        "value > 3 AND label BEGINSWITH[cd] 'LAB'", "parent.value == 1 OR children.@count > 1",
        "SUBQUERY(children, $c, $c.value > 4).@count != 0", "ANY tags.name == 't'", "label LIKE '*1?' OR label MATCHES 'l.*'",
        "value BETWEEN {2, 7} AND NOT (value IN {3, 4})", "partner == nil AND parent != nil", "children.@sum.value >= 10",
        "label MATCHES '('", "value == 1e999", "value < -9223372036854775808", "label == '\\", "%@", "$x.value == 1",
        "children.@avg.value > 1.5", "ALL children.value > 0", "NONE tags.name == 'x'", "SELF == nil", "value IN 'abc'",
        "label CONTAINS ''", "label LIKE '****'", "tags.name == 't'", "children.@count.value > 1",
        "#00>6", "parent.v=l1 OR pGalUe = #\u{64B}VOl1 OR chidr > 1", "_>vchieindex.nodn.@sum.valueodn.@sum.#e0", "children.@max.#value > 1", "#_a == #SELF", "#9.x.#NIL == 1", String(repeating: "!", count: 150) + "u=-56",
        String(repeating: "(", count: 90) + "a == 1" + String(repeating: ")", count: 90),
        // An aggregate of a number printed as "0.@count", which reads back as the number "0." then "@".
        "SUBQUERY(children, $c, $c.value > 2).@count .@count!= 0 .@count", "value == 7 .@count", "value == -1.5 .@sum.value",
    ])
    func seeds(format: String) throws {
        try FuzzPredicateHarness().run(format)
    }
}
