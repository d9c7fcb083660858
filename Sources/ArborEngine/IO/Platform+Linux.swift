#if canImport(Glibc)
import Glibc
#endif

/// The operating-system calls behind the lock file (`LockFile`) and the writer lock: byte-range
/// locks that belong to an open file description, a shared mapping, a thread's identity.
///
/// Linux only: the locks are open-file-description (OFD) locks, which a process holds per
/// descriptor and which two handles of one process do not share (POSIX record locks would be
/// released by closing any descriptor of the file). A port to another system replaces this file
/// (on Darwin, for example, with `F_OFD_*`'s equivalent or `flock` on one lock file per byte).
enum Platform {
    // Linux's OFD lock commands (not exported by the Glibc module).
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37
    private static let setLockWait: Int32 = 38

    /// The calling thread's identity, for "does this thread hold the writer lock".
    static var currentThreadID: UInt { UInt(pthread_self()) }

    /// Blocks the calling thread for `duration` (at least; a signal's interruption sleeps on).
    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || attoseconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Opens (creating) a lock file for reading and writing; nil when the medium refuses
    /// writing (read-only media or permissions), where a store runs without one.
    static func openLockFile(_ path: String) throws -> Int32? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 {
            if errno == EROFS || errno == EACCES || errno == EPERM { return nil }
            throw ArborError.io(operation: "open \(path)", errno: errno)
        }
        return fd
    }

    /// Closes `fd`, releasing every lock held through it.
    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// The device and inode of `fd`'s file, which a rename over its path does not change.
    static func identity(of fd: Int32, path: String) throws -> FileIdentity {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ArborError.io(operation: "fstat \(path)", errno: errno) }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The device and inode of the file `path` names; nil when it names nothing.
    static func identity(at path: String) throws -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw ArborError.io(operation: "stat \(path)", errno: errno)
        }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func unlink(_ path: String) { _ = Glibc.unlink(path) }

    static func size(of fd: Int32, path: String) throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ArborError.io(operation: "fstat \(path)", errno: errno) }
        return Int(info.st_size)
    }

    static func write(_ fd: Int32, _ bytes: [UInt8], at offset: UInt64, path: String) throws {
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else { throw ArborError.io(operation: "write \(path)", errno: errno) }
    }

    /// The first `size` bytes of `fd`, mapped shared with every process that maps the file.
    static func mapShared(_ fd: Int32, size: Int, path: String) throws -> UnsafeMutableRawPointer {
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw ArborError.io(operation: "map \(path)", errno: errno)
        }
        return mapped
    }

    static func unmap(_ mapping: UnsafeMutableRawPointer, size: Int) { munmap(mapping, size) }

    /// Locks byte `byte` of `fd`, waiting for it when `wait`.
    /// - Throws: `ArborError.io` (EAGAIN or EACCES without `wait` when another holder has it).
    static func lock(_ fd: Int32, byte: Int64, exclusive: Bool, wait: Bool) throws {
        var request = request(exclusive ? F_WRLCK : F_RDLCK, byte: byte)
        while true {
            let result = withUnsafeMutablePointer(to: &request) { fcntl(fd, wait ? setLockWait : setLock, $0) }
            if result == 0 { return }
            if errno == EINTR { continue }
            throw ArborError.io(operation: "lock byte \(byte) of the lock file", errno: errno)
        }
    }

    /// Locks byte `byte` exclusively without waiting; false when another holder has it.
    static func tryLock(_ fd: Int32, byte: Int64) throws -> Bool {
        do { try lock(fd, byte: byte, exclusive: true, wait: false) } catch ArborError.io(_, let code) where code == EAGAIN || code == EACCES {
            return false
        }
        return true
    }

    static func unlock(_ fd: Int32, byte: Int64) {
        var request = request(F_UNLCK, byte: byte)
        _ = withUnsafeMutablePointer(to: &request) { fcntl(fd, setLock, $0) }
    }

    /// Whether another open file description holds a lock on byte `byte`.
    static func isLocked(_ fd: Int32, byte: Int64) throws -> Bool {
        var request = request(F_WRLCK, byte: byte)
        guard withUnsafeMutablePointer(to: &request, { fcntl(fd, getLock, $0) }) == 0 else {
            throw ArborError.io(operation: "test lock byte \(byte)", errno: errno)
        }
        return request.l_type != Int16(F_UNLCK)
    }

    private static func request(_ type: Int32, byte: Int64) -> flock {
        var request = flock()
        request.l_type = Int16(type)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(byte)
        request.l_len = 1
        request.l_pid = 0
        return request
    }
}

/// Which file an open descriptor or a path refers to.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
}
