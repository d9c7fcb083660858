@testable import ArborTransit
import Testing

@Suite("GTFS CSV: the quirks real feeds have")
struct CSVParserTests {
    static func records(_ text: [UInt8], chunk: Int = .max) throws -> [(fields: [String], line: Int)] {
        var parser = CSVParser(file: "test.txt")
        var result: [(fields: [String], line: Int)] = []
        let emit: (CSVParser.Record) -> Void = { record in
            result.append((record.fields.map { String(decoding: $0, as: UTF8.self) }, record.line))
        }
        var start = 0
        while start < text.count {
            let end = min(text.count, start + chunk)
            try parser.feed(text[start..<end], emit: emit)
            start = end
        }
        try parser.finish(emit: emit)
        return result
    }

    @Test("byte-order mark, mixed line ends, quotes, doubled quotes, blank lines, no final newline — in any chunking")
    func quirks() throws {
        let text = Array("\u{FEFF}stop_id, stop_name ,stop_lat\r\n1,\"Alexanderplatz, Berlin\",52.5\n\n2,\"Der \"\"Tor\"\"\",52.4\r3,\"Zwei\r\nZeilen\",1\n4,Görlitzer,52".utf8)
        for chunk in [1, 2, 3, 7, 1000] {
            let rows = try Self.records(text, chunk: chunk)
            #expect(rows.map(\.fields) == [
                ["stop_id", " stop_name ", "stop_lat"], ["1", "Alexanderplatz, Berlin", "52.5"], ["2", "Der \"Tor\"", "52.4"],
                ["3", "Zwei\rZeilen", "1"], ["4", "Görlitzer", "52"],
            ], "chunk \(chunk)")
            #expect(rows.map(\.line) == [1, 2, 4, 5, 7], "chunk \(chunk)")
        }
    }

    @Test("an unclosed quote is an error naming the line it starts on")
    func unterminatedQuote() {
        #expect(throws: GTFSError(file: "test.txt", line: 2, .unterminatedQuote)) {
            _ = try Self.records(Array("a,b\n1,\"open\n2,3\n".utf8))
        }
    }

    @Test("a lone partial byte-order mark is data")
    func partialBOM() throws {
        #expect(try Self.records([0xEF, 0x41]).map(\.fields) == [[String(decoding: [0xEF, 0x41], as: UTF8.self)]])
    }

    @Test("GTFS times: hours past 24, one-digit hours; malformed ones rejected")
    func times() {
        #expect(GTFSRows.seconds("08:00:00") == 28_800)
        #expect(GTFSRows.seconds("8:00:00") == 28_800)
        #expect(GTFSRows.seconds("25:10:00") == 90_600)
        for bad in ["", "8:0:00", "08:60:00", "08:00:61", "08-00-00", "+8:00:00", "08:00", "٠٨:00:00", "1000:00:00"] {
            #expect(GTFSRows.seconds(bad) == nil, "\(bad)")
        }
    }

    @Test("identifiers: numbers kept, others and duplicates numbered after every number in use, in file order")
    func identifiers() {
        #expect(GTFSImporter.assignIdentifiers(["10", "1025a", "3", "2900p6", "007"], used: [3]) == [10, 11, 12, 13, 7])
        #expect(GTFSImporter.assignIdentifiers(["a", "b"], used: []) == [1, 2])
    }

    @Test("property: any records, written with quoting where needed and random line ends, parse back exactly")
    func roundTrip() throws {
        var random = SplitMix64(seed: 11)
        let alphabet: [String] = ["a", "Z", "ö", "ß", " ", ",", "\"", "\n", "\r\n", "1", "😀", ";"]
        for _ in 0..<300 {
            let records: [[String]] = (0..<(1 + Int(random.next() % 5))).map { _ in
                (0..<(1 + Int(random.next() % 4))).map { _ in
                    (0..<Int(random.next() % 6)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
                }
            }
            var text = random.next() % 2 == 0 ? "\u{FEFF}" : ""
            for (index, record) in records.enumerated() {
                text += record.map { field in
                    // A record of one empty field would be a blank line: quote it.
                    let needsQuotes = field.unicodeScalars.contains(where: { ",\"\n\r".unicodeScalars.contains($0) }) || (record.count == 1 && field.isEmpty)
                    return needsQuotes ? "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : field
                }.joined(separator: ",")
                if index < records.count - 1 || random.next() % 2 == 0 { text += ["\n", "\r\n", "\r"][Int(random.next() % 3)] }
            }
            let chunk = 1 + Int(random.next() % 9)
            // Inside quotes a CRLF reads as one line break (CR): compare with that normalization.
            let expected = records.map { $0.map { $0.replacingOccurrences(of: "\r\n", with: "\r") } }
            #expect(try Self.records(Array(text.utf8), chunk: chunk).map(\.fields) == expected, "\(text.debugDescription)")
        }
    }
}
