import Arbor
import ArgumentParser
import Foundation

/// `arbor-bench search`: free-text search over stop names. Arbor's words index
/// (`WORDSBEGINWITH[cd]`) against SQLite FTS5 with prefix queries, Arbor's substrings index
/// (`CONTAINS[cd]`) against SQLite's `LIKE '%…%'`, index sizes and import times; over the
/// feed's stops and over a million names made from them.
struct SearchBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Word and substring search: Arbor's text indexes against SQLite FTS5 and LIKE.")

    @Option(help: "The GTFS directory (its stops.txt gives the names).") var data = "/tmp/transit"
    @Option(help: "How many names the large set has (each two stop names joined).") var names = 1_000_000
    @Option(help: "Queries per kind.") var queries = 100
    @Option(help: "Directory for the database files.") var directory = NSTemporaryDirectory() + "arbor-bench-search"
    @Option(help: "Write the results as JSON to this path.") var json: String?

    /// The stop names of `stops.txt` (the second column, CSV quoting honoured).
    static func stopNames(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var result: [String] = []
        for line in text.split(whereSeparator: \.isNewline).dropFirst() {
            var fields: [String] = [], field = "", quoted = false
            for character in line {
                if character == "\"" { quoted.toggle() } else if character == ",", !quoted { fields.append(field); field = "" } else { field.append(character) }
            }
            fields.append(field)
            if fields.count > 1 { result.append(fields[1]) }
        }
        return result
    }

    /// Words as a person types them: runs of letters and digits.
    static func words(_ name: String) -> [String] {
        name.split { !$0.isLetter && !$0.isNumber }.map(String.init)
    }

    /// `queries` word searches (one or two word prefixes of one name) and substrings (a piece
    /// from inside a word, folded to ASCII so SQLite's LIKE matches what CONTAINS[cd] does).
    static func makeQueries(_ names: [String], count: Int) -> (words: [[String]], pieces: [String]) {
        var random = SplitMix(state: 0x5EA7C4)
        func below(_ n: Int) -> Int { Int(random.next() % UInt64(max(n, 1))) }
        var wordQueries: [[String]] = [], pieces: [String] = []
        while wordQueries.count < count || pieces.count < count {
            let words = Self.words(names[below(names.count)]).filter { $0.count >= 3 }
            guard !words.isEmpty else { continue }
            let first = words[below(words.count)]
            let prefix = String(first.prefix(3 + below(first.count - 2)))
            if wordQueries.count < count {
                if below(3) == 0, words.count > 1 {
                    let second = words[below(words.count)]
                    wordQueries.append([prefix, String(second.prefix(3))])
                } else {
                    wordQueries.append([prefix])
                }
            }
            let folded = first.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            if pieces.count < count, folded.count >= 5, folded.unicodeScalars.allSatisfy({ $0.isASCII }) {
                let start = 1 + below(folded.count - 4)
                let piece = String(Array(folded)[start..<min(folded.count, start + 4)])
                pieces.append(piece)
            }
        }
        return (wordQueries, pieces)
    }

    func run() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let stops = try Self.stopNames(data + "/stops.txt")
        var random = SplitMix(state: 0x4A3E5)
        let large = (0..<names).map { _ in stops[Int(random.next() % UInt64(stops.count))] + " / " + stops[Int(random.next() % UInt64(stops.count))] }
        var report = BenchReport()
        for (label, set) in [("\(stops.count)", stops), ("\(names / 1000)k", large)] {
            print("\(label) names")
            try measure(label, set, into: &report)
        }
        report.printTable()
        if let json { try report.write(json: json) }
    }

    func measure(_ label: String, _ set: [String], into report: inout BenchReport) throws {
        func add(_ name: String, _ arbor: Double, _ sqlite: Double, _ unit: String, peer: String? = nil) {
            report.results.append(.init(name: name + " (\(label))", arbor: arbor, sqlite: sqlite, unit: unit, peer: peer))
            print(String(format: "  %@: arbor %.4f, %@ %.4f %@", name, arbor, peer ?? "sqlite", sqlite, unit))
        }
        let plain = try ArborNamesSide(path: directory + "/plain.arbor", names: set, indexes: .none)
        let words = try ArborNamesSide(path: directory + "/words.arbor", names: set, indexes: .words)
        let both = try ArborNamesSide(path: directory + "/both.arbor", names: set, indexes: .wordsAndSubstrings)
        let table = try SQLiteNamesSide(path: directory + "/plain.sqlite", names: set, fts: false)
        let fts = try SQLiteNamesSide(path: directory + "/fts.sqlite", names: set, fts: true)
        add("import with words index", words.importSeconds, plain.importSeconds, "s", peer: "arbor without")
        add("import with words index, vs FTS5", words.importSeconds, fts.importSeconds, "s")
        add("import with words and substrings", both.importSeconds, plain.importSeconds, "s", peer: "arbor without")

        let plainBytes = try plain.compactedBytes(in: directory), wordsBytes = try words.compactedBytes(in: directory)
        let bothBytes = try both.compactedBytes(in: directory)
        let tableBytes = try table.compactedBytes(), ftsBytes = try fts.compactedBytes()
        add("index size, words", Double(wordsBytes - min(wordsBytes, plainBytes)) / 1_048_576, Double(ftsBytes - min(ftsBytes, tableBytes)) / 1_048_576, "MiB")
        add("index size, substrings", Double(bothBytes - min(bothBytes, wordsBytes)) / 1_048_576, Double(ftsBytes - min(ftsBytes, tableBytes)) / 1_048_576, "MiB")

        let (wordQueries, pieces) = Self.makeQueries(set, count: queries)
        let context = both.container.newBackgroundContext()
        // Warm both caches: every query once, answers compared in count.
        var differing = 0
        for query in wordQueries {
            let a = try both.search(context, "name WORDSBEGINWITH[cd] %@", query.joined(separator: " "))
            let b = try fts.wordSearch(query)
            if a != b { differing += 1 }
        }
        print("  word queries whose FTS5 count differs (tokenizers split differently): \(differing) of \(wordQueries.count)")
        var arborTimes: [Double] = [], sqliteTimes: [Double] = []
        for query in wordQueries {
            arborTimes.append(try Clock.seconds { _ = try both.search(context, "name WORDSBEGINWITH[cd] %@", query.joined(separator: " ")) } * 1000)
            sqliteTimes.append(try Clock.seconds { _ = try fts.wordSearch(query) } * 1000)
        }
        add("word search median", Clock.median(arborTimes), Clock.median(sqliteTimes), "ms", peer: "FTS5")
        add("word search p95", Clock.percentile(arborTimes, 0.95), Clock.percentile(sqliteTimes, 0.95), "ms", peer: "FTS5")
        arborTimes = []
        sqliteTimes = []
        for query in wordQueries {
            var a = 0, b = 0
            arborTimes.append(try Clock.seconds { a = try both.searchIDs(context, "name WORDSBEGINWITH[cd] %@", query.joined(separator: " ")) } * 1000)
            sqliteTimes.append(try Clock.seconds { b = try fts.wordSearchIDs(query) } * 1000)
            if a != b { differing += 1 }
        }
        add("word search median, IDs only", Clock.median(arborTimes), Clock.median(sqliteTimes), "ms", peer: "FTS5")

        arborTimes = []
        sqliteTimes = []
        for piece in pieces {
            var a = 0, b = 0
            arborTimes.append(try Clock.seconds { a = try both.search(context, "name CONTAINS[cd] %@", piece) } * 1000)
            sqliteTimes.append(try Clock.seconds { b = try table.contains(piece) } * 1000)
            if a != b { differing += 1 }
        }
        add("contains median", Clock.median(arborTimes), Clock.median(sqliteTimes), "ms", peer: "LIKE '%…%'")
        add("contains p95", Clock.percentile(arborTimes, 0.95), Clock.percentile(sqliteTimes, 0.95), "ms", peer: "LIKE '%…%'")
    }
}

