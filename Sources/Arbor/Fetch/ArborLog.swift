import ArborEngine
import Logging
import Synchronization

/// Arbor's loggers (swift-log). Fetches log their plan, rows examined and matched, results and
/// time at `.debug` — the equivalent of Core Data's `-com.apple.CoreData.SQLDebug 1`:
/// ```swift
/// var logger = Logger(label: "arbor.fetch")
/// logger.logLevel = .debug
/// ArborLog.fetches = logger
/// ```
public enum ArborLog {
    private static let initialFetches = Logger(label: "arbor.fetch")
    private static let storage = Locked(initialFetches)
    /// Whether `fetches` logs at `.debug`: read by every fetch, without the lock or a copy of
    /// the logger (which cost a fetch 430 instructions and a clock read when it logged nothing).
    /// Made from the initial logger, not under the lock: the setter first uses it under the lock.
    private static let fetchesAtDebug = Atomic<Bool>(initialFetches.logLevel <= .debug)

    /// The logger fetches report to (level `.info` by default, so fetches are silent). Its
    /// level is read when it is set: after changing the level of a handler it shares, set it again.
    public static var fetches: Logger {
        get { storage.withLock { $0 } }
        set {
            storage.withLock { logger in
                logger = newValue
                fetchesAtDebug.store(newValue.logLevel <= .debug, ordering: .relaxed)
            }
        }
    }

    /// Whether fetches are logged (see `fetches`).
    static var logsFetches: Bool { fetchesAtDebug.load(ordering: .relaxed) }
}
