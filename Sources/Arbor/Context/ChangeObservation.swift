import ArborEngine

/// A registration for change notifications (did-save or objects-did-change observers);
/// `cancel()` or releasing it ends the calls.
public final class ChangeObservation: Sendable {
    private let cancellation: @Sendable () -> Void
    private let cancelled = Locked(false)

    init(_ cancellation: @escaping @Sendable () -> Void) { self.cancellation = cancellation }

    /// Stops the calls. Idempotent; callable from any thread.
    public func cancel() {
        let first = cancelled.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { cancellation() }
    }

    deinit { cancel() }
}

/// The registration `addDidSaveObserver(_:)` returns.
public typealias SaveObservation = ChangeObservation
