import ArborEngine

/// The in-memory model differential tests compare the engine against: committed trees plus the
/// open transaction's working copy, with commit and abort.
public struct ReferenceModel: Equatable {
    public var committed: [String: [[UInt8]: [UInt8]]] = [:]
    public var working: [String: [[UInt8]: [UInt8]]] = [:]

    public init() {}

    public mutating func commit() { committed = working }
    public mutating func abort() { working = committed }

    /// Sorted entries of `tree` in the working copy, within `range`.
    public func entries(_ tree: String, in range: KeyRange = .all) -> [(key: [UInt8], value: [UInt8])] {
        (working[tree] ?? [:]).filter { range.contains($0.key) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map { (key: $0.key, value: $0.value) }
    }
}

/// One step of a differential workload.
public enum Operation: Equatable, Sendable, CustomStringConvertible {
    case put(tree: Int, key: [UInt8], value: [UInt8])
    case delete(tree: Int, key: [UInt8])
    /// Puts (a value) and deletes (nil) applied together (`Tree.apply`), in the order given.
    case batch(tree: Int, changes: [BatchChange])
    case get(tree: Int, key: [UInt8])
    case range(tree: Int, lower: [UInt8], upper: [UInt8], reverse: Bool, lowerInclusive: Bool, upperInclusive: Bool)
    case count(tree: Int, lower: [UInt8], upper: [UInt8])
    case commit
    case abort
    case reopen
    case dropTree(tree: Int)

    public var description: String {
        switch self {
        case .put(let t, let k, let v): return "put(t\(t), \(k), \(v.count) bytes)"
        case .delete(let t, let k): return "delete(t\(t), \(k))"
        case .batch(let t, let changes): return "batch(t\(t), \(changes.count) changes)"
        case .get(let t, let k): return "get(t\(t), \(k))"
        case .range(let t, let l, let u, let r, let li, let ui): return "range(t\(t), \(l) \(li ? "..." : "<..")\(ui ? "=" : "<") \(u), reverse: \(r))"
        case .count(let t, let l, let u): return "count(t\(t), \(l)..<\(u))"
        case .commit: return "commit"
        case .abort: return "abort"
        case .reopen: return "reopen"
        case .dropTree(let t): return "dropTree(t\(t))"
        }
    }

    public static let treeNames = ["alpha", "beta", "gamma"]
}

/// One change of a batch: a put, or a delete (no value).
public struct BatchChange: Equatable, Sendable {
    public var key: [UInt8]
    public var value: [UInt8]?
}

/// Decodes operations from arbitrary bytes (for the fuzzer) or draws them from a seeded generator.
public struct OperationSource {
    var bytes: [UInt8]
    var position = 0
    /// Keys and inline values up to the page-size limits (for 4 KiB pages), so splits, merges and
    /// redistribution meet cells of a quarter page.
    var largeCells: Bool

    public init(bytes: [UInt8], largeCells: Bool = false) {
        self.bytes = bytes
        self.largeCells = largeCells
    }

    public var isExhausted: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func key() -> [UInt8] {
        // Small key space so puts, deletes and gets collide often; lengths vary to exercise separators.
        let length = Int(byte() % 4) + 1
        let key = (0..<length).map { _ in byte() % 16 }
        guard largeCells else { return key }
        // Pad to up to 1,000 bytes (the limit for 4 KiB pages is 1,002); the padding depends on the
        // prefix so equal prefixes stay equal keys.
        let padding = Int(key[0]) * 60 + Int(byte() % 2) * 40
        return key + [UInt8](repeating: key[length - 1] &+ 1, count: min(padding, 1000 - length))
    }

    mutating func value() -> [UInt8] {
        let selector = byte()
        let length: Int
        if largeCells && selector % 2 == 0 {
            length = 600 + Int(byte()) + Int(byte() % 2) * 140   // up to the 1,002-byte inline limit
            let fill = byte()
            return (0..<length).map { UInt8(truncatingIfNeeded: $0 &* Int(fill | 1)) }
        }
        switch selector % 16 {
        case 0: length = 2000 + Int(byte()) * 40     // overflow pages
        case 1, 2: length = 200 + Int(byte())
        default: length = Int(byte() % 64)
        }
        let fill = byte()
        return (0..<length).map { UInt8(truncatingIfNeeded: $0 &* Int(fill | 1)) }
    }

    public mutating func next() -> Operation {
        let tree = Int(byte() % 3)
        switch byte() % 32 {
        case 0..<14: return .put(tree: tree, key: key(), value: value())
        case 14..<20: return .delete(tree: tree, key: key())
        case 20..<24: return .get(tree: tree, key: key())
        case 24: return .range(tree: tree, lower: key(), upper: key(), reverse: byte() % 2 == 0,
                                lowerInclusive: byte() % 2 == 0, upperInclusive: byte() % 3 == 0)
        case 25:
            // Mostly small batches; sometimes hundreds of changes, more than a leaf takes at once.
            let size = byte() % 8 == 0 ? 200 + Int(byte()) * 2 : 1 + Int(byte() % 48)
            return .batch(tree: tree, changes: (0..<size).map { _ in
                let key = key()
                return BatchChange(key: key, value: byte() % 3 == 0 ? nil : value())
            })
        case 26: return .count(tree: tree, lower: key(), upper: key())
        case 27, 28: return .commit
        case 29: return .abort
        case 30: return .reopen
        default: return byte() % 8 == 0 ? .dropTree(tree: tree) : .commit
        }
    }
}

/// A mismatch between the engine and the model.
public struct DifferentialMismatch: Error, CustomStringConvertible {
    public var step: Int
    public var operation: Operation
    public var detail: String
    public var description: String { "step \(step) \(operation): \(detail)" }
}

/// Runs operations against a database and the model, failing on the first difference.
public final class DifferentialRunner {
    public private(set) var database: Database
    let reopen: () throws -> Database
    public private(set) var model = ReferenceModel()
    var transaction: WriteTransaction?
    public private(set) var steps = 0
    var commits = 0

    public init(open: @escaping () throws -> Database) throws {
        self.reopen = open
        self.database = try open()
    }

    func writer() throws -> WriteTransaction {
        if let transaction { return transaction }
        let transaction = try database.beginWrite()
        self.transaction = transaction
        return transaction
    }

    func tree(_ index: Int, in transaction: WriteTransaction) throws -> Tree {
        try transaction.createTreeIfMissing(Operation.treeNames[index])
    }

    func fail(_ operation: Operation, _ detail: String) -> DifferentialMismatch {
        DifferentialMismatch(step: steps, operation: operation, detail: detail)
    }

    public func apply(_ operation: Operation) throws {
        steps += 1
        switch operation {
        case .put(let t, let key, let value):
            let tree = try tree(t, in: try writer())
            try tree.put(key, value)
            model.working[Operation.treeNames[t], default: [:]][key] = value
            try checkInvariants(tree, operation)
        case .delete(let t, let key):
            let tree = try tree(t, in: try writer())
            let removed = try tree.delete(key)
            let expected = model.working[Operation.treeNames[t], default: [:]].removeValue(forKey: key) != nil
            if removed != expected { throw fail(operation, "delete returned \(removed), model \(expected)") }
            try checkInvariants(tree, operation)
        case .batch(let t, let changes):
            var batch = TreeChanges()
            for change in changes {
                if let value = change.value { batch.put(change.key, value) } else { batch.delete(change.key) }
                model.working[Operation.treeNames[t], default: [:]][change.key] = change.value
            }
            let tree = try tree(t, in: try writer())
            try tree.apply(batch)
            try checkInvariants(tree, operation)
        case .get(let t, let key):
            let got = try tree(t, in: try writer()).get(key)
            let expected = model.working[Operation.treeNames[t]]?[key]
            if got != expected { throw fail(operation, "got \(got?.count ?? -1) bytes, model \(expected?.count ?? -1)") }
        case .range(let t, let lower, let upper, let reverse, let lowerInclusive, let upperInclusive):
            let range = KeyRange(lower: .init(lower, inclusive: lowerInclusive), upper: .init(upper, inclusive: upperInclusive))
            var got: [[UInt8]] = []
            try tree(t, in: try writer()).forEach(in: range, reverse: reverse) { key, _ in
                got.append(key)
                return true
            }
            var expected = model.entries(Operation.treeNames[t], in: range).map(\.key)
            if reverse { expected.reverse() }
            if got != expected { throw fail(operation, "range returned \(got), model \(expected)") }
        case .count(let t, let lower, let upper):
            let range = KeyRange.halfOpen(lower, upper)
            let got = try tree(t, in: try writer()).count(in: range)
            let expected = model.entries(Operation.treeNames[t], in: range).count
            if got != expected { throw fail(operation, "count \(got), model \(expected)") }
        case .commit:
            try transaction?.commit()
            transaction = nil
            model.commit()
            commits += 1
            // A full comparison costs O(entries); every 8th commit (and every reopen) is plenty.
            if commits % 8 == 0 { try verifyCommitted(operation) }
        case .abort:
            transaction?.abort()
            transaction = nil
            model.abort()
        case .reopen:
            transaction?.abort()
            transaction = nil
            model.abort()
            database = try reopen()
            try verifyCommitted(operation)
        case .dropTree(let t):
            let writer = try writer()
            if try writer.hasTree(Operation.treeNames[t]) { try writer.dropTree(Operation.treeNames[t]) }
            model.working[Operation.treeNames[t]] = nil
        }
    }

    /// The tree's structural invariants after a change (debug builds: `Tree.checkInvariants`).
    func checkInvariants(_ tree: Tree, _ operation: Operation) throws {
        #if DEBUG
        do { try tree.checkInvariants() } catch { throw fail(operation, "invariant broken: \(error)") }
        #endif
    }

    /// Compares every committed tree with the model through a fresh read transaction.
    public func verifyCommitted(_ operation: Operation) throws {
        try database.view { reader in
            for name in Operation.treeNames {
                let expected = (model.committed[name] ?? [:]).sorted { $0.key.lexicographicallyPrecedes($1.key) }
                guard try reader.hasTree(name) else {
                    if !expected.isEmpty { throw fail(operation, "tree \(name) missing") }
                    continue
                }
                let tree = try reader.tree(name)
                let got = try tree.entries()
                if got.count != expected.count || tree.count != expected.count {
                    throw fail(operation, "tree \(name) has \(got.count) entries (catalog \(tree.count)), model \(expected.count)")
                }
                for (g, e) in zip(got, expected) where g.key != e.key || g.value != e.value {
                    throw fail(operation, "tree \(name) differs at key \(e.key)")
                }
            }
        }
    }

    /// Commits what is pending and runs the integrity check.
    public func finish() throws -> IntegrityReport {
        try apply(.commit)
        return database.checkIntegrity()
    }
}
