#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The seam through which the engine performs all I/O on the store file.
///
/// `POSIXStorageFile` is the real implementation; tests substitute a fault-injecting file
/// (`SimulatedFile` in ArborEngineTestSupport) that loses unsynced writes, tears pages and
/// reorders writes, to prove that commits are atomic at every write and sync point.
/// Implementations must be safe to call from several threads at once (reads run concurrently
/// with the single writer).
public protocol StorageFile: AnyObject, Sendable {
    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read (short at end of file).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int
    /// Writes all of `bytes` at `offset`, extending the file if needed.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// Makes every completed write durable (fdatasync).
    func sync() throws
    /// The current size in bytes.
    func size() throws -> UInt64
    /// Shrinks or extends the file.
    func truncate(to size: UInt64) throws
}

/// A store file on a POSIX file system, read and written with pread/pwrite.
public final class POSIXStorageFile: StorageFile, @unchecked Sendable {
    // The descriptor is immutable after init and pread/pwrite are thread-safe.
    public let path: String
    let descriptor: Int32
    public let isReadOnly: Bool
    /// The open file's device and inode (a rename over `path` does not change them).
    private let identity: FileIdentity

    /// Opens (and with `create`, creates) the file at `path`.
    /// - Throws: `ArborError.io` with the failing call and errno.
    public init(path: String, readOnly: Bool, create: Bool) throws {
        self.path = path
        self.isReadOnly = readOnly
        var flags = readOnly ? O_RDONLY : O_RDWR
        if create && !readOnly { flags |= O_CREAT }
        flags |= O_CLOEXEC
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw ArborError.io(operation: "open \(path)", errno: errno) }
        descriptor = fd
        do {
            identity = try Platform.identity(of: fd, path: path)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(descriptor) }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let result = pread(descriptor, buffer.baseAddress.map { $0 + done }, buffer.count - done, off_t(offset) + off_t(done))
            if result < 0 {
                if errno == EINTR { continue }
                throw ArborError.io(operation: "pread at \(offset)", errno: errno)
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        var done = 0
        while done < bytes.count {
            let result = pwrite(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset) + off_t(done))
            if result < 0 {
                if errno == EINTR { continue }
                throw ArborError.io(operation: "pwrite at \(offset)", errno: errno)
            }
            done += result
        }
    }

    /// Whether `path` now names another file than this open one (one renamed over it). False
    /// when it names this file or nothing (deleted: like SQLite, the open file stays usable).
    /// - Complexity: one `stat` of the path (every write transaction asks).
    /// - Throws: `ArborError.io` when the path cannot be examined.
    public func isReplacedAtPath() throws -> Bool {
        guard let named = try Platform.identity(at: path) else { return false }
        return named != identity
    }

    public func sync() throws {
        #if canImport(Glibc)
        let result = fdatasync(descriptor)
        #else
        let result = fsync(descriptor)
        #endif
        guard result == 0 else { throw ArborError.io(operation: "fdatasync", errno: errno) }
    }

    public func size() throws -> UInt64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ArborError.io(operation: "fstat", errno: errno) }
        return UInt64(info.st_size)
    }

    public func truncate(to size: UInt64) throws {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw ArborError.io(operation: "ftruncate", errno: errno) }
    }
}
