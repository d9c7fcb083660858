/// Waiting with a deadline for a lock that `fcntl` can only try (it has no timed wait): try,
/// then pause and try again, the pauses growing from 1 to 50 ms as SQLite's busy handler does.
enum BusyWait {
    /// Calls `attempt` until it returns true or `timeout` (a negative one counts as zero) has
    /// passed; whether it returned true. `attempt` is called at least once, and once more at
    /// the deadline.
    static func retry(for timeout: Duration, _ attempt: () throws -> Bool) rethrows -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: max(timeout, .zero))
        var pause = Duration.milliseconds(1)
        while try !attempt() {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return false }
            Platform.sleep(min(pause, left))
            pause = min(pause * 2, .milliseconds(50))
        }
        return true
    }
}
