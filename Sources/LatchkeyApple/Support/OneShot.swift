import Foundation

/// A continuation that is resumed exactly once, whoever comes first: the system's callback, a second (buggy) callback,
/// the task's cancellation, or an early failure. Later resumptions are ignored. A result that arrives before the
/// continuation is installed (cancellation of an already cancelled task) is kept and delivered on install.
final class OneShot<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var early: Result<Value, any Error>?
    private var done = false

    /// Waits for the first result; `start` runs once the continuation is installed.
    func wait(_ start: () -> Void) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let pending: Result<Value, any Error>? = lock.withLock {
                if let early { return early }
                self.continuation = continuation
                return nil
            }
            if let pending { continuation.resume(with: pending) } else { start() }
        }
    }

    /// Whether a result was delivered already.
    var isDone: Bool { lock.withLock { done } }

    /// Delivers `result` if nothing was delivered before; returns whether this call was the first.
    @discardableResult
    func resume(_ result: Result<Value, any Error>) -> Bool {
        let (first, target): (Bool, CheckedContinuation<Value, any Error>?) = lock.withLock {
            guard !done else { return (false, nil) }
            done = true
            guard let continuation else {
                early = result
                return (true, nil)
            }
            self.continuation = nil
            return (true, continuation)
        }
        target?.resume(with: result)
        return first
    }
}
