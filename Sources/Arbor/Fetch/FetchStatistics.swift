/// What a store fetch did, for `explain` and tests.
public struct FetchStatistics: Equatable, Sendable {
    /// The access path, in the spirit of SQLite's EXPLAIN QUERY PLAN.
    public var plan: String {
        get { planText.text }
        set { planText = PlanText(text: newValue) }
    }
    /// Formatted when read: most fetches never look at their plan.
    private var planText: PlanText
    /// Index entries or rows visited.
    public var rowsExamined: Int
    /// Rows that met the predicate.
    public var rowsMatched: Int
    /// When the plan read many more rows than matched: which index would help.
    public var suggestion: String?
    /// Candidates a SUBQUERY semi-join or anti-join checked (each by a probe of an index, or a
    /// walk of its members: the plan says which).
    public var memberChecks = 0
    /// For a value or dictionary fetch read from stored columns (`explainValues`, or `explain`
    /// of a dictionary request): what the rows become, e.g. `VALUES StopRow BY POSITION
    /// (identifier, name) FROM STORED COLUMNS IN PLACE, NO OBJECTS` (in place: decoded where
    /// the rows lie in their pages, without unsaved changes or a sort in the way). Nil for objects.
    public var valuePath: String?

    /// The counts as `explain` prints them: `examined 72, matched 7, 70 candidates checked by the join`.
    public var counts: String {
        "examined \(rowsExamined), matched \(rowsMatched)" + (memberChecks > 0 ? ", \(memberChecks) candidates checked by the join" : "")
    }

    /// Statistics of a fetch that used no plan of the planner (a store in memory).
    init(planText: String, rowsExamined: Int, rowsMatched: Int) {
        self.planText = PlanText(text: planText)
        self.rowsExamined = rowsExamined
        self.rowsMatched = rowsMatched
        suggestion = nil
    }

    /// Statistics of a fetch by `plan`, whose description is formatted only when read.
    init(plan: consuming QueryPlan, rowsExamined: Int, rowsMatched: Int, suggestion: String?, memberChecks: Int = 0) {
        planText = PlanText(plan: plan)
        self.rowsExamined = rowsExamined
        self.rowsMatched = rowsMatched
        self.suggestion = suggestion
        self.memberChecks = memberChecks
    }

    public static func == (a: FetchStatistics, b: FetchStatistics) -> Bool {
        a.rowsExamined == b.rowsExamined && a.rowsMatched == b.rowsMatched && a.suggestion == b.suggestion && a.plan == b.plan
            && a.memberChecks == b.memberChecks && a.valuePath == b.valuePath
    }

    /// A plan's text, formatted from the plan each time it is read: only `explain` and the
    /// debug log read it, and a cache would cost every fetch a lock.
    private final class PlanText: Sendable {
        // Plans are immutable (their key filters too); only their description is ever read.
        // The plan is held as itself, not as `any CustomStringConvertible`: a plan is too large
        // for an existential's inline buffer, and boxing it cost every fetch an allocation.
        private nonisolated(unsafe) let plan: QueryPlan?
        private let fixed: String?

        init(plan: consuming QueryPlan) {
            self.plan = plan
            fixed = nil
        }

        init(text: String) {
            plan = nil
            fixed = text
        }

        var text: String { fixed ?? plan?.description ?? "" }
    }
}
