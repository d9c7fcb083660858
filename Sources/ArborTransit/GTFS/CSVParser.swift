/// A streaming parser for the CSV dialect of GTFS (RFC 4180 as real feeds write it): a UTF-8
/// byte-order mark, CRLF, LF or CR line ends (mixed), quoted fields with commas, line breaks and
/// doubled quotes, blank lines, and a missing final newline. Bytes arrive in chunks of any size;
/// each record is passed on with the line it starts on.
///
/// Memory is bounded by the longest record; time is linear in the input.
public struct CSVParser {
    /// Raw fields of one record (UTF-8 not yet validated) and its first line.
    public struct Record {
        public var fields: [[UInt8]]
        public var line: Int
    }

    private enum State { case fieldStart, unquoted, quoted, quoteInQuoted }

    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fields: [[UInt8]] = []
    private var line = 1
    private var recordLine = 1
    private var pendingCR = false
    private var atFileStart = true
    private var bomMatched = 0
    public let file: String

    public init(file: String) {
        self.file = file
    }

    /// Parses `bytes`, calling `emit` for each complete record.
    /// - Throws: whatever `emit` throws.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes, emit: (Record) throws -> Void) throws where Bytes.Element == UInt8 {
        for byte in bytes {
            if atFileStart {
                // Skip a UTF-8 byte-order mark (EF BB BF) at the very start.
                let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
                if byte == bom[bomMatched] {
                    bomMatched += 1
                    if bomMatched == 3 { atFileStart = false }
                    continue
                }
                atFileStart = false
                if bomMatched > 0 {
                    // Not a BOM after all: its bytes are data.
                    let partial = bom.prefix(bomMatched)
                    bomMatched = 0
                    for earlier in partial { try consume(earlier, emit) }
                }
            }
            try consume(byte, emit)
        }
    }

    /// Ends the input: emits the last record when the file lacks a final newline.
    /// - Throws: `GTFSError.unterminatedQuote` when a quoted field is still open.
    public mutating func finish(emit: (Record) throws -> Void) throws {
        if atFileStart && bomMatched > 0 {
            atFileStart = false
            for earlier in [UInt8]([0xEF, 0xBB, 0xBF]).prefix(bomMatched) { try consume(earlier, emit) }
        }
        if state == .quoted { throw GTFSError(file: file, line: recordLine, .unterminatedQuote) }
        try endRecord(emit)
    }

    private mutating func consume(_ byte: UInt8, _ emit: (Record) throws -> Void) throws {
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr: UInt8 = 0x0D, lf: UInt8 = 0x0A
        if pendingCR {
            pendingCR = false
            if byte == lf { return }  // CRLF: the CR ended the line already
        }
        switch state {
        case .quoted:
            if byte == quote { state = .quoteInQuoted } else {
                if byte == lf || (byte == cr) { line += 1 }
                if byte == cr { pendingCR = true }
                field.append(byte)
            }
            return
        case .quoteInQuoted:
            if byte == quote {
                field.append(quote)  // a doubled quote
                state = .quoted
                return
            }
            state = .unquoted  // the closing quote; what follows up to the comma is kept as is
        case .fieldStart, .unquoted:
            break
        }
        switch byte {
        case comma:
            fields.append(field)
            field.removeAll(keepingCapacity: true)
            state = .fieldStart
        case lf, cr:
            if byte == cr { pendingCR = true }
            try endRecord(emit)
            line += 1
            recordLine = line
        case quote where state == .fieldStart:
            state = .quoted
        default:
            field.append(byte)
            state = .unquoted
        }
    }

    private mutating func endRecord(_ emit: (Record) throws -> Void) throws {
        defer {
            fields.removeAll(keepingCapacity: true)
            field.removeAll(keepingCapacity: true)
            state = .fieldStart
        }
        // A blank line is no record.
        if fields.isEmpty && field.isEmpty && state == .fieldStart { return }
        fields.append(field)
        try emit(Record(fields: fields, line: recordLine))
    }
}
