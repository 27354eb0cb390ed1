import Logging

/// A part of the server that logs on behalf of the request its task serves: `logger` is `baseLogger` with the
/// request's `request_id` (`RequestIdMiddleware` sets it for the task and its children), so every line a request
/// causes — a replay, a lockout, a refused passkey — is found by the id its answer carries. Outside a request
/// (start-up, background work) it is the logger the server was opened with.
protocol LogsForRequests {
    var baseLogger: Logger { get }
}

extension LogsForRequests {
    var logger: Logger {
        guard let id = RequestIdMiddleware.current else { return baseLogger }
        var logger = baseLogger
        logger[metadataKey: "request_id"] = .string(id)
        return logger
    }
}
