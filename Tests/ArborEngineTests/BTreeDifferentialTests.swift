import ArborEngine
import ArborEngineTestSupport
import Testing

@Suite("B+tree against an in-memory model")
struct BTreeDifferentialTests {
    @Test("basic put, get, delete and reopen")
    func basics() throws {
        let file = SimulatedFile()
        var db: Database? = try Database.open(file: file)
        try db?.update { tx in
            let tree = try tx.createTree("t")
            for i in 0..<2000 { try tree.put(TupleKey.encode([.int64(Int64(i))]), Array("value \(i)".utf8)) }
        }
        db = nil
        let reopened = try Database.open(file: file)
        try reopened.view { tx in
            let tree = try tx.tree("t")
            #expect(tree.count == 2000)
            #expect(try tree.get(TupleKey.encode([.int64(1234)])) == Array("value 1234".utf8))
            #expect(try tree.get(TupleKey.encode([.int64(5000)])) == nil)
            #expect(try tree.count(in: .halfOpen(TupleKey.encode([.int64(100)]), TupleKey.encode([.int64(200)]))) == 100)
        }
        try reopened.update { tx in
            let tree = try tx.tree("t")
            for i in stride(from: 0, to: 2000, by: 2) { try tree.delete(TupleKey.encode([.int64(Int64(i))])) }
        }
        let report = reopened.checkIntegrity()
        #expect(report.isSound, "\(report)")
        let remaining = try reopened.view { tx in try tx.tree("t").count }
        #expect(remaining == 1000)
    }

    /// Random operations (puts with inline and overflow values, deletes, range scans, counts,
    /// commits, aborts, reopens, tree drops) must give the model's answers at every step.
    @Test("random operations match the model", arguments: [(UInt64(1), 4096), (UInt64(2), 4096), (UInt64(3), 8192), (UInt64(4), 4096)])
    func randomOperations(seed: UInt64, pageSize: Int) throws {
        var generator = SplitMix64(seed: seed)
        let operationCount = 30_000
        let bytes = (0..<(operationCount * 12)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var source = OperationSource(bytes: bytes)
        let file = SimulatedFile()
        let runner = try DifferentialRunner { try Database.open(file: file, options: .init(pageSize: pageSize)) }
        for _ in 0..<operationCount { try runner.apply(source.next()) }
        let report = try runner.finish()
        #expect(report.isSound, "\(report)")
        print("differential seed \(seed): \(runner.steps) operations, \(report)")
    }

    /// The same with a write budget of a few pages: transactions write leaves early (spill) and
    /// read them back into nodes when they change again, overflow references included.
    @Test("random operations match the model while transactions spill leaves")
    func randomOperationsSpilling() throws {
        var generator = SplitMix64(seed: 5)
        let operationCount = 20_000
        let bytes = (0..<(operationCount * 12)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var source = OperationSource(bytes: bytes)
        let file = SimulatedFile()
        var options = Database.Options(pageSize: 4096)
        options.maxDirtyBytes = 40 << 10
        let runner = try DifferentialRunner { try Database.open(file: file, options: options) }
        for _ in 0..<operationCount { try runner.apply(source.next()) }
        let report = try runner.finish()
        #expect(report.isSound, "\(report)")
        print("differential (spilling): \(runner.steps) operations, \(report)")
    }

    /// Keys and values near the size limits: splits may need three pages, redistribution may not
    /// fit, and branch pages hold only a few separators.
    @Test("random operations with keys and values near the size limits match the model")
    func largeCells() throws {
        var generator = SplitMix64(seed: 21)
        let operationCount = 8_000
        let bytes = (0..<(operationCount * 12)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var source = OperationSource(bytes: bytes, largeCells: true)
        let file = SimulatedFile()
        let runner = try DifferentialRunner { try Database.open(file: file) }
        for _ in 0..<operationCount { try runner.apply(source.next()) }
        let report = try runner.finish()
        #expect(report.isSound, "\(report)")
        print("differential (large cells): \(runner.steps) operations, \(report)")
    }
}
