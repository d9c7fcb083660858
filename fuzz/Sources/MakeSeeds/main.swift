import ArborEngine
import ArborEngineTestSupport
import ArborTransit
import Foundation

// Writes seed corpora under fuzz/corpus/<Target>/ (run from the repository root).
let root = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "fuzz/corpus"

func write(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
    let directory = root + "/" + target
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
}

// Real store files written by the engine, with the smallest page size.
for (index, entries) in [0, 3, 60, 400].enumerated() {
    let file = SimulatedFile()
    let db = try Database.open(file: file)
    try db.update { tx in
        let tree = try tx.createTree("stops")
        for i in 0..<entries { try tree.put(TupleKey.encode([.int64(Int64(i)), .string("s\(i)")]), Array("stop \(i)".utf8)) }
        if entries > 100 { try tx.createTree("blob").put([1], [UInt8](repeating: 7, count: 6000)) }
    }
    if entries > 50 {
        try db.update { tx in for i in stride(from: 0, to: entries, by: 3) { try tx.tree("stops").delete(TupleKey.encode([.int64(Int64(i)), .string("s\(i)")])) } }
    }
    try write("FuzzFileOpen", "store-\(index)", file.currentBytes)
}
// A compacted, compressed file.
let tmp = NSTemporaryDirectory() + "arbor-seed-\(getpid())"
let source = try Database.open(path: tmp + ".arbor")
try source.update { tx in
    let tree = try tx.createTreeIfMissing("names")
    for i in 0..<300 { try tree.put(TupleKey.encode([.string("Haltestelle \(i)")]), Array("U Görlitzer Bahnhof \(i)".utf8)) }
}
try source.compact(to: tmp + "-packed.arbor", compress: true)
try write("FuzzFileOpen", "compressed", Array(try Data(contentsOf: URL(fileURLWithPath: tmp + "-packed.arbor"))))
for suffix in [".arbor", ".arbor-lock", "-packed.arbor"] { unlink(tmp + suffix) }

// Tuple keys and pages.
try write("FuzzDecode", "tuple-mixed", TupleKey.encode([.int64(-5), .string("a\u{0}b"), .double(-0.0), .null, .bool(true)]))
try write("FuzzDecode", "tuple-compact", TupleKey.encode([TupleComponent(.integer(-5)), TupleComponent(.integer(0)), TupleComponent(.integer(300)),
                                                         TupleComponent(.integer(70_000), descending: true), TupleComponent(.string("a"))]))
try write("FuzzDecode", "tuple-desc", TupleKey.encode([TupleComponent(.string("zz"), descending: true), TupleComponent(.uuid(Array(repeating: 3, count: 16)))]))
let pageFile = SimulatedFile()
let pageDB = try Database.open(file: pageFile)
try pageDB.update { tx in
    let tree = try tx.createTree("t")
    for i in 0..<500 { try tree.put(TupleKey.encode([.int32(Int32(i))]), Array("value \(i)".utf8)) }
}
let image = pageFile.currentBytes
for page in 2..<min(6, image.count / 4096) {
    try write("FuzzDecode", "page-\(page)", Array(image[(page * 4096)..<((page + 1) * 4096)]))
}

// Operation sequences.
var generator = SplitMix64(seed: 99)
for index in 0..<4 {
    try write("FuzzOperations", "ops-\(index)", (0..<(400 * (index + 1))).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
}
print("seeds written to \(root)")

// Context operation sequences: pseudo-random bytes of several lengths (each byte picks an
// operation or an operand, see GraphDifferential.apply).
for (index, length) in [64, 256, 700, 1500].enumerated() {
    var generator = SplitMix64(seed: 0xC0DE + UInt64(index))
    try write("FuzzContext", "operations-\(index)", (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
}

// Predicate format strings.
for (index, format) in [
    "value > 3 AND label BEGINSWITH[cd] 'LAB'", "parent.value == 1 OR children.@count > 1",
    "SUBQUERY(children, $c, $c.value > 4).@count != 0", "ANY tags.name == 't'", "label LIKE '*1?' OR label MATCHES 'l.*'",
    "value BETWEEN {2, 7} AND NOT (value IN {3, 4})", "partner == nil AND parent != nil", "children.@sum.value >= 10",
    "label WORDSBEGINWITH[cd] 'lab 1' OR ANY tags.name WORDSBEGINWITH 't'",
].enumerated() {
    try write("FuzzPredicate", "predicate-\(index)", Array(format.utf8))
}

// GTFS files: the quirks real feeds have, and generated ones.
for (index, text) in [
    "\u{FEFF} stop_name ,stop_id, stop_lat,stop_lon ,location_type\r\n\"U Görlitzer Bahnhof\",1025a,52.499,13.428,1\r\n\"A, \"\"B\"\"\",2,52.5,13.4,\n",
    "trip_id,arrival_time,departure_time,stop_id,pickup_type\nT1,08:00:00,08:00:30,1025a,0\r\nT1,25:10:00,,2,\nT2,,,2,3",
    "stop_id,departure_time\n1,\"08:00:00\n",
].enumerated() {
    try write("FuzzGTFS", "feed-\(index)", Array(text.utf8))
}
let feedDirectory = URL(fileURLWithPath: NSTemporaryDirectory() + "arbor-seed-feed-\(getpid())")
try FeedGenerator(stops: 40, stopTimes: 300, seed: 5).write(to: feedDirectory)
try write("FuzzGTFS", "generated-stops", Array(try Data(contentsOf: feedDirectory.appendingPathComponent("stops.txt")).prefix(3000)))
try write("FuzzGTFS", "generated-stop-times", Array(try Data(contentsOf: feedDirectory.appendingPathComponent("stop_times.txt")).prefix(3000)))

// Store files with an object model, for the inspection paths (schema, dump).
let transitStore = feedDirectory.appendingPathComponent("transit.arbor")
_ = try GTFSImporter.importFeed(from: feedDirectory, into: transitStore)
try write("FuzzInspect", "transit", Array(try Data(contentsOf: transitStore)))
try write("FuzzInspect", "engine-store", Array(try Data(contentsOf: URL(fileURLWithPath: root + "/FuzzFileOpen/store-2"))))
try? FileManager.default.removeItem(at: feedDirectory)
print("tool seeds written to \(root)")
