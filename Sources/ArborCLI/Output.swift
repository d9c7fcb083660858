import ArborEngine
import Foundation

/// Prints a line to standard error.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// Encodes a value as pretty, key-sorted JSON text.
func jsonText<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

/// A key for display: its tuple components when it decodes as a tuple key, else hex.
func displayKey(_ bytes: [UInt8]) -> String {
    if let values = try? TupleKey.decodeComponents(bytes), !values.isEmpty {
        return "(" + values.map(displayComponent).joined(separator: ", ") + ")"
    }
    // Plain text keys (tree names in the catalog, for instance) read better as text.
    if let text = String(validating: bytes, as: UTF8.self), !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
        return "'" + text + "'"
    }
    return displayBytes(bytes)
}

func displayComponent(_ component: TupleComponent) -> String {
    let text: String
    switch component.value {
    case .null: text = "null"
    case .bool(let v): text = "\(v)"
    case .int8(let v): text = "\(v)"
    case .int16(let v): text = "\(v)"
    case .int32(let v): text = "\(v)"
    case .int64(let v), .integer(let v): text = "\(v)"
    case .uint8(let v): text = "\(v)"
    case .uint16(let v): text = "\(v)"
    case .uint32(let v): text = "\(v)"
    case .uint64(let v): text = "\(v)"
    case .float(let v): text = "\(v)"
    case .double(let v): text = "\(v)"
    case .date(let v): text = "date(\(v))"
    case .string(let v): text = "\"" + v.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    case .bytes(let v): text = displayBytes(v)
    case .uuid(let v): text = "uuid(" + v.map { String(format: "%02x", $0) }.joined() + ")"
    }
    return component.descending ? text + " desc" : text
}

/// Bytes as `x'0a1b…'`, shortened past 64 bytes.
func displayBytes(_ bytes: [UInt8]) -> String {
    let shown = bytes.prefix(64).map { String(format: "%02x", $0) }.joined()
    return "x'" + shown + (bytes.count > 64 ? "…' (\(bytes.count) bytes)" : "'")
}

/// A classic hex dump: offset, 16 bytes, printable characters.
func hexDump(_ bytes: [UInt8]) -> String {
    var lines: [String] = []
    for start in stride(from: 0, to: bytes.count, by: 16) {
        let row = bytes[start..<min(start + 16, bytes.count)]
        let hex = row.map { String(format: "%02x", $0) }.joined(separator: " ")
        let text = String(row.map { $0 >= 0x20 && $0 < 0x7F ? Character(UnicodeScalar($0)) : "." })
        lines.append(String(format: "%06x  ", start) + hex.padding(toLength: 48, withPad: " ", startingAt: 0) + " " + text)
    }
    return lines.joined(separator: "\n")
}

/// Byte counts with a binary unit.
func displaySize(_ bytes: UInt64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
