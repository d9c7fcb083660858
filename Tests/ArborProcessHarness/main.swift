// A store client run as a separate process by `ProcessTests` (ArborEngineTests): writers that
// acknowledge each commit on standard output, writers that take turns with another process, and
// a reader that keeps one snapshot while other processes rewrite the store.
//
//   ArborProcessHarness writer <store> <full|normal|group> <commits>
//   ArborProcessHarness turns <store> <process number> <commits>
//   ArborProcessHarness reader <store>      (reads a line from standard input between two reads)
//   ArborProcessHarness holder <store>      (holds a write transaction until a line on standard input)
//
// Exit status 0 on success, 1 with a message on standard error otherwise.
import ArborEngine
import Foundation

/// The invariant every writer keeps: "count" holds the number of entries under "k/".
enum Keys {
    static let count = Array("count".utf8)
    static func entry(_ index: Int) -> [UInt8] { Array("k/".utf8) + withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) } }
    static func turn(process: Int, _ index: Int) -> [UInt8] {
        Array("t/\(process)/".utf8) + withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) }
    }
    static func scratch(_ index: Int) -> [UInt8] { Array("s/".utf8) + [UInt8(index)] }
    static func encode(_ value: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(value).bigEndian) { Array($0) } }
    static func decode(_ bytes: [UInt8]?) -> Int {
        guard let bytes, bytes.count == 8 else { return 0 }
        return Int(bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

/// Prints a line and pushes it out at once: the test reads acknowledgements while we run.
func acknowledge(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func open(_ path: String, durability: Database.Durability = .full) throws -> Database {
    var options = Database.Options()
    options.durability = durability
    return try Database.open(path: path, options: options)
}

/// Commit `i` adds entry `i` (a value of 1 to 3,000 bytes, overflow pages included), writes one
/// scratch entry and deletes another, and updates "count"; "acked i" follows its return.
func writer(path: String, mode: String, commits: Int) throws {
    let durability: Database.Durability = mode == "normal" ? .normal(Database.SyncSchedule(commits: 50, interval: nil)) : .full
    let db = try open(path, durability: durability)
    let threads = mode == "group" ? 4 : 1
    let next = Locked(0)
    let failure = Locked<String?>(nil)
    let group = DispatchGroup()
    for _ in 0..<threads {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            while true {
                let index = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard index < commits else { return }
                do {
                    try db.update { tx in
                        let tree = try tx.createTreeIfMissing("t")
                        var count = Keys.decode(try tree.get(Keys.count))
                        if try tree.get(Keys.entry(index)) == nil { count += 1 }
                        let length = 1 + (index * 7_919) % 3_000
                        try tree.put(Keys.entry(index), [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: length))
                        // Frees pages too: a scratch entry written, another deleted.
                        try tree.put(Keys.scratch(index % 50), [UInt8](repeating: 7, count: 1 + (index * 31) % 2_000))
                        _ = try tree.delete(Keys.scratch((index + 25) % 50))
                        try tree.put(Keys.count, Keys.encode(count))
                    }
                    acknowledge("acked \(index)")
                } catch {
                    failure.withLock { $0 = "commit \(index): \(error)" }
                    return
                }
            }
        }
    }
    group.wait()
    if let message = failure.withLock({ $0 }) { fail(message) }
}

/// Each commit reads "count", adds one and records its own turn: with another process doing the
/// same, the final count is the sum of both processes' commits only if no update was lost.
func turns(path: String, process: Int, commits: Int) throws {
    let db = try open(path)
    for index in 0..<commits {
        try db.update { tx in
            let tree = try tx.createTreeIfMissing("t")
            let count = Keys.decode(try tree.get(Keys.count))
            try tree.put(Keys.turn(process: process, index), Keys.encode(count))
            try tree.put(Keys.count, Keys.encode(count + 1))
        }
    }
    acknowledge("done \(commits)")
}

/// Reads every entry, waits for a line on standard input, reads again from the same snapshot:
/// both reads must agree (printed as "snapshot <id> <entries> <hash>").
func reader(path: String) throws {
    let db = try open(path)
    let transaction = try db.beginRead()
    func digest() throws -> (Int, UInt64) {
        var hash: UInt64 = 14_695_981_039_346_656_037
        var entries = 0
        try transaction.tree("t").forEach { key, value in
            entries += 1
            for byte in key + value { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
            return true
        }
        return (entries, hash)
    }
    let first = try digest()
    acknowledge("snapshot \(transaction.snapshotID) \(first.0) \(first.1)")
    _ = readLine()
    let second = try digest()
    guard first == second else { fail("the snapshot changed: \(first) then \(second)") }
    acknowledge("same \(second.0) \(second.1)")
    transaction.close()
}

/// Begins a write transaction ("holding"), waits for a line on standard input, then adds one
/// to "count" and commits ("released"): a writer that keeps others waiting for as long as the
/// test wants, as a long import does.
func holder(path: String) throws {
    let db = try open(path)
    let transaction = try db.beginWrite()
    acknowledge("holding")
    _ = readLine()
    let tree = try transaction.createTreeIfMissing("t")
    try tree.put(Keys.count, Keys.encode(Keys.decode(try tree.get(Keys.count)) + 1))
    try transaction.commit()
    acknowledge("released")
}

let arguments = CommandLine.arguments
do {
    switch arguments.count > 2 ? arguments[1] : "" {
    case "writer" where arguments.count == 5:
        try writer(path: arguments[2], mode: arguments[3], commits: Int(arguments[4]) ?? 0)
    case "turns" where arguments.count == 5:
        try turns(path: arguments[2], process: Int(arguments[3]) ?? 0, commits: Int(arguments[4]) ?? 0)
    case "reader" where arguments.count == 3:
        try reader(path: arguments[2])
    case "holder" where arguments.count == 3:
        try holder(path: arguments[2])
    default:
        fail("usage: ArborProcessHarness writer <store> <full|normal|group> <commits> | turns <store> <n> <commits> | reader <store> | holder <store>")
    }
} catch {
    fail("\(error)")
}
