import ArborEngine

/// The bodies of the libFuzzer targets, shared with the regression tests that replay the inputs
/// the fuzzers found. Each returns normally for any input the engine handles correctly (an error
/// is a correct answer to a bad input); a wrong answer is reported as a `FuzzFinding`.
public enum FuzzBodies {
    public struct FuzzFinding: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// (1) Opens arbitrary bytes as a store file, runs the integrity check and scans every tree.
    public static func fileOpen(_ data: [UInt8]) throws {
        var options = Database.Options()
        options.readOnly = true  // also admits compressed (compacted) files
        guard let db = try? Database.open(file: SimulatedFile(bytes: data), options: options) else { return }
        _ = db.checkIntegrity()
        _ = try? db.view { tx in
            for name in try tx.treeNames() {
                let tree = try tx.tree(name)
                _ = try tree.entries(limit: 100_000)
                _ = try tree.count(in: .all)
            }
        }
        for page in 0..<min(64, (try? db.info().pageCount) ?? 0) { _ = try? db.dumpPage(page) }
    }

    /// (2) Decodes arbitrary bytes as a tuple key and as a page of each legal size.
    public static func decode(_ data: [UInt8]) throws {
        if let components = try? TupleKey.decodeComponents(data) {
            // Whatever decodes must re-encode to the same bytes (the encoding is canonical)
            // unless it held a NaN, which is canonicalized.
            let hasNaN = components.contains {
                if case .double(let x) = $0.value { return x.isNaN }
                if case .float(let x) = $0.value { return x.isNaN }
                if case .date(let x) = $0.value { return x.isNaN }
                return false
            }
            if !hasNaN && TupleKey.encode(components) != data {
                throw FuzzFinding(description: "tuple key does not re-encode to its bytes: \(data)")
            }
        }
        for size in [4096, 8192] where data.count >= 24 {
            var image = [UInt8](repeating: 0, count: size)
            image.replaceSubrange(0..<min(size, data.count), with: data.prefix(size))
            _ = try? PageDump.decode(page: 5, image: image)
            // Also with a valid checksum, so the layout validation itself is exercised.
            image.withUnsafeMutableBytes { buffer in
                let checksum = PageChecksum.compute(UnsafeRawBufferPointer(rebasing: buffer[4...]))
                buffer.storeBytes(of: checksum.littleEndian, toByteOffset: 0, as: UInt32.self)
                buffer.storeBytes(of: UInt32(5).littleEndian, toByteOffset: 8, as: UInt32.self)
            }
            _ = try? PageDump.decode(page: 5, image: image)
        }
    }

    /// (3) Decodes an operation sequence and runs it against the engine and the reference model.
    public static func operations(_ data: [UInt8]) throws {
        var source = OperationSource(bytes: Array(data.dropFirst()), largeCells: (data.first ?? 0) & 1 == 1)
        let file = SimulatedFile()
        let runner = try DifferentialRunner { try Database.open(file: file) }
        var steps = 0
        while !source.isExhausted && steps < 3000 {
            do { try runner.apply(source.next()) } catch let mismatch as DifferentialMismatch {
                throw FuzzFinding(description: mismatch.description)
            }
            steps += 1
        }
        let report = try runner.finish()
        guard report.isSound else { throw FuzzFinding(description: "integrity: \(report)") }
    }
}
