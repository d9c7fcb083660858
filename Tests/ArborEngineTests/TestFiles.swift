import ArborEngine
import Foundation

/// A temporary directory removed when the value is released.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "arbor-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// Fills `tree` with `count` entries keyed by Int64 tuples, values of `valueLength` bytes.
func fill(_ tree: Tree, count: Int, valueLength: Int = 40, start: Int = 0) throws {
    for index in start..<(start + count) {
        try tree.put(TupleKey.encode([.int64(Int64(index))]), [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: valueLength))
    }
}

func key(_ index: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(index))]) }
