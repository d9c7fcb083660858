import Arbor
import ArgumentParser
import Foundation

/// A store file opened read-only through its stored model: the app's classes are not needed.
struct ObjectStoreAccess {
    let schema: ModelSchema
    let model: ManagedObjectModel
    let container: PersistentContainer
    /// A private-queue context: usable from any thread (the CLI's main thread, or a test's).
    let context: ManagedObjectContext

    /// Opens `file`; any failure becomes one line on standard error and exit 2.
    static func open(_ options: StoreOptions) throws -> ObjectStoreAccess {
        do {
            let url = URL(fileURLWithPath: options.file)
            let schema = try PersistentStore.storedSchema(at: url)
            let model = try ManagedObjectModel(schema: schema)
            let container = try PersistentContainer(name: "store", model: model, url: url, options: PersistentStore.Options(readOnly: true))
            return ObjectStoreAccess(schema: schema, model: model, container: container, context: container.newBackgroundContext())
        } catch {
            throw options.fail(error)
        }
    }

    /// The columns shown for objects of `entity`: its attributes, then its to-one relationships.
    func columns(of entity: String) -> [Column] {
        let attributes = model.attributes(ofEntity: entity) ?? []
        let toOne = (model.relationships(ofEntity: entity) ?? []).filter { !$0.isToMany }
        return attributes.map { Column(name: $0.name, isRelationship: false) } + toOne.map { Column(name: $0.name, isRelationship: true) }
    }

    struct Column {
        var name: String
        var isRelationship: Bool
    }

    /// One object's values, in `columns` order, with its ID first.
    func cells(of object: ManagedObject, _ columns: [Column]) -> [Cell] {
        [.id(object.objectID)] + columns.map { column in
            if column.isRelationship { return object.objectIDs(forRelationshipNamed: column.name).first.map(Cell.id) ?? .null }
            return Cell(object.value(forKey: column.name))
        }
    }
}

/// A value as the CLI prints it.
enum Cell {
    case null
    case number(String)
    case bool(Bool)
    case text(String)
    case id(ObjectID)

    init(_ value: Any?) {
        switch value {
        case nil: self = .null
        case let v as Int64: self = .number(String(v))
        case let v as Double: self = v.isFinite ? .number(String(v)) : .text(String(v))
        case let v as Float: self = v.isFinite ? .number(String(v)) : .text(String(v))
        case let v as Bool: self = .bool(v)
        case let v as String: self = .text(v)
        case let v as Date: self = .text(Cell.dateFormatter.string(from: v))
        case let v as Data: self = .text(v.base64EncodedString())
        case let v as UUID: self = .text(v.uuidString)
        case let v as URL: self = .text(v.absoluteString)
        case let v as Decimal: self = .number(v.description)
        case let v as ObjectID: self = .id(v)
        case let v?: self = .text("\(v)")
        }
    }

    nonisolated(unsafe) static let dateFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter
    }()

    /// `Entity/primaryKey`: the last two parts of the object's URI.
    static func idText(_ id: ObjectID) -> String { "\(id.entityName)/\(id.primaryKey)" }

    var text: String {
        switch self {
        case .null: return ""
        case .number(let v), .text(let v): return v
        case .bool(let v): return v ? "true" : "false"
        case .id(let id): return Cell.idText(id)
        }
    }

    var json: String {
        switch self {
        case .null: return "null"
        case .number(let v): return v
        case .bool(let v): return v ? "true" : "false"
        case .text(let v): return Cell.jsonString(v)
        case .id(let id): return Cell.jsonString(Cell.idText(id))
        }
    }

    var csv: String {
        let value = text
        // Scalars, not Characters: "\r\n" is one Character and would slip through.
        guard value.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}

/// Prints rows as a table, CSV or a JSON array, as they come (memory stays flat; a table
/// sizes its columns from its first 100 rows).
struct RowPrinter {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, json, csv
    }

    let format: Format
    let header: [String]
    /// Receives the output text (standard output by default; tests collect it).
    let write: (String) -> Void
    private var buffered: [[Cell]] = []
    private var widths: [Int]?
    private var count = 0

    init(format: Format, header: [String], write: @escaping (String) -> Void = { Swift.print($0, terminator: "") }) {
        self.format = format
        self.header = header
        self.write = write
    }

    private func print(_ text: String, terminator: String = "\n") { write(text + terminator) }

    mutating func begin() {
        switch format {
        case .table: break
        case .csv: print(header.map { Cell.text($0).csv }.joined(separator: ","))
        case .json: print("[", terminator: "")
        }
    }

    mutating func row(_ cells: [Cell]) {
        switch format {
        case .table:
            if let widths {
                printTableRow(cells.map(\.text), widths)
            } else {
                buffered.append(cells)
                if buffered.count == 100 { flushTable() }
            }
        case .csv: print(cells.map(\.csv).joined(separator: ","))
        case .json:
            let fields = zip(header, cells).map { Cell.jsonString($0) + ": " + $1.json }.joined(separator: ", ")
            print((count == 0 ? "\n  {" : ",\n  {") + fields + "}", terminator: "")
        }
        count += 1
    }

    mutating func end() {
        switch format {
        case .table: if widths == nil { flushTable() }
        case .json: print(count == 0 ? "]" : "\n]")
        case .csv: break
        }
    }

    private mutating func flushTable() {
        var widths = header.map(\.count)
        for row in buffered {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.text.count) }
        }
        widths = widths.map { min($0, 48) }
        self.widths = widths
        printTableRow(header, widths)
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in buffered { printTableRow(row.map(\.text), widths) }
        buffered = []
    }

    /// Pads or cuts (with …) each value to its column's width; the last column is not padded.
    private func printTableRow(_ values: [String], _ widths: [Int]) {
        let cells = values.enumerated().map { index, text -> String in
            let width = index < widths.count ? widths[index] : text.count
            if text.count > width { return String(text.prefix(max(width - 1, 0))) + "…" }
            return index == values.count - 1 ? text : text + String(repeating: " ", count: width - text.count)
        }
        print(cells.joined(separator: "  "))
    }
}
