#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value protected by a pthread mutex.
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer cannot see that type's
/// futex-based locking on Linux and reports every access under it as a race; with a pthread
/// mutex, `swift test --sanitize=thread` checks the engine's concurrency for real.
public final class Locked<State: Sendable>: @unchecked Sendable {
    // `state` is only touched between lock and unlock of `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: the mutex already makes access exclusive, and the dynamic check costs a
    // thread-local lookup on every page-cache and row-cache access.
    @exclusivity(unchecked) private var state: State

    public init(_ state: State) {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.state = state
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
