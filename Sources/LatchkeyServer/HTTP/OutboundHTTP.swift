import Foundation
import NIOConcurrencyHelpers

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The server's HTTP client towards a URL the configuration or an application named (an audit webhook, an
/// application's `jwks_uri` or `request_uris`): an ephemeral session (no cookies, no cache) whose timeout bounds the
/// whole exchange, and that follows no redirect (a 3xx is the answer: a request goes only where it was told, and a
/// fetch cannot be bounced to another host, such as one inside the network).
struct OutboundHTTP: Sendable {
    enum Outcome: Equatable {
        case status(Int)
        case unreachable(String)
    }

    /// What a GET brought back: a status and a body of at most the size asked for, or why there was none.
    enum Fetched: Equatable {
        case answer(status: Int, body: Data)
        /// The body is larger than the limit (announced or seen while reading): the transfer was cut short.
        case tooLarge
        case unreachable(String)
    }

    private let sessions: LazySession
    private var transfers: TransferDelegate { sessions.transfers }
    private var session: URLSession { sessions.session }
    private let timeoutSeconds: Int

    init(timeoutSeconds: Int) {
        self.timeoutSeconds = timeoutSeconds
        sessions = LazySession(timeoutSeconds: timeoutSeconds)
    }

    /// The answer's status, or why there was none.
    func post(_ request: URLRequest) async -> Outcome {
        do {
            let (_, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else { return .unreachable("not an HTTP answer") }
            return .status(http.statusCode)
        } catch {
            return .unreachable(Self.reason(error, timeoutSeconds: timeoutSeconds))
        }
    }

    /// GET `url` with `accept`, reading at most `maximumBytes` of the body: past them (or when `Content-Length`
    /// announces more) the transfer is cancelled, so an endless or huge answer costs neither memory nor time.
    func get(_ url: URL, accept: String, maximumBytes: Int) async -> Fetched {
        var request = URLRequest(url: url)
        request.setValue(accept, forHTTPHeaderField: "Accept")
        request.setValue("Latchkey", forHTTPHeaderField: "User-Agent")
        request.timeoutInterval = TimeInterval(timeoutSeconds)
        let task = session.dataTask(with: request)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfers.begin(task.taskIdentifier, limit: maximumBytes, timeoutSeconds: timeoutSeconds, continuation: continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    static func reason(_ error: any Error, timeoutSeconds: Int) -> String {
        if let error = error as? URLError {
            return error.code == .timedOut ? "no answer within \(timeoutSeconds) s" : "cannot be reached (URLError \(error.code.rawValue))"
        }
        return "cannot be reached (\(type(of: error)))"
    }
}

/// The URL session, made at the first request: a server whose applications never ask for one (no webhook, no
/// `jwks_uri`, no back-channel logout) holds none (on Linux each session keeps a curl handle and its queue).
private final class LazySession: Sendable {
    let transfers = TransferDelegate()
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
            let session = URLSession(configuration: configuration, delegate: transfers, delegateQueue: nil)
            made = session
            return session
        }
    }

    deinit {
        // The session holds its delegate strongly: invalidating it breaks the cycle and frees its handle.
        made.withLockedValue { $0?.finishTasksAndInvalidate() }
    }
}

/// The session's delegate: refuses every redirect (Linux's URLSession stops one only in a session delegate), and
/// collects the bodies of `OutboundHTTP.get`'s transfers up to their limits. Requests made with `data(for:)` are not
/// its transfers and pass through untouched.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Transfer {
        var limit: Int
        var timeoutSeconds: Int
        var body = Data()
        var status: Int?
        var tooLarge = false
        var continuation: CheckedContinuation<OutboundHTTP.Fetched, Never>
    }

    private let transfers = NIOLockedValueBox<[Int: Transfer]>([:])

    func begin(_ id: Int, limit: Int, timeoutSeconds: Int, continuation: CheckedContinuation<OutboundHTTP.Fetched, Never>) {
        transfers.withLockedValue { $0[id] = Transfer(limit: limit, timeoutSeconds: timeoutSeconds, continuation: continuation) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let allow = transfers.withLockedValue { transfers -> Bool in
            guard var transfer = transfers[dataTask.taskIdentifier] else { return true }
            transfer.status = (response as? HTTPURLResponse)?.statusCode
            if response.expectedContentLength > Int64(transfer.limit) { transfer.tooLarge = true }
            transfers[dataTask.taskIdentifier] = transfer
            return !transfer.tooLarge
        }
        completionHandler(allow ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overLimit = transfers.withLockedValue { transfers -> Bool in
            guard var transfer = transfers[dataTask.taskIdentifier], !transfer.tooLarge else { return false }
            if transfer.body.count + data.count > transfer.limit {
                transfer.tooLarge = true
                transfer.body = Data()
            } else {
                transfer.body.append(data)
            }
            transfers[dataTask.taskIdentifier] = transfer
            return transfer.tooLarge
        }
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLockedValue({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let outcome: OutboundHTTP.Fetched
        if transfer.tooLarge {
            outcome = .tooLarge
        } else if let error {
            outcome = .unreachable(OutboundHTTP.reason(error, timeoutSeconds: transfer.timeoutSeconds))
        } else if let status = transfer.status {
            outcome = .answer(status: status, body: transfer.body)
        } else {
            outcome = .unreachable("not an HTTP answer")
        }
        transfer.continuation.resume(returning: outcome)
    }
}
