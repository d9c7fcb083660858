#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A page number inside a store file. Page 0 and 1 are the two meta pages.
public typealias PageID = UInt32

/// Every failure ArborEngine reports. Errors about the file name the page and what is wrong,
/// so a corrupt or hostile file is diagnosable rather than a crash.
public enum ArborError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not start with an Arbor meta page (wrong magic in both meta pages).
    case notAnArborFile(path: String)
    /// The file was written by a newer format version than this library reads.
    case unsupportedFormatVersion(found: UInt32, supported: UInt32)
    /// Neither meta page is valid (torn, corrupt or zeroed).
    case noValidMetaPage(detail: String)
    /// A page failed validation: bad checksum, wrong page number, impossible layout.
    case corruptPage(page: PageID, detail: String)
    /// A pointer on disk refers to a page outside the file's committed page range.
    case pageOutOfRange(page: PageID, pageCount: UInt32, referencedFrom: String)
    /// The file is shorter than its meta page claims.
    case truncatedFile(expectedBytes: UInt64, actualBytes: UInt64)
    /// A system call failed.
    case io(operation: String, errno: Int32)
    /// The requested page size is not a power of two between 4 KiB and 64 KiB.
    case invalidPageSize(Int)
    /// A key is empty or longer than `Limits.maxKeyLength(pageSize:)`.
    case keyTooLarge(length: Int, maximum: Int)
    /// A value is longer than `Limits.maxValueLength`.
    case valueTooLarge(length: Int, maximum: Int)
    /// No tree of that name exists in the catalog.
    case treeNotFound(String)
    /// A tree of that name already exists.
    case treeExists(String)
    /// A tree name is empty or too long.
    case invalidTreeName(String)
    /// A write was attempted in a read-only transaction or on a read-only database.
    case readOnly
    /// The transaction was already committed or aborted.
    case transactionClosed
    /// A cursor was used after its tree was modified in the same transaction.
    case cursorInvalidated
    /// A previous commit failed after its meta page may have reached the disk; the in-memory
    /// state can no longer be trusted. Close and reopen the database.
    case needsReopen
    /// A tuple key could not be decoded.
    case malformedTupleKey(offset: Int, detail: String)
    /// All reader slots of the lock file are taken by live processes.
    case readerTableFull(slots: Int)
    /// The path the store was opened at now names another file: a copy was renamed over it (an
    /// import, `replacePersistentStore`). A write would go to a file no later open finds, so none
    /// starts; reads go on in the file that was opened. Reopen the store.
    case fileReplaced(path: String)
    /// Another writer (a thread or a process: a save, an import) held the writer lock for
    /// longer than `Database.Options.writerTimeout`, `waited`. Nothing was written; try again.
    case writerBusy(path: String, waited: Duration)
    /// LZ4 failed to decompress data that should be valid.
    case decompressionFailed(page: PageID, detail: String)
    /// The operation is not possible on a compacted, compressed (read-only) file.
    case compressedFileIsReadOnly
    /// An internal invariant did not hold; the detail names it. Reported instead of trapping.
    case internalInconsistency(String)

    public var description: String {
        switch self {
        case .notAnArborFile(let path): return "\(path): not an Arbor store file"
        case .unsupportedFormatVersion(let found, let supported):
            return "file format version \(found) is newer than the supported version \(supported)"
        case .noValidMetaPage(let detail): return "no valid meta page: \(detail)"
        case .corruptPage(let page, let detail): return "page \(page): \(detail)"
        case .pageOutOfRange(let page, let count, let from):
            return "page \(page) referenced from \(from) is outside the file (\(count) pages)"
        case .truncatedFile(let expected, let actual):
            return "file is truncated: expected at least \(expected) bytes, found \(actual)"
        case .io(let operation, let errno):
            return "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .invalidPageSize(let size): return "invalid page size \(size): use a power of two from 4096 to 65536"
        case .keyTooLarge(let length, let maximum): return "key of \(length) bytes: keys must be 1...\(maximum) bytes"
        case .valueTooLarge(let length, let maximum): return "value of \(length) bytes exceeds \(maximum) bytes"
        case .treeNotFound(let name): return "no tree named \"\(name)\""
        case .treeExists(let name): return "a tree named \"\(name)\" already exists"
        case .invalidTreeName(let name): return "invalid tree name \"\(name)\""
        case .readOnly: return "the transaction or database is read-only"
        case .transactionClosed: return "the transaction is already closed"
        case .cursorInvalidated: return "the cursor's tree was modified; create a new cursor"
        case .needsReopen: return "a failed commit left the database in an unknown state; reopen it"
        case .malformedTupleKey(let offset, let detail): return "malformed tuple key at byte \(offset): \(detail)"
        case .readerTableFull(let slots): return "all \(slots) reader slots of the lock file are in use"
        case .fileReplaced(let path): return "\(path) was replaced by another file since it was opened; reopen it to write"
        case .writerBusy(let path, let waited):
            return "another writer held the writer lock of \(path) for longer than the writer timeout (\(waited)); nothing was written"
        case .decompressionFailed(let page, let detail): return "page \(page): LZ4 decompression failed: \(detail)"
        case .compressedFileIsReadOnly: return "a compressed (compacted) store file can only be opened read-only"
        case .internalInconsistency(let detail): return "internal inconsistency: \(detail)"
        }
    }
}
