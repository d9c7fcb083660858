/// Replacing a store file whole — a copy written beside it and renamed over it — safely while
/// other processes may write to it.
///
/// The protocol: the replacer holds the file's writer lock from before it reads the file until
/// after the rename. No commit can start or end meanwhile, so none made after the copy was
/// taken is lost with the old file; and every writer checks, holding that lock, that its path
/// names no other file than the one it opened (`ArborError.fileReplaced` otherwise), so no
/// commit goes to the old file afterwards. Readers of the old file go on reading it.
extension Database {
    /// Runs `body` holding the writer lock of the store file at `path` without opening the store:
    /// every writer of that file, in any process, waits until `body` returns.
    ///
    /// Use it to replace the file whole (see above). Do not write to the same file from the
    /// calling thread inside `body`: that writer would wait for this lock forever. A lock file
    /// this call creates is removed again unless a process opened the store meanwhile (the
    /// directory is left as it was found). On media where the lock file cannot be written
    /// (read-only), `body` runs without a lock: no other process can write there.
    /// - Parameters:
    ///   - path: the store file's path (its lock file is `path` + `-lock`).
    ///   - timeout: how long to wait for another writer (a save, another replacer) to release
    ///     the lock, as `Options.writerTimeout` bounds a transaction's wait; nil waits as long
    ///     as it takes, a negative time not at all.
    ///   - body: the work done holding the lock.
    /// - Complexity: a few system calls; waits while another writer holds the lock.
    /// - Throws: `ArborError.writerBusy` when `timeout` passed first (`body` did not run);
    ///   `ArborError.io` when the lock file cannot be opened or locked; what `body` throws.
    @discardableResult
    public static func withWriterLock<R>(path: String, timeout: Duration? = nil, _ body: () throws -> R) throws -> R {
        let lockPath = path + "-lock"
        let bound = timeout.map { max($0, .zero) }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: bound ?? .zero)
        while true {
            let existed = try Platform.identity(at: lockPath) != nil
            guard let descriptor = try Platform.openLockFile(lockPath) else { return try body() }
            defer { Platform.close(descriptor) }  // releases the lock
            if let bound {
                let locked = try BusyWait.retry(for: clock.now.duration(to: deadline)) {
                    try Platform.tryLock(descriptor, byte: LockFile.writerByte)
                }
                guard locked else { throw ArborError.writerBusy(path: path, waited: bound) }
            } else {
                try Platform.lock(descriptor, byte: LockFile.writerByte, exclusive: true, wait: true)
            }
            // Removed while we waited (by a holder that had created it): it no longer excludes
            // anyone, so lock the one at the path now.
            guard try Platform.identity(at: lockPath) == Platform.identity(of: descriptor, path: lockPath) else { continue }
            defer { if !existed { try? LockFile.removeIfUnused(path: lockPath, descriptor: descriptor) } }
            return try body()
        }
    }
}
