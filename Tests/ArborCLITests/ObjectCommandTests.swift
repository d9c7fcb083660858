@testable import ArborCLI
import Arbor
import ArborTransit
import ArgumentParser
import Foundation
import Testing

/// schema, dump, query and import on a small transit store, with golden outputs, and every
/// command on damaged files.
@Suite("arbor schema, dump, query, import gtfs")
struct ObjectCommandTests {
    final class TransitStore {
        let directory = NSTemporaryDirectory() + "arbor-cli-objects-" + UUID().uuidString
        var path: String { directory + "/transit.arbor" }

        init() throws {
            let feed = URL(fileURLWithPath: directory + "/feed")
            try FileManager.default.createDirectory(at: feed, withIntermediateDirectories: true)
            try Data("stop_id,stop_name,stop_lat,stop_lon\n10,\"U Görlitzer Bahnhof\",52.499,13.428\n11,\"Kottbusser Tor, Nord\",52.4995,13.418\nx7,Hermannplatz,52.487,13.424\n".utf8)
                .write(to: feed.appendingPathComponent("stops.txt"))
            try Data("trip_id,arrival_time,departure_time,stop_id\nT,08:00:00,08:00:30,10\nT,08:03:00,08:03:00,11\nT,25:10:00,25:10:00,x7\n".utf8)
                .write(to: feed.appendingPathComponent("stop_times.txt"))
            var command = try ArborTool.parseAsRoot(["import", "gtfs", feed.path, path])
            try command.run()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func access() throws -> ObjectStoreAccess {
            try ObjectStoreAccess.open(try StoreOptions.parse([path]))
        }
    }

    static func collect(_ body: (@escaping (String) -> Void) throws -> Void) rethrows -> String {
        final class Box: @unchecked Sendable { var text = "" }
        let box = Box()
        try body { box.text += $0 }
        return box.text
    }

    @Test("schema, golden")
    func schema() throws {
        let store = try TransitStore()
        #expect(SchemaCommand.render(try store.access()) == """
            entity Stop — 3 objects
              identifier: int64 (indexed)
              stopID: string
              name: string = ""
              normalizedName: string = "" (indexed)
              latitude: double?
              longitude: double?
              locationType: int16 = 0
              timetableDigest: int64?
              stopTimes -> [StopTime] ordered, inverse stop, delete rule cascade
              index by_longitude_latitude (longitude, latitude)
              index (folded) folded_name (name)
              words index words_name (name)
              substrings index substrings_name (name)
              unique unique_stopID (stopID)
            entity StopTime — 3 objects
              arrivalTime: date?
              departureTime: date?
              pickupType: int16 = 0
              dropOffType: int16 = 0
              stop -> Stop, inverse stopTimes, delete rule nullify
              index by_stop_departureTime (stop, departureTime)

            """)
    }

    @Test("dump as a table, CSV and JSON, golden")
    func dump() throws {
        let store = try TransitStore()
        let access = try store.access()
        let options = try StoreOptions.parse([store.path])
        let table = try Self.collect { try DumpCommand.dump(access, entity: "Stop", predicate: nil, limit: nil, format: .table, options: options, write: $0) }
        #expect(table == """
            id      identifier  stopID  name                  normalizedName        latitude  longitude  locationType  timetableDigest
            ------  ----------  ------  --------------------  --------------------  --------  ---------  ------------  --------------------
            Stop/1  10          10      U Görlitzer Bahnhof   u gorlitzer bahnhof   52.499    13.428     0             5651399956874005035
            Stop/2  11          11      Kottbusser Tor, Nord  kottbusser tor, nord  52.4995   13.418     0             -8876580138425425411
            Stop/3  12          x7      Hermannplatz          hermannplatz          52.487    13.424     0             -7742255095724359503

            """)
        let csv = try Self.collect {
            try DumpCommand.dump(access, entity: "StopTime", predicate: "departureTime > CAST(-978278400, \"NSDate\")", limit: 5, format: .csv, options: options, write: $0)
        }
        #expect(csv == """
            id,arrivalTime,departureTime,pickupType,dropOffType,stop
            StopTime/1,1970-01-01T08:00:00Z,1970-01-01T08:00:30Z,0,0,Stop/1
            StopTime/2,1970-01-01T08:03:00Z,1970-01-01T08:03:00Z,0,0,Stop/2
            StopTime/3,1970-01-02T01:10:00Z,1970-01-02T01:10:00Z,0,0,Stop/3

            """)
        let json = try Self.collect { try DumpCommand.dump(access, entity: "Stop", predicate: "stopID == 'x7'", limit: nil, format: .json, options: options, write: $0) }
        #expect(json == """
            [
              {"id": "Stop/3", "identifier": 12, "stopID": "x7", "name": "Hermannplatz", "normalizedName": "hermannplatz", "latitude": 52.487, "longitude": 13.424, "locationType": 0, "timetableDigest": -7742255095724359503}
            ]

            """)
        // Every entity, as one JSON object that parses.
        let all = try Self.collect { try DumpCommand.dump(access, entity: nil, predicate: nil, limit: 1, format: .json, options: options, write: $0) }
        let parsed = try JSONSerialization.jsonObject(with: Data(all.utf8)) as? [String: [[String: Any]]]
        #expect(parsed?.keys.sorted() == ["Stop", "StopTime"])
        #expect(parsed?["StopTime"]?.first?["stop"] as? String == "Stop/1")
    }

    @Test("query prints the objects, the plan and the counts; --explain the plan alone")
    func query() throws {
        let store = try TransitStore()
        let access = try store.access()
        let options = try StoreOptions.parse([store.path])
        let text = try Self.collect {
            try QueryCommand.query(access, entity: "Stop", predicate: "name BEGINSWITH[cd] 'u gorli' OR name BEGINSWITH[cd] 'herm'", sort: ["name:desc"],
                                   limit: nil, explain: false, options: options, write: $0)
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.prefix(4).map { $0.split(separator: " ", maxSplits: 1).first.map(String.init) ?? "" } == ["id", "------", "Stop/1", "Stop/3"])
        #expect(lines[4] == "plan: MULTI-INDEX OR: SEARCH index.Stop.folded_name (name BEGINSWITH[cd] \"u gorli\") ∪ SEARCH index.Stop.folded_name (name BEGINSWITH[cd] \"herm\")")
        #expect(lines[5] == "examined 2, matched 2")
        #expect(lines[6].hasPrefix("2 objects in ") && lines[6].hasSuffix(" ms"))
        let explained = try Self.collect {
            try QueryCommand.query(access, entity: "StopTime", predicate: "stop.stopID == '11'", sort: [], limit: nil, explain: true, options: options, write: $0)
        }
        // Through the stops' unique stopID index, then their stop times by foreign key.
        #expect(explained == "plan: SEARCH index.Stop.unique_stopID (stopID == \"11\") THEN fk.StopTime.stop\nexamined 3, matched 1\n")
    }

    @Test("query --properties prints values read from the stored columns; the plan ends with that step")
    func queryProperties() throws {
        let store = try TransitStore()
        let access = try store.access()
        let options = try StoreOptions.parse([store.path])
        let text = try Self.collect {
            try QueryCommand.query(access, entity: "Stop", predicate: "stopID == 'x7'", sort: [], limit: nil, properties: ["name", "latitude"],
                                   explain: false, options: options, write: $0)
        }
        let lines = text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(Array(lines.prefix(3)) == ["name latitude", "------------ --------", "Hermannplatz 52.487"])
        #expect(lines[4] == "THEN DICTIONARIES (name, latitude) FROM STORED COLUMNS IN PLACE, NO OBJECTS")
        #expect(lines[5] == "examined 1, matched 1")
        #expect(lines[6].hasPrefix("1 row in "))
        let explained = try Self.collect {
            try QueryCommand.query(access, entity: "StopTime", predicate: "stop.stopID == '11'", sort: [], limit: nil, properties: ["stop", "departureTime"],
                                   explain: true, options: options, write: $0)
        }
        #expect(explained == "plan: SEARCH index.Stop.unique_stopID (stopID == \"11\") THEN fk.StopTime.stop\n"
            + "THEN DICTIONARIES (stop, departureTime) FROM STORED COLUMNS IN PLACE, NO OBJECTS\nexamined 3, matched 1\n")
    }

    @Test("a malformed predicate, an unknown key, entity, sort key or property is a usage error (exit 64), not a crash",
          arguments: [["Stop", "--where", "name ==="], ["Stop", "--where", "zone == 1"], ["Nope"], ["Stop", "--sort", ":desc"], ["Stop", "--sort", "name:sideways"],
                      ["Stop", "--properties", "height"], ["Stop", "--properties", ""]])
    func usageErrors(arguments: [String]) throws {
        let store = try TransitStore()
        var command = try ArborTool.parseAsRoot(["query", store.path] + arguments)
        #expect(throws: ExitCode(64)) { try command.run() }
    }

    @Test("every command gives one clear error on a missing, truncated, zeroed, foreign or flipped file",
          arguments: ["info", "pages", "check", "tree", "page", "schema", "dump", "query"])
    func damagedFiles(command name: String) throws {
        let store = try TransitStore()
        let image = try Data(contentsOf: URL(fileURLWithPath: store.path))
        var flipped = image
        // A byte in the middle of the file: a leaf of some tree (its checksum then fails).
        flipped[image.count / 2] ^= 0x5A
        let cases: [(String, Data?, Set<Int32>)] = [
            ("missing", nil, [2]),
            ("truncated", image.prefix(image.count / 3), [2]),
            ("zeroed metas", Data(count: 8192) + image.dropFirst(8192), [2]),
            ("foreign", Data(String(repeating: "SQLite format 3\u{0}", count: 600).utf8), [2]),
            // Commands that never read the damaged page succeed; check reports it (1).
            ("flipped", flipped, [0, 1, 2]),
        ]
        for (label, contents, codes) in cases {
            let path = store.directory + "/\(label).arbor"
            if let contents { try contents.write(to: URL(fileURLWithPath: path)) }
            var arguments = [name, path]
            if name == "tree" { arguments.append("rows.Stop") }
            if name == "page" { arguments.append("2") }
            if name == "query" { arguments += ["StopTime", "--where", "pickupType == 0"] }
            var command = try ArborTool.parseAsRoot(arguments)
            var code: Int32 = 0
            do { try command.run() } catch let exit as ExitCode { code = exit.rawValue }
            #expect(codes.contains(code), "\(name) on a \(label) file exited \(code)")
            if label == "flipped" && name == "check" { #expect(code == 1) }
        }
    }

    @Test("import gtfs: a bad row exits 3 and leaves no output")
    func importFailure() throws {
        let directory = NSTemporaryDirectory() + "arbor-cli-import-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("stop_id\n1\n".utf8).write(to: URL(fileURLWithPath: directory + "/stops.txt"))
        try Data("stop_id,departure_time\n1,08:00:00\n2,08:00:00\n".utf8).write(to: URL(fileURLWithPath: directory + "/stop_times.txt"))
        var command = try ArborTool.parseAsRoot(["import", "gtfs", directory, directory + "/out.arbor"])
        #expect(throws: ExitCode(3)) { try command.run() }
        #expect(!FileManager.default.fileExists(atPath: directory + "/out.arbor"))
    }

    @Test("demo: a small run answers every question and leaves a sound store")
    func demo() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory() + "arbor-cli-demo-" + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try DemoCommand.parse(["--stops", "300", "--stop-times", "6000", "--json"])
        let recorder = DemoCommand.Recorder(quiet: true)
        try command.runDemo(stops: 300, stopTimes: 6_000, directory: directory, recorder)
        let report = recorder.report
        #expect(report.stops == 300 && report.stopTimes == 6_000)
        #expect(report.steps.map(\.question.first) == ["3", "4", "5", "6", "7", "8", "9"])
        #expect(report.steps[6].answer >= 100 && report.steps[6].answer <= 300)  // sections by stop name
        #expect(report.steps[2].answer >= 1)  // U Görlitzer Bahnhof
        // The free-text questions go through the words and substrings indexes.
        #expect(report.steps[3].answer >= 1 && report.steps[3].plans.first?.hasPrefix("SEARCH index.Stop.words_name") == true)
        #expect(report.steps[4].plans.first?.hasPrefix("SEARCH index.Stop.substrings_name") == true)
        #expect(report.steps[5].answer == 6_000)
        #expect(report.steps[1].answer <= report.steps[0].answer)
        #expect(report.sound && report.problems == 0 && report.fileBytes > 0 && report.shippedBytes > 0)
    }
}

@Suite("arbor info on a migrated store")
struct InfoMigrationTests {
    @Test("info lists the store's migrations")
    func migrationsListed() throws {
        let directory = NSTemporaryDirectory() + "arbor-cli-migration-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = URL(fileURLWithPath: directory + "/store.arbor")
        _ = try PersistentStore(url: url, model: try ManagedObjectModel(entities: [
            EntityDescription("Note", attributes: [AttributeDescription("text", .string)]),
        ]))
        let options = try StoreOptions.parse([url.path])
        #expect(!InfoCommand.render(try InfoCommand.report(try options.open())).contains("migrations"))
        _ = try PersistentStore(url: url, model: try ManagedObjectModel(entities: [
            EntityDescription("Note", attributes: [AttributeDescription("body", .string, renamingIdentifier: "text")]),
        ]))
        let text = InfoCommand.render(try InfoCommand.report(try options.open()))
        #expect(text.contains("migrations       1"))
        #expect(text.contains("Note.text renamed to body"))
    }
}
