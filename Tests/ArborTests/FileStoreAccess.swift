@testable import Arbor

struct NotAFileStore: Error, CustomStringConvertible {
    let path: String
    var description: String { "\(path) is not a file store" }
}

extension PersistentStore {
    /// The B-tree store behind a file store, for tests of the file's trees and keys.
    /// - Throws: `NotAFileStore` for a store in memory.
    func btree() throws -> BTreeStore {
        guard let fileStorage else { throw NotAFileStore(path: path) }
        return fileStorage
    }
}
