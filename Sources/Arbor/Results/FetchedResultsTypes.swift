import Foundation

/// Why a fetched results controller cannot fetch.
public enum FetchedResultsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request has no sort descriptor (a list needs an order).
    case missingSortDescriptors(entity: String)
    /// Sections are by `sectionNameKeyPath`, but the first sort descriptor orders by another key
    /// path, so a section's objects would not be contiguous.
    case sectionKeyPathNotFirstSort(sectionNameKeyPath: String, firstSortKeyPath: String)
    /// The section names are not in sort order (a custom `sectionName` that does not keep it).
    case sectionsOutOfOrder(section: String)

    public var description: String {
        switch self {
        case .missingSortDescriptors(let entity):
            return "a fetched results controller needs at least one sort descriptor (fetch of \(entity))"
        case .sectionKeyPathNotFirstSort(let section, let first):
            return "the section name key path \(section) must be the key path of the first sort descriptor, which is \(first)"
        case .sectionsOutOfOrder(let section):
            return "section \"\(section)\" appears twice in sort order: the section name must follow the first sort descriptor's order"
        }
    }
}

/// The kind of a reported change (Core Data's `NSFetchedResultsChangeType`).
public enum FetchedResultsChangeType: Sendable, Equatable {
    case insert, delete, move, update
}

/// One object's change: `indexPath` is where it was before the change (delete, move, update),
/// `newIndexPath` where it is after (insert, move). Index paths are `[section, item]`.
public struct FetchedObjectChange: Sendable, Equatable {
    public var objectID: ObjectID
    public var type: FetchedResultsChangeType
    public var indexPath: IndexPath?
    public var newIndexPath: IndexPath?

    public init(objectID: ObjectID, type: FetchedResultsChangeType, indexPath: IndexPath?, newIndexPath: IndexPath?) {
        self.objectID = objectID
        self.type = type
        self.indexPath = indexPath
        self.newIndexPath = newIndexPath
    }
}

/// One section's change: `index` is the old index for a delete, the new one for an insert.
public struct FetchedSectionChange: Sendable, Equatable {
    public var name: String
    public var type: FetchedResultsChangeType
    public var index: Int

    public init(name: String, type: FetchedResultsChangeType, index: Int) {
        self.name = name
        self.type = type
        self.index = index
    }
}

/// Everything one change did to the results, as a list UI applies it in one batch: delete the
/// old index paths of deleted and moved objects (descending), delete sections, insert sections,
/// insert the new index paths of inserted and moved objects (ascending); updated objects stay.
public struct FetchedResultsDifference: Sendable, Equatable {
    public var sectionChanges: [FetchedSectionChange]
    public var objectChanges: [FetchedObjectChange]
    /// The section names after the change.
    public var sectionNames: [String]
    /// The number of objects after the change.
    public var count: Int

    public var isEmpty: Bool { sectionChanges.isEmpty && objectChanges.isEmpty }
}

/// Hears a controller's changes (Core Data's `NSFetchedResultsControllerDelegate`); every method
/// has a default that does nothing. Called on the context's queue.
public protocol FetchedResultsControllerDelegate: AnyObject {
    func controllerWillChangeContent(_ controller: FetchedResultsControllerBase)
    func controller(_ controller: FetchedResultsControllerBase, didChange section: FetchedResultsSection,
                    atSectionIndex index: Int, for type: FetchedResultsChangeType)
    func controller(_ controller: FetchedResultsControllerBase, didChange object: ManagedObject, at indexPath: IndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: IndexPath?)
    func controllerDidChangeContent(_ controller: FetchedResultsControllerBase)
    /// The index title of a section (nil: the controller's default).
    func controller(_ controller: FetchedResultsControllerBase, sectionIndexTitleForSectionName name: String) -> String?
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsControllerBase) {}
    public func controller(_ controller: FetchedResultsControllerBase, didChange section: FetchedResultsSection,
                           atSectionIndex index: Int, for type: FetchedResultsChangeType) {}
    public func controller(_ controller: FetchedResultsControllerBase, didChange object: ManagedObject, at indexPath: IndexPath?,
                           for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsControllerBase) {}
    public func controller(_ controller: FetchedResultsControllerBase, sectionIndexTitleForSectionName name: String) -> String? { nil }
}

/// One section of a controller's results (Core Data's `NSFetchedResultsSectionInfo`), a view of
/// the controller at the time it was read.
public struct FetchedResultsSection {
    public let name: String
    public let indexTitle: String?
    public let numberOfObjects: Int
    let controller: FetchedResultsControllerBase
    let range: Range<Int>

    /// The section's objects (materialized batch by batch, as the controller's results).
    public var objects: [ManagedObject] { range.map { controller.object(atOffset: $0) } }
}

extension IndexPath {
    /// `[section, item]`.
    static func arbor(section: Int, item: Int) -> IndexPath { IndexPath(indexes: [section, item]) }
    var arborSection: Int { count > 0 ? self[0] : 0 }
    var arborItem: Int { count > 1 ? self[1] : 0 }
}
