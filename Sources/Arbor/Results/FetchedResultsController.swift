import ArborEngine
import Foundation

/// Keeps a list UI in step with a fetch (Core Data's `NSFetchedResultsController`): the fetch's
/// objects in sort order, split into sections by `sectionNameKeyPath`, and every later change
/// — in the context, or merged from other contexts' saves — reported as inserts, deletes, moves
/// and updates with index paths, to a delegate and as `FetchedResultsDifference`s.
///
/// The results are kept as 16-byte IDs; objects are materialized a batch (`fetchBatchSize`) at
/// a time when read, so millions of results cost megabytes, not objects. Use it on its
/// context's queue, like the objects it returns.
///
/// The non-generic part, so a delegate can serve controllers of any element type; use
/// `FetchedResultsController<Element>`.
public class FetchedResultsControllerBase {
    public let fetchRequest: FetchRequest
    public let managedObjectContext: ManagedObjectContext
    /// The key path whose value names each object's section (nil: one section). It must be
    /// the key path of the first sort descriptor; it may go through to-one relationships.
    public let sectionNameKeyPath: String?
    /// With a name, `performFetch` keeps the computed sections in a cache file and reuses them
    /// while the request and the stores' data are unchanged.
    public let cacheName: String?
    public weak var delegate: FetchedResultsControllerDelegate?
    /// The section name for a value of the section key path: by default the value as text
    /// ("" for nil). A custom one must keep the sort order — equal names must be neighbours in
    /// sort order, e.g. a string's first letter
    /// (`{ if case .string(let s) = $0 { String(s.prefix(1)) } else { "" } }`).
    public var sectionName: (AttributeValue) -> String = FetchedResultsControllerBase.defaultSectionName
    /// The index title of a section name when the delegate gives none: by default its first
    /// character, capitalized.
    public var sectionIndexTitle: (String) -> String? = { name in name.first.map { String($0).uppercased() } }

    // The results: IDs in order, the unsaved ones by index, and where each section starts.
    var entries = ContiguousArray<CompactObjectID>()
    var unsaved: [ObjectID] = []
    var stores: [PersistentStore] = []
    var sectionNames: [String] = []
    var sectionStarts: [Int] = []
    var view: FetchResults<ManagedObject>?
    var model: ManagedObjectModel?
    var observation: ChangeObservation?
    var hasFetched = false
    let streams = DifferenceStreams()
    /// Whether the last `performFetch` took its sections from the cache (for tests and tuning).
    public internal(set) var lastFetchUsedCache = false

    /// A controller; nothing is fetched until `performFetch()`.
    public init(fetchRequest: FetchRequest, managedObjectContext: ManagedObjectContext, sectionNameKeyPath: String? = nil,
                cacheName: String? = nil) {
        var request = fetchRequest
        request.resolveBindings()  // its predicate is read for every changed object
        self.fetchRequest = request
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    deinit { streams.finishAll() }

    static func defaultSectionName(_ value: AttributeValue) -> String {
        switch value {
        case .null: return ""
        case .string(let text): return text
        case .int(let number): return String(number)
        case .bool(let flag): return flag ? "1" : "0"
        default: return "\(value.anyValue ?? "")"
        }
    }

    // MARK: Fetching

    /// Runs the fetch, computes the sections and starts following changes.
    /// - Throws: `FetchedResultsError` (no sort descriptor, section key path not the first sort
    ///   key path, section names out of order), and the errors of `fetch`.
    /// - Complexity: one fetch of IDs (through an index scan when the sections follow an index
    ///   or a to-one relationship's foreign-key index); no object is materialized.
    public func performFetch() throws {
        try validate()
        lastFetchUsedCache = false
        let computed: ComputedResults
        if let cached = try loadCache() {
            computed = cached
            lastFetchUsedCache = true
        } else {
            computed = try computeResults()
            try saveCache(computed)
        }
        install(computed)
        hasFetched = true
        if observation == nil {
            observation = managedObjectContext.addObjectsChangeObserver { [weak self] change in self?.process(change) }
        }
    }

    func validate() throws {
        guard let first = fetchRequest.sortDescriptors.first else {
            throw FetchedResultsError.missingSortDescriptors(entity: fetchRequest.entityName)
        }
        if let sectionNameKeyPath, sectionNameKeyPath != first.keyPath {
            throw FetchedResultsError.sectionKeyPathNotFirstSort(sectionNameKeyPath: sectionNameKeyPath, firstSortKeyPath: first.keyPath)
        }
    }

    /// Makes `computed` the current results.
    func install(_ computed: ComputedResults) {
        entries = computed.entries
        unsaved = computed.unsaved
        stores = computed.stores
        sectionNames = computed.sectionNames
        sectionStarts = computed.sectionStarts
        model = computed.model
        view = nil
    }

    // MARK: Reading

    /// The number of results.
    public var count: Int { entries.count }

    /// The ID at offset `offset` of the whole result list.
    func objectID(atOffset offset: Int) -> ObjectID { results.objectID(at: offset) }

    /// The object at offset `offset` of the whole result list (its batch is materialized).
    func object(atOffset offset: Int) -> ManagedObject { results[offset] }

    /// The materializing view of the current results.
    var results: FetchResults<ManagedObject> {
        if let view { return view }
        let made = makeResults(ManagedObject.self)
        view = made
        return made
    }

    /// A batched view of the current results (batches of `fetchBatchSize`, 20 when unset).
    func makeResults<T: ManagedObject>(_ type: T.Type) -> FetchResults<T> {
        // `model` is set by the first performFetch, before any result can be read.
        let model = self.model ?? managedObjectContext.model ?? ManagedObjectModel.empty
        let batch = fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : 20
        return FetchResults<T>(ids: CompactObjectIDList(entries), stores: stores, unsaved: unsaved, model: model, context: managedObjectContext, batchSize: batch)
    }

    /// The sections, in order (nil before `performFetch`). Without a section key path there is
    /// exactly one section, named "".
    public var sections: [FetchedResultsSection]? {
        guard hasFetched else { return nil }
        return sectionNames.indices.map { section(at: $0) }
    }

    func section(at index: Int) -> FetchedResultsSection {
        let range = sectionRange(index)
        let name = sectionNames[index]
        return FetchedResultsSection(name: name, indexTitle: indexTitle(for: name), numberOfObjects: range.count,
                                     controller: self, range: range)
    }

    func sectionRange(_ index: Int) -> Range<Int> {
        let start = sectionStarts[index]
        let end = index + 1 < sectionStarts.count ? sectionStarts[index + 1] : entries.count
        return start..<end
    }

    func indexTitle(for name: String) -> String? {
        delegate?.controller(self, sectionIndexTitleForSectionName: name) ?? sectionIndexTitle(name)
    }

    /// The IDs of the results, in order, without materializing objects.
    public var fetchedObjectIDs: [ObjectID]? {
        guard hasFetched else { return nil }
        return (0..<entries.count).map(objectID(atOffset:))
    }

    /// The ID at `indexPath` (`[section, item]`), without materializing the object.
    public func objectID(at indexPath: IndexPath) -> ObjectID {
        objectID(atOffset: sectionStarts[indexPath.arborSection] + indexPath.arborItem)
    }

    /// The index path of the object with `id`, or nil when it is not in the results.
    /// - Complexity: O(n).
    public func indexPath(forObjectID id: ObjectID) -> IndexPath? {
        guard let offset = offset(of: id) else { return nil }
        return indexPath(forOffset: offset)
    }

    func indexPath(forOffset offset: Int) -> IndexPath {
        // The last section starting at or before `offset`.
        var low = 0, high = sectionStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if sectionStarts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        return .arbor(section: low, item: offset - (sectionStarts.isEmpty ? 0 : sectionStarts[low]))
    }

    func offset(of id: ObjectID) -> Int? {
        guard let compact = compactID(id) else { return nil }
        return entries.firstIndex(of: compact)
    }

    /// The compact form of `id` among the current results' stores and unsaved IDs.
    func compactID(_ id: ObjectID) -> CompactObjectID? {
        if id.isTemporaryID {
            guard let index = unsaved.firstIndex(of: id) else { return nil }
            return CompactObjectID(key: Int64(index), code: id.info.code, store: -1)
        }
        guard let store = stores.firstIndex(where: { $0.identifier == id.storeIdentifier }) else { return nil }
        return CompactObjectID(key: id.primaryKey, code: id.info.code, store: Int32(store))
    }

    /// The section index titles, each once, in section order.
    public var sectionIndexTitles: [String] {
        var seen: Set<String> = []
        return sectionNames.compactMap(indexTitle(for:)).filter { seen.insert($0).inserted }
    }

    /// The section a section index title at `index` of the section index leads to: the first
    /// section with that title, or the last section before where it would be (0 if none).
    public func section(forSectionIndexTitle title: String, at index: Int) -> Int {
        if let found = sectionNames.firstIndex(where: { indexTitle(for: $0) == title }) { return found }
        let titles = sectionIndexTitles
        guard index > 0, index <= titles.count else { return 0 }
        return sectionNames.lastIndex { indexTitle(for: $0) == titles[index - 1] } ?? 0
    }

    // MARK: Differences

    /// Every change as one difference, from now on (ends when the controller goes away or the
    /// consuming task is cancelled).
    public var differences: AsyncStream<FetchedResultsDifference> { streams.makeStream() }

    // MARK: Caches

    /// Deletes the cache file named `name`, or every cache file when `name` is nil.
    public static func deleteCache(withName name: String?) {
        FetchedResultsCache.delete(name: name)
    }

    /// Where cache files are kept (default: a folder in the temporary directory).
    public static var cacheDirectory: URL {
        get { FetchedResultsCache.directory.withLock { $0 } }
        set { FetchedResultsCache.directory.withLock { $0 = newValue } }
    }
}

/// A typed controller: `object(at:)` returns `Element`.
public final class FetchedResultsController<Element: ManagedObject>: FetchedResultsControllerBase {
    /// The results in order (nil before `performFetch`), materialized batch by batch as read.
    public var fetchedObjects: FetchResults<Element>? {
        hasFetched ? makeResults(Element.self) : nil
    }

    /// The object at `indexPath` (`[section, item]`).
    public func object(at indexPath: IndexPath) -> Element {
        let object = object(atOffset: sectionStarts[indexPath.arborSection] + indexPath.arborItem)
        return object as? Element ?? Element(ObjectConstruction(id: object.objectID, context: managedObjectContext))
    }

    /// The index path of `object`, or nil when it is not in the results.
    /// - Complexity: O(n).
    public func indexPath(forObject object: Element) -> IndexPath? { indexPath(forObjectID: object.objectID) }
}

/// The consumers of a controller's `differences`.
final class DifferenceStreams: Sendable {
    private struct State {
        var next = 0
        var continuations: [Int: AsyncStream<FetchedResultsDifference>.Continuation] = [:]
    }
    private let state = Locked(State())

    func makeStream() -> AsyncStream<FetchedResultsDifference> {
        AsyncStream { continuation in
            let key = state.withLock { state -> Int in
                state.next += 1
                state.continuations[state.next] = continuation
                return state.next
            }
            continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.continuations.removeValue(forKey: key) } }
        }
    }

    func yield(_ difference: FetchedResultsDifference) {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(difference) }
    }

    func finishAll() {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.finish() }
    }
}

/// The results of one computation: IDs in order and the sections.
struct ComputedResults {
    var entries: ContiguousArray<CompactObjectID>
    var unsaved: [ObjectID]
    var stores: [PersistentStore]
    var sectionNames: [String]
    var sectionStarts: [Int]
    var model: ManagedObjectModel
}
