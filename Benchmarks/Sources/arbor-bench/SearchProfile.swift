import Arbor
import ArgumentParser
import Foundation

/// Hidden: the word searches of `search` repeated on the stores it leaves behind (its last,
/// large set), for profiling with `perf` or `valgrind --tool=callgrind` without the imports.
struct SearchProfile: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search-profile", shouldDisplay: false)
    @Option(help: "The GTFS directory `search` read.") var data = "/tmp/transit"
    @Option(help: "The names `search` made (its --names).") var names = 1_000_000
    @Option(help: "The directory `search` wrote its stores to.") var directory = NSTemporaryDirectory() + "arbor-bench-search"
    @Option(help: "Queries to run (the first of `search`'s list).") var queries = 100
    @Option(help: "Times to run the list.") var repeats = 1
    @Flag(help: "Only the object IDs (fetchObjectIDs / SELECT rowid).") var ids = false
    @Flag(help: "Also run FTS5 on the same queries, taking turns query by query as `search` does.") var sqlite = false

    func run() throws {
        let stops = try SearchBenchmark.stopNames(data + "/stops.txt")
        var random = SplitMix(state: 0x4A3E5)
        let large = (0..<names).map { _ in stops[Int(random.next() % UInt64(stops.count))] + " / " + stops[Int(random.next() % UInt64(stops.count))] }
        let wordQueries = Array(SearchBenchmark.makeQueries(large, count: 100).words.prefix(queries))
        let side = try ArborNamesSide(existing: directory + "/both.arbor", indexes: .wordsAndSubstrings)
        let fts = sqlite ? try SQLiteNamesSide(existing: directory + "/fts.sqlite") : nil
        let context = side.container.newBackgroundContext()
        var arborTimes: [Double] = [], sqliteTimes: [Double] = [], rows = 0
        for _ in 0..<repeats {
            for query in wordQueries {
                let text = query.joined(separator: " ")
                arborTimes.append(try Clock.seconds {
                    rows += ids ? try side.searchIDs(context, "name WORDSBEGINWITH[cd] %@", text)
                        : try side.search(context, "name WORDSBEGINWITH[cd] %@", text)
                } * 1000)
                if let fts { sqliteTimes.append(try Clock.seconds { _ = ids ? try fts.wordSearchIDs(query) : try fts.wordSearch(query) } * 1000) }
            }
        }
        print(String(format: "arbor median %.3f ms, %d rows in all", Clock.median(arborTimes), rows))
        if fts != nil {
            let ratio = Clock.median(sqliteTimes) / Clock.median(arborTimes)
            print(String(format: "FTS5 median %.3f ms: ratio %.2f×", Clock.median(sqliteTimes), ratio))
        }
    }
}
