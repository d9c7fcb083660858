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

/// Recomputes the checksum of page `page` (4 KiB pages) of a file image after a test edited it.
func resealPage(_ image: inout [UInt8], page: Int) {
    let base = page * 4096
    let checksum = PageChecksum.compute(Array(image[(base + 4)..<(base + 4096)]))
    withUnsafeBytes(of: checksum.littleEndian) { for (i, b) in $0.enumerated() { image[base + i] = b } }
}
