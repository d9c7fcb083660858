/// A problem in a GTFS feed, with the file and line it is on.
public struct GTFSError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case missingFile
        case unreadable(String)
        case missingColumn(String)
        case fieldCount(expected: Int, found: Int)
        case unterminatedQuote
        case invalidUTF8
        case emptyValue(column: String)
        case invalidValue(column: String, value: String, expected: String)
        case duplicateStop(String)
        case unknownStop(String)
        case stopAlreadyInStore(String)
    }

    /// The file name (`stops.txt`).
    public var file: String
    /// The 1-based line the row starts on; 0 for the file as a whole.
    public var line: Int
    public var kind: Kind

    public init(file: String, line: Int, _ kind: Kind) {
        self.file = file
        self.line = line
        self.kind = kind
    }

    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        switch kind {
        case .missingFile: return "\(place): no such file in the feed"
        case .unreadable(let reason): return "\(place): cannot be read: \(reason)"
        case .missingColumn(let name): return "\(place): the header has no column \(name)"
        case .fieldCount(let expected, let found): return "\(place): \(found) fields, the header has \(expected)"
        case .unterminatedQuote: return "\(place): a quoted field is not closed before the end of the file"
        case .invalidUTF8: return "\(place): the row is not valid UTF-8"
        case .emptyValue(let column): return "\(place): \(column) is empty"
        case .invalidValue(let column, let value, let expected): return "\(place): \(column) \"\(value)\" is not \(expected)"
        case .duplicateStop(let id): return "\(place): stop_id \"\(id)\" appears twice"
        case .unknownStop(let id): return "\(place): stop_id \"\(id)\" is not in stops.txt"
        case .stopAlreadyInStore(let id): return "\(place): stop_id \"\(id)\" is already in the store (import a new edition with --update, another feed with --prefix)"
        }
    }
}
