import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// This lives in LatchkeyJOSE because it is the one module the SDK and the server share; it is about URLSession, not JOSE.

extension URLSession {
    /// `data(for:)`, except that on Linux cancelling the calling task never reaches URLSession.
    ///
    /// swift-corelibs-foundation's `data(for:)` cancels its `URLSessionTask` from inside the Swift runtime's cancellation
    /// handler, which runs holding the task's status lock, and `URLSessionTask.cancel()` waits (`sync`) for the session's
    /// work queue. When the transfer completes at that moment, the work queue is resuming the same task's continuation and
    /// waits for that status lock: both wait forever, and the session with them. Seen in this suite: a server's graceful
    /// shutdown cancelled its delivery loop while a webhook answered, and the test process stopped.
    ///
    /// On Linux the request therefore runs in a task of its own that nobody cancels; a cancelled caller gets
    /// `CancellationError` at once while the request ends by itself within the session's timeout, its answer dropped.
    /// On Apple platforms this is `data(for:)`, with its real cancellation.
    ///
    /// Not part of the SDK's API (`@_spi(LatchkeyInternal)`): the server, in a package of its own, uses it too.
    @_spi(LatchkeyInternal) public func cancellationSafeData(for request: URLRequest) async throws -> (Data, URLResponse) {
        #if canImport(Darwin)
        return try await data(for: request)
        #else
        // A caller cancelled already sends nothing: an answer it would drop could be a rotated token.
        try Task.checkCancellation()
        let outcome = FirstOutcome<(Data, URLResponse)>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.install(continuation)
                let session = self
                Task.detached {
                    do { outcome.finish(.success(try await session.data(for: request))) } catch { outcome.finish(.failure(error)) }
                }
            }
        } onCancel: {
            // Not here and now: this handler runs holding the caller's status lock, which resuming its continuation needs.
            DispatchQueue.global().async { outcome.finish(.failure(CancellationError())) }
        }
        #endif
    }
}

#if !canImport(Darwin)
/// A continuation resumed by whichever comes first, the answer or the caller's cancellation (either may come before the
/// continuation is installed).
private final class FirstOutcome<Value: Sendable>: @unchecked Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, any Error>)
        case finishedEarly(Result<Value, any Error>)
        case done
    }

    private let lock = NSLock()
    private var state = State.empty

    func install(_ continuation: CheckedContinuation<Value, any Error>) {
        lock.lock()
        guard case .finishedEarly(let result) = state else {
            state = .waiting(continuation)
            lock.unlock()
            return
        }
        state = .done
        lock.unlock()
        continuation.resume(with: result)
    }

    func finish(_ result: Result<Value, any Error>) {
        lock.lock()
        switch state {
        case .empty:
            state = .finishedEarly(result)
            lock.unlock()
        case .waiting(let continuation):
            state = .done
            lock.unlock()
            continuation.resume(with: result)
        case .finishedEarly, .done:
            lock.unlock()
        }
    }
}
#endif
