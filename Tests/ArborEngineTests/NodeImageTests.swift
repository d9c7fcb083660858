import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// Leaves and branches edited in place (`LeafImage`, `BranchImage`) against the decoded form
/// doing the same operations: after every change both give the same entries, sizes and pages.
@Suite("Nodes edited in place")
struct NodeImageTests {
    static let pageSize = 4096

    static func key(_ number: Int) -> [UInt8] { TupleKey.encode([.int64(Int64(number))]) }

    static func value(_ random: inout SplitMix64) -> LeafValue {
        if random.next() % 9 == 0 {
            let raw = 2_000 + Int(random.next() % 50_000)
            let stored = random.next() % 2 == 0 ? raw : raw / 2
            return .overflow(OverflowRef(firstPage: PageID(2 + random.next() % 1_000), rawLength: raw, storedLength: stored,
                                         compressed: stored < raw))
        }
        let length = [0, 1, 8, 40, 100, 300][Int(random.next() % 6)]
        return .inline((0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    static func page(of node: Node, id: PageID) throws -> Page {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        defer { buffer.deallocate() }
        node.serialize(into: buffer, id: id, txid: 7)
        return try Page.validated(id: id, image: UnsafeRawBufferPointer(buffer), verifyChecksum: true)
    }

    static func bytes(of node: Node) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8)
        defer { buffer.deallocate() }
        node.serialize(into: buffer, id: 9, txid: 7)
        return Array(buffer)
    }

    @Test("random inserts, replacements and removals match the decoded leaf", arguments: 0..<8)
    func matchesDecoded(seed: UInt64) throws {
        var random = SplitMix64(seed: 0x1EAF &+ seed)
        // A starting leaf with a few entries, written as a page and copied back for editing.
        let start = Node(level: 0)
        for number in stride(from: 0, to: 40, by: 4) where start.byteSize < 2_000 {
            start.insertLeaf(key: Self.key(number), value: Self.value(&random), at: start.count)
        }
        let page = try Self.page(of: start, id: 5)
        let edited = Node(page: page, pageSize: Self.pageSize)
        let reference = Node(level: 0)
        for index in 0..<start.count { reference.insertLeaf(key: start.keys[index], value: start.values[index], at: index) }
        #expect(edited.isInPlace)
        var inPlaceSteps = 0
        for step in 0..<400 {
            let key = Self.key(Int(random.next() % 48))
            let (index, found) = reference.search(key)
            #expect(edited.search(key) == (index, found), "step \(step)")
            let operation = random.next() % 3
            if found && operation == 0 {
                #expect(edited.value(at: index) == reference.value(at: index), "step \(step)")
                edited.removeLeaf(at: index)
                reference.removeLeaf(at: index)
            } else {
                let value = Self.value(&random)
                let growth = found ? value.cellBytes - reference.valueCellBytes(index) : leafCellSize(keyLength: key.count, value: value)
                guard reference.byteSize + growth <= Self.pageSize else { continue }
                if found {
                    edited.replaceLeafValue(at: index, with: value)
                    reference.replaceLeafValue(at: index, with: value)
                } else {
                    edited.insertLeaf(key: key, value: value, at: index)
                    reference.insertLeaf(key: key, value: value, at: index)
                }
            }
            if edited.isInPlace { inPlaceSteps += 1 }
            #expect(edited.count == reference.count && edited.byteSize == reference.byteSize, "step \(step)")
            #expect(Self.bytes(of: edited) == Self.bytes(of: reference), "step \(step): the written pages differ")
        }
        #expect(inPlaceSteps > 300, "most steps ran in place (\(inPlaceSteps))")
        // Decoding at the end gives the same entries.
        for index in 0..<reference.count {
            #expect(edited.keys[index] == reference.keys[index] && edited.values[index] == reference.values[index])
        }
        #expect(!edited.isInPlace)
    }

    /// An insert that does not fit the page decodes the leaf, which then holds more than a page
    /// until the tree splits it; a leaf of an older layout is decoded from the start.
    @Test("a cell too large for the page falls back to the decoded form")
    func overflowingInsert() throws {
        let start = Node(level: 0)
        var number = 0
        while start.byteSize < Self.pageSize - 300 {
            start.insertLeaf(key: Self.key(number), value: .inline([UInt8](repeating: 1, count: 100)), at: start.count)
            number += 1
        }
        let edited = Node(page: try Self.page(of: start, id: 3), pageSize: Self.pageSize)
        #expect(edited.isInPlace)
        edited.insertLeaf(key: Self.key(number), value: .inline([UInt8](repeating: 2, count: 400)), at: edited.count)
        #expect(!edited.isInPlace && edited.byteSize > Self.pageSize && edited.count == start.count + 1)
        #expect(edited.values[edited.count - 1] == .inline([UInt8](repeating: 2, count: 400)))
    }

    /// A branch copied from a page changes child pointers in place; it answers child lookups
    /// as the decoded branch does, writes the same page, and decodes for a new separator.
    @Test("a branch edited in place matches the decoded branch")
    func branchInPlace() throws {
        var random = SplitMix64(seed: 0xB4A)
        let start = Node(level: 1)
        start.children = [100]
        start.recomputeSize()
        for index in 0..<120 { start.insertBranch(key: Self.key(index * 10), rightChild: PageID(101 + index), at: index) }
        let edited = Node(page: try Self.page(of: start, id: 4), pageSize: Self.pageSize)
        let reference = Node(level: 1)
        reference.children = start.children
        reference.recomputeSize()
        for index in 0..<start.count { reference.insertBranch(key: start.keys[index], rightChild: start.children[index + 1], at: index) }
        #expect(edited.isInPlace && edited.byteSize == reference.byteSize)
        for step in 0..<300 {
            let key = Self.key(Int(random.next() % 1_300) - 50)
            let index = reference.childIndex(for: key)
            #expect(edited.childIndex(for: key) == index, "step \(step)")
            #expect(edited.child(at: index) == reference.child(at: index), "step \(step)")
            if index < reference.count { #expect(edited.key(at: index) == reference.key(at: index)) }
            let id = PageID(2 + random.next() % 100_000)
            edited.setChild(id, at: index)
            reference.setChild(id, at: index)
            #expect(Self.bytes(of: edited) == Self.bytes(of: reference), "step \(step)")
        }
        #expect(edited.isInPlace)
        edited.insertBranch(key: Self.key(5), rightChild: 77, at: 1)
        reference.insertBranch(key: Self.key(5), rightChild: 77, at: 1)
        #expect(!edited.isInPlace && Self.bytes(of: edited) == Self.bytes(of: reference))
    }
}
