import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import NIOConcurrencyHelpers

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's HTTP client towards a URL the operator's configuration named (an audit webhook): an ephemeral
/// session (no cookies, no cache) whose timeout bounds the whole exchange, and that follows no redirect (a 3xx is the
/// answer: a request goes only where it was told). URLs that applications gave the server (`jwks_uri`,
/// `request_uris`, back-channel logout URIs) go through `PinnedHTTPClient` instead, which checks the address it
/// connects to.
struct OutboundHTTP: Sendable {
    enum Outcome: Equatable {
        case status(Int)
        case unreachable(String)
    }

    private let sessions: LazySession
    private var session: URLSession { sessions.session }
    private let timeoutSeconds: Int

    init(timeoutSeconds: Int) {
        self.timeoutSeconds = timeoutSeconds
        sessions = LazySession(timeoutSeconds: timeoutSeconds)
    }

    /// The answer's status, or why there was none.
    func post(_ request: URLRequest) async -> Outcome {
        do {
            let (_, response) = try await session.cancellationSafeData(for: request)
            guard let http = response as? HTTPURLResponse else { return .unreachable("not an HTTP answer") }
            return .status(http.statusCode)
        } catch {
            return .unreachable(Self.reason(error, timeoutSeconds: timeoutSeconds))
        }
    }

    static func reason(_ error: any Error, timeoutSeconds: Int) -> String {
        if let error = error as? URLError {
            return error.code == .timedOut ? "no answer within \(timeoutSeconds) s" : "cannot be reached (URLError \(error.code.rawValue))"
        }
        return "cannot be reached (\(type(of: error)))"
    }
}

/// The URL session, made at the first request: a server with no webhook holds none (on Linux each session keeps a curl
/// handle and its queue).
private final class LazySession: Sendable {
    let redirects = RedirectRefusal()
    private let timeoutSeconds: Int
    private let made = NIOLockedValueBox<URLSession?>(nil)

    init(timeoutSeconds: Int) { self.timeoutSeconds = timeoutSeconds }

    var session: URLSession {
        made.withLockedValue { made in
            if let made { return made }
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = TimeInterval(timeoutSeconds)
            configuration.timeoutIntervalForResource = TimeInterval(timeoutSeconds)
            configuration.httpCookieAcceptPolicy = .never
            configuration.httpShouldSetCookies = false
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            let session = URLSession(configuration: configuration, delegate: redirects, delegateQueue: nil)
            made = session
            return session
        }
    }

    deinit {
        // The session holds its delegate strongly: invalidating it breaks the cycle and frees its handle.
        made.withLockedValue { $0?.finishTasksAndInvalidate() }
    }
}

/// The session's delegate: refuses every redirect (Linux's URLSession stops one only in a session delegate).
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
