import Foundation

/// One GTFS file read row by row: the header maps column names (trimmed, any order, extra
/// columns ignored) to positions; each row is checked to have the header's field count.
public struct GTFSTable {
    public let file: String
    public let columns: [String: Int]
    public let fieldCount: Int

    /// Builds the column map from a header record.
    /// - Throws: `GTFSError.invalidUTF8` for a header that is not UTF-8.
    public init(file: String, header: CSVParser.Record) throws {
        self.file = file
        var columns: [String: Int] = [:]
        for (index, raw) in header.fields.enumerated() {
            guard let name = String(validating: raw, as: UTF8.self) else { throw GTFSError(file: file, line: header.line, .invalidUTF8) }
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            if columns[trimmed] == nil { columns[trimmed] = index }
        }
        self.columns = columns
        fieldCount = header.fields.count
    }

    /// The position of a column the file must have.
    public func require(_ name: String) throws -> Int {
        guard let index = columns[name] else { throw GTFSError(file: file, line: 1, .missingColumn(name)) }
        return index
    }

    /// A row's fields as trimmed strings.
    /// - Throws: `fieldCount` when the row has another number of fields than the header, `invalidUTF8`.
    public func fields(of record: CSVParser.Record) throws -> [String] {
        try fields(of: CSVParser.RawRecord(record))
    }

    /// A row's fields as trimmed strings.
    /// - Throws: `fieldCount` when the row has another number of fields than the header, `invalidUTF8`.
    public func fields(of record: CSVParser.RawRecord) throws -> [String] {
        try checkCount(record)
        return try (0..<record.count).map { try text(record, $0) }
    }

    func checkCount(_ record: CSVParser.RawRecord) throws {
        guard record.count == fieldCount else {
            throw GTFSError(file: file, line: record.line, .fieldCount(expected: fieldCount, found: record.count))
        }
    }

    /// Field `index` of `record`, trimmed, as text.
    /// - Throws: `invalidUTF8`.
    func text(_ record: CSVParser.RawRecord, _ index: Int) throws -> String {
        let trimmed = Self.trimmed(record.field(index))
        // Decoding repairs invalid UTF-8: the text differs from the bytes exactly when they were invalid.
        let text = String(decoding: trimmed, as: UTF8.self)
        guard text.utf8.elementsEqual(trimmed) else { throw GTFSError(file: file, line: record.line, .invalidUTF8) }
        return text
    }

    /// `bytes` without leading and trailing spaces and tabs.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> { trimmed(bytes[...]) }
}

/// A row of `stops.txt`.
public struct GTFSStop: Equatable, Sendable {
    public var stopID: String
    public var name: String
    public var latitude: Double?
    public var longitude: Double?
    public var locationType: Int16
    public var line: Int
}

/// A row of `stop_times.txt`.
public struct GTFSStopTime: Equatable, Sendable {
    public var stopID: String
    /// Seconds after midnight of the service day (past 86,400 after midnight); nil when empty.
    public var arrival: Int32?
    public var departure: Int32?
    public var pickupType: Int16
    public var dropOffType: Int16
    public var line: Int
}

/// Typed readers of the two files the transit store needs.
public enum GTFSRows {
    /// Reads `stops.txt` rows from a table's records.
    public struct Stops {
        let table: GTFSTable
        let id: Int, name: Int?, latitude: Int?, longitude: Int?, locationType: Int?

        public init(table: GTFSTable) throws {
            self.table = table
            id = try table.require("stop_id")
            name = table.columns["stop_name"]
            latitude = table.columns["stop_lat"]
            longitude = table.columns["stop_lon"]
            locationType = table.columns["location_type"]
        }

        public func parse(_ record: CSVParser.Record) throws -> GTFSStop {
            let fields = try table.fields(of: record)
            let line = record.line
            let stopID = fields[id]
            guard !stopID.isEmpty else { throw GTFSError(file: table.file, line: line, .emptyValue(column: "stop_id")) }
            func coordinate(_ index: Int?, _ column: String, limit: Double) throws -> Double? {
                guard let index, !fields[index].isEmpty else { return nil }
                guard let value = Double(fields[index]), value.isFinite, abs(value) <= limit else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: column, value: fields[index], expected: "a coordinate within ±\(Int(limit))°"))
                }
                return value
            }
            var type: Int16 = 0
            if let locationType, !fields[locationType].isEmpty {
                guard let value = Int16(fields[locationType]), (0...4).contains(value) else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: "location_type", value: fields[locationType], expected: "0 to 4"))
                }
                type = value
            }
            return GTFSStop(stopID: stopID, name: name.map { fields[$0] } ?? "",
                            latitude: try coordinate(latitude, "stop_lat", limit: 90),
                            longitude: try coordinate(longitude, "stop_lon", limit: 180), locationType: type, line: line)
        }
    }

    /// Reads `stop_times.txt` rows from a table's records.
    public struct StopTimes {
        let table: GTFSTable
        let stop: Int, arrival: Int?, departure: Int?, pickup: Int?, dropOff: Int?

        public init(table: GTFSTable) throws {
            self.table = table
            stop = try table.require("stop_id")
            arrival = table.columns["arrival_time"]
            departure = table.columns["departure_time"]
            pickup = table.columns["pickup_type"]
            dropOff = table.columns["drop_off_type"]
        }

        public func parse(_ record: CSVParser.Record) throws -> GTFSStopTime {
            let raw = CSVParser.RawRecord(record)
            let (_, time) = try parse(raw)
            func optional(_ seconds: Int32) -> Int32? { seconds == PackedStopTime.none ? nil : seconds }
            return GTFSStopTime(stopID: try table.text(raw, stop), arrival: optional(time.arrival), departure: optional(time.departure),
                                pickupType: Int16(time.pickup), dropOffType: Int16(time.dropOff), line: record.line)
        }

        /// The row's stop_id (trimmed bytes) and its values, without making a string per
        /// field: an import reads millions of rows.
        /// - Throws: `GTFSError` naming the line and column of a malformed value.
        func parse(_ record: CSVParser.RawRecord) throws -> (stopID: ArraySlice<UInt8>, time: PackedStopTime) {
            try table.checkCount(record)
            let line = record.line
            func time(_ index: Int?, _ column: String) throws -> Int32? {
                guard let index else { return nil }
                let bytes = GTFSTable.trimmed(record.field(index))
                guard !bytes.isEmpty else { return nil }
                guard let seconds = GTFSRows.seconds(bytes) else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: column, value: try table.text(record, index), expected: "a time H:MM:SS"))
                }
                return seconds
            }
            func code(_ index: Int?, _ column: String) throws -> UInt8 {
                guard let index else { return 0 }
                let bytes = GTFSTable.trimmed(record.field(index))
                guard !bytes.isEmpty else { return 0 }
                guard bytes.count == 1, let digit = bytes.first, (0x30...0x33).contains(digit) else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: column, value: try table.text(record, index), expected: "0 to 3"))
                }
                return digit - 0x30
            }
            let stopID = GTFSTable.trimmed(record.field(stop))
            guard !stopID.isEmpty else { throw GTFSError(file: table.file, line: line, .emptyValue(column: "stop_id")) }
            var arrivalTime = try time(arrival, "arrival_time"), departureTime = try time(departure, "departure_time")
            // A stop with one time given has the same arrival and departure.
            if arrivalTime == nil { arrivalTime = departureTime }
            if departureTime == nil { departureTime = arrivalTime }
            return (stopID, PackedStopTime(stop: 0, arrival: arrivalTime ?? PackedStopTime.none, departure: departureTime ?? PackedStopTime.none,
                                           pickup: try code(pickup, "pickup_type"), dropOff: try code(dropOff, "drop_off_type")))
        }
    }

    /// Seconds of a GTFS time `H:MM:SS` or `HH:MM:SS` (hours may pass 24, up to 999); nil when malformed.
    public static func seconds(_ text: String) -> Int32? { seconds(Array(text.utf8)[...]) }

    /// `seconds(_:)` of the time's UTF-8 bytes: one to three digits of hours, then `:MM:SS`.
    static func seconds(_ bytes: ArraySlice<UInt8>) -> Int32? {
        let hourDigits = bytes.count - 6
        guard (1...3).contains(hourDigits) else { return nil }
        let start = bytes.startIndex
        func digit(_ offset: Int) -> Int32? {
            let byte = bytes[start + offset]
            return (0x30...0x39).contains(byte) ? Int32(byte - 0x30) : nil
        }
        var hours: Int32 = 0
        for offset in 0..<hourDigits {
            guard let value = digit(offset) else { return nil }
            hours = hours * 10 + value
        }
        let colon = UInt8(ascii: ":")
        guard bytes[start + hourDigits] == colon, bytes[start + hourDigits + 3] == colon,
              let m1 = digit(hourDigits + 1), let m0 = digit(hourDigits + 2), let s1 = digit(hourDigits + 4), let s0 = digit(hourDigits + 5),
              m1 < 6, s1 < 6 else { return nil }
        return hours * 3600 + (m1 * 10 + m0) * 60 + s1 * 10 + s0
    }
}

/// One stop time as an import keeps it until it is stored: 16 bytes, so that a feed of tens
/// of millions of rows can be held and grouped by stop.
struct PackedStopTime {
    /// No time given.
    static let none = Int32.min

    /// The stop's position among the feed's stops.
    var stop: Int32
    /// Seconds after midnight of the service day, or `none`.
    var arrival: Int32
    var departure: Int32
    var pickup: UInt8
    var dropOff: UInt8
}
