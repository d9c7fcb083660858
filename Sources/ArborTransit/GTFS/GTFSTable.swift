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
        guard record.fields.count == fieldCount else {
            throw GTFSError(file: file, line: record.line, .fieldCount(expected: fieldCount, found: record.fields.count))
        }
        return try record.fields.map { raw in
            let trimmed = Self.trimmed(raw)
            // Decoding repairs invalid UTF-8: the text differs from the bytes exactly when they were invalid.
            let text = String(decoding: trimmed, as: UTF8.self)
            guard text.utf8.elementsEqual(trimmed) else { throw GTFSError(file: file, line: record.line, .invalidUTF8) }
            return text
        }
    }

    /// `bytes` without leading and trailing spaces and tabs.
    static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }
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
            let fields = try table.fields(of: record)
            let line = record.line
            func time(_ index: Int?, _ column: String) throws -> Int32? {
                guard let index, !fields[index].isEmpty else { return nil }
                guard let seconds = GTFSRows.seconds(fields[index]) else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: column, value: fields[index], expected: "a time H:MM:SS"))
                }
                return seconds
            }
            func code(_ index: Int?, _ column: String) throws -> Int16 {
                guard let index, !fields[index].isEmpty else { return 0 }
                guard let value = Int16(fields[index]), (0...3).contains(value) else {
                    throw GTFSError(file: table.file, line: line, .invalidValue(column: column, value: fields[index], expected: "0 to 3"))
                }
                return value
            }
            let stopID = fields[stop]
            guard !stopID.isEmpty else { throw GTFSError(file: table.file, line: line, .emptyValue(column: "stop_id")) }
            var arrivalTime = try time(arrival, "arrival_time"), departureTime = try time(departure, "departure_time")
            // A stop with one time given has the same arrival and departure.
            if arrivalTime == nil { arrivalTime = departureTime }
            if departureTime == nil { departureTime = arrivalTime }
            return GTFSStopTime(stopID: stopID, arrival: arrivalTime, departure: departureTime,
                                pickupType: try code(pickup, "pickup_type"), dropOffType: try code(dropOff, "drop_off_type"), line: line)
        }
    }

    /// Seconds of a GTFS time `H:MM:SS` or `HH:MM:SS` (hours may pass 24, up to 999); nil when malformed.
    public static func seconds(_ text: String) -> Int32? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, (1...3).contains(parts[0].count), parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hours = Int32(parts[0]), let minutes = Int32(parts[1]), let seconds = Int32(parts[2]),
              minutes < 60, seconds < 60 else { return nil }
        return hours * 3600 + minutes * 60 + seconds
    }
}
