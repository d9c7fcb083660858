/// A streaming parser for the CSV dialect of GTFS (RFC 4180 as real feeds write it): a UTF-8
/// byte-order mark, CRLF, LF or CR line ends (mixed), quoted fields with commas, line breaks and
/// doubled quotes, blank lines, and a missing final newline. Bytes arrive in chunks of any size;
/// each record is passed on with the line it starts on.
///
/// Memory is bounded by the longest record; time is linear in the input. Runs of plain bytes
/// are copied in one piece, so a feed of millions of rows parses at memory speed.
public struct CSVParser {
    /// Raw fields of one record (UTF-8 not yet validated) and its first line.
    public struct Record {
        public var fields: [[UInt8]]
        public var line: Int
    }

    /// A record as one buffer and the end of each field in it, valid only during the call it
    /// is passed to: no array per field.
    public struct RawRecord {
        /// The fields' bytes, one after the other.
        fileprivate(set) var bytes: [UInt8] = []
        /// The end offset in `bytes` of each field.
        fileprivate(set) var ends: [Int] = []
        /// The line the record starts on (1-based).
        public fileprivate(set) var line = 1

        /// The number of fields.
        public var count: Int { ends.count }

        /// The bytes of field `index`.
        public func field(_ index: Int) -> ArraySlice<UInt8> {
            bytes[(index == 0 ? 0 : ends[index - 1])..<ends[index]]
        }

        /// The record with a byte array per field.
        public var record: Record { Record(fields: (0..<count).map { Array(field($0)) }, line: line) }

        init() {}

        /// `record` in one buffer.
        init(_ record: Record) {
            for field in record.fields {
                bytes.append(contentsOf: field)
                ends.append(bytes.count)
            }
            line = record.line
        }
    }

    private enum State { case fieldStart, unquoted, quoted, quoteInQuoted }

    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr: UInt8 = 0x0D, lf: UInt8 = 0x0A
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    private var state = State.fieldStart
    private var current = RawRecord()
    private var line = 1
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
        try Array(bytes).withUnsafeBytes { chunk in try feed(raw: chunk) { try emit($0.record) } }
    }

    /// Ends the input: emits the last record when the file lacks a final newline.
    /// - Throws: `GTFSError.unterminatedQuote` when a quoted field is still open.
    public mutating func finish(emit: (Record) throws -> Void) throws {
        try finish(raw: { try emit($0.record) })
    }

    /// Parses `chunk`, calling `emit` with each complete record in place.
    /// - Throws: whatever `emit` throws.
    public mutating func feed(raw chunk: UnsafeRawBufferPointer, emit: (RawRecord) throws -> Void) throws {
        guard let base = chunk.baseAddress else { return }
        let count = chunk.count
        var index = 0
        // Skip a UTF-8 byte-order mark (EF BB BF) at the very start; a partial one is data.
        while atFileStart && index < count {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            if byte == Self.byteOrderMark[bomMatched] {
                bomMatched += 1
                index += 1
                if bomMatched == 3 { atFileStart = false }
                continue
            }
            atFileStart = false
            if bomMatched > 0 {
                try Self.byteOrderMark.prefix(bomMatched).withUnsafeBytes { try consume($0, from: 0, emit) }
                bomMatched = 0
            }
        }
        try consume(chunk, from: index, emit)
    }

    /// `feed(raw:emit:)`'s counterpart of `finish(emit:)`.
    public mutating func finish(raw emit: (RawRecord) throws -> Void) throws {
        if atFileStart && bomMatched > 0 {
            atFileStart = false
            try Self.byteOrderMark.prefix(bomMatched).withUnsafeBytes { try consume($0, from: 0, emit) }
        }
        if state == .quoted { throw GTFSError(file: file, line: current.line, .unterminatedQuote) }
        try endRecord(emit)
    }

    /// The state machine over `chunk` from `start`, a run of plain bytes at a time.
    private mutating func consume(_ chunk: UnsafeRawBufferPointer, from start: Int, _ emit: (RawRecord) throws -> Void) throws {
        guard let base = chunk.baseAddress else { return }
        let count = chunk.count
        var index = start
        while index < count {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            if pendingCR {
                pendingCR = false
                if byte == Self.lf {  // CRLF: the CR ended the line already
                    index += 1
                    continue
                }
            }
            switch state {
            case .quoted:
                // Everything up to the next quote or line break is the field's.
                var end = index
                while end < count {
                    let next = base.load(fromByteOffset: end, as: UInt8.self)
                    if next == Self.quote || next == Self.lf || next == Self.cr { break }
                    end += 1
                }
                append(base, index, end)
                index = end
                guard index < count else { break }
                let special = base.load(fromByteOffset: index, as: UInt8.self)
                index += 1
                if special == Self.quote {
                    state = .quoteInQuoted
                } else {
                    line += 1
                    if special == Self.cr { pendingCR = true }
                    current.bytes.append(special)
                }
            case .quoteInQuoted:
                if byte == Self.quote {
                    current.bytes.append(Self.quote)  // a doubled quote
                    state = .quoted
                    index += 1
                } else {
                    state = .unquoted  // the closing quote; what follows up to the comma is kept as is
                }
            case .fieldStart, .unquoted:
                if byte == Self.quote && state == .fieldStart {
                    state = .quoted
                    index += 1
                    continue
                }
                var end = index
                while end < count {
                    let next = base.load(fromByteOffset: end, as: UInt8.self)
                    if next == Self.comma || next == Self.lf || next == Self.cr { break }
                    end += 1
                }
                if end > index {
                    append(base, index, end)
                    state = .unquoted
                    index = end
                }
                guard index < count else { break }
                let delimiter = base.load(fromByteOffset: index, as: UInt8.self)
                index += 1
                if delimiter == Self.comma {
                    current.ends.append(current.bytes.count)
                    state = .fieldStart
                } else {
                    if delimiter == Self.cr { pendingCR = true }
                    try endRecord(emit)
                    line += 1
                    current.line = line
                }
            }
        }
    }

    private mutating func append(_ base: UnsafeRawPointer, _ start: Int, _ end: Int) {
        guard end > start else { return }
        current.bytes.append(contentsOf: UnsafeRawBufferPointer(start: base + start, count: end - start))
    }

    private mutating func endRecord(_ emit: (RawRecord) throws -> Void) throws {
        defer {
            current.bytes.removeAll(keepingCapacity: true)
            current.ends.removeAll(keepingCapacity: true)
            state = .fieldStart
        }
        // A blank line is no record.
        if current.ends.isEmpty && current.bytes.isEmpty && state == .fieldStart { return }
        current.ends.append(current.bytes.count)
        try emit(current)
    }
}
