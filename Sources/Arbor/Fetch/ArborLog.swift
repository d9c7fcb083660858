import ArborEngine
import Logging

/// Arbor's loggers (swift-log). Fetches log their plan, rows examined and matched, results and
/// time at `.debug` — the equivalent of Core Data's `-com.apple.CoreData.SQLDebug 1`:
/// ```swift
/// var logger = Logger(label: "arbor.fetch")
/// logger.logLevel = .debug
/// ArborLog.fetches = logger
/// ```
public enum ArborLog {
    private static let storage = Locked(Logger(label: "arbor.fetch"))

    /// The logger fetches report to (level `.info` by default, so fetches are silent).
    public static var fetches: Logger {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
