import ArborEngine

/// A prepared request's search of its kept index, as one binding laid it out: where each
/// conjunct finds its column and value (`ConditionSite`), what kind of condition each stated
/// (`ConditionShape`, which also decides the conjuncts rows must still evaluate), which of them
/// the ranges encode (`IndexLayout`) and which the key filters check.
///
/// A later binding states only these conjuncts' conditions from the sites. When every one has
/// the recorded shape, the layout, the filters and the residual are the recorded ones, and the
/// plan is built from them directly: the same plan `QueryPlanner.accessPath(_:for:through:store:)`
/// would work out (a differential test holds them equal), without looking columns up by name,
/// grouping conditions by column or choosing a layout again. Otherwise (another shape, a nil
/// foreign key, a list too long) the caller plans through the index as before.
///
/// Recipes are made only for a bound request (`BoundPredicate.bindings` not nil), whose written
/// predicate is its prepared request's template: one prepared request always gives the same parts.
final class IndexPlanRecipe: Sendable {
    let index: EntityInfo.Index
    /// The written conjuncts, for labels and the residual.
    private let parts: [ObjectPredicate]
    /// Boxed: a site read out of an array of structs was copied, its parts retained and released.
    private let sites: [SiteBox?]
    private let shapes: [ConditionShape?]
    private let layout: IndexLayout
    private let filters: [(position: Int, part: Int)]
    /// The conjuncts the ranges encode, as written: every plan's labels (`QueryPlan.labelBindings`
    /// gives each its values).
    private let usedLabels: [ConditionLabel]

    init(index: EntityInfo.Index, parts: [ObjectPredicate], sites: [ConditionSite?], stated: [QueryPlanner.StatedCondition?],
         layout: IndexLayout, filters: [(position: Int, part: Int)]) {
        self.index = index
        self.parts = parts
        self.sites = sites.map { $0.map(SiteBox.init) }
        shapes = stated.map { $0.map(ConditionShape.init) }
        self.layout = layout
        self.filters = filters
        usedLabels = layout.used.map { .predicate(parts[$0]) }
    }

    /// The plan for `bindings`, when their conditions have the recorded shapes and their values
    /// give the index its ranges; nil otherwise.
    /// - Complexity: O(conjuncts + ranges × key size).
    func plan(_ bindings: TemplateBindings, for info: EntityInfo, store: BTreeStore) -> QueryPlan? {
        guard sites.count == shapes.count else { return nil }  // one per conjunct, as made by `accessPath(_:for:through:store:)`
        var stated: [QueryPlanner.StatedCondition?] = []
        stated.reserveCapacity(sites.count)
        for position in sites.indices {
            let condition = sites[position]?.stated(in: store, bindings: bindings)
            guard condition.map(ConditionShape.init) == shapes[position] else { return nil }
            stated.append(condition)
        }
        guard let ranges = layout.ranges(of: index, stated) else { return nil }
        let keyFilters = filters.compactMap { source in
            stated[source.part].flatMap { QueryPlanner.keyFilter(at: source.position, $0.condition, of: index) }
        }
        // A normalized index answers no conjunct exactly: rows evaluate the whole predicate.
        let residual: QueryPlan.Residual = index.isNormalized ? .whole : .part(QueryPlanner.residual(parts, stated, answeredBy: index, bindings: bindings))
        // Made whole at once: set field by field, the plan was copied.
        return QueryPlan(entity: info, access: .index(index, ranges), usedConditions: usedLabels, keyFilters: keyFilters, residual: residual,
                         reusedChoice: true, labelBindings: bindings)
    }
}

/// A recipe's condition site, held by reference.
private final class SiteBox: Sendable {
    let site: ConditionSite
    init(_ site: ConditionSite) { self.site = site }

    /// `site.stated(in:bindings:)`, with the site read where it lies: read out through the box
    /// first, it was copied, its parts retained and released.
    func stated(in store: BTreeStore, bindings: TemplateBindings) -> QueryPlanner.StatedCondition? {
        site.stated(in: store, bindings: bindings)
    }
}

/// What a layout, its key filters and its residual depend on in a conjunct's condition: its
/// column, its kind (for an equality, whether its value is a string: a normalized index serves
/// folded strings only), which bounds a range has, and whether the condition is exact.
struct ConditionShape: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        case equal(string: Bool)
        case oneOf
        case range(lower: Bool, upper: Bool)
        case prefix, foldedEqual, foldedPrefix
    }

    let slot: Int
    let kind: Kind
    let isExact: Bool

    init(_ stated: QueryPlanner.StatedCondition) {
        slot = stated.slot
        isExact = stated.isExact
        switch stated.condition {
        case .equal(let value): if case .string = value { kind = .equal(string: true) } else { kind = .equal(string: false) }
        case .oneOf: kind = .oneOf
        case .range(let lower, let upper): kind = .range(lower: lower != nil, upper: upper != nil)
        case .prefix: kind = .prefix
        case .foldedEqual: kind = .foldedEqual
        case .foldedPrefix: kind = .foldedPrefix
        }
    }
}
