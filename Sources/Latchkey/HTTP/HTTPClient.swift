import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange. The SDK's only door to the network, so tests and apps can wrap or replace it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?

    public init(method: String = "GET", url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method; self.url = url; self.headers = headers; self.body = body
    }

    /// `application/x-www-form-urlencoded` POST, as RFC 6749 requires for the token, revocation and introspection
    /// endpoints (the JSON bodies of ReachFive's and ThunderID's SDKs are refused by standard servers).
    public static func form(_ url: URL, _ parameters: [(String, String)], headers: [String: String] = [:]) -> HTTPRequest {
        var h = headers
        h["Content-Type"] = "application/x-www-form-urlencoded"
        h["Accept"] = "application/json"
        return HTTPRequest(method: "POST", url: url, headers: h, body: Data(FormCoding.encode(parameters).utf8))
    }
}

/// An HTTP answer: status, headers (as received) and body; redirects are returned, never followed.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data
    /// Where the server redirected (redirects are never followed: custom-scheme callbacks must be captured).
    public var location: String? { headers.first { $0.key.lowercased() == "location" }?.value }

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status; self.headers = headers; self.body = body
    }
}

/// The SDK's one network seam: every request goes through `send(_:)` (URLSession by default; a wrapper in tests).
public protocol HTTPClient: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// `URLSession` with a session-level delegate that refuses redirects: on Linux only a session delegate can stop
/// one, and a custom-scheme `Location` would otherwise be followed as a relative path.
public final class URLSessionHTTPClient: HTTPClient {
    private let session: URLSession
    private let configuration: URLSessionConfiguration

    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        self.configuration = configuration
        session = URLSession(configuration: configuration, delegate: RedirectBlocker(), delegateQueue: nil)
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        do {
            let (session, ownSession) = session(for: request)
            defer { if ownSession { session.finishTasksAndInvalidate() } }
            let (data, response) = try await session.cancellationSafeData(for: urlRequest)
            guard let http = response as? HTTPURLResponse else {
                throw LatchkeyError(.networkError, "not an HTTP response from \(request.url.host ?? "server")")
            }
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields { headers["\(key)"] = "\(value)" }
            return HTTPResponse(status: http.statusCode, headers: headers, body: data)
        } catch let error as LatchkeyError {
            throw error
        } catch let error as URLError {
            let code: LatchkeyError.Code = error.code == .timedOut ? .requestTimeout : .networkError
            throw LatchkeyError(
                code, "\(request.method) \(request.url.host ?? "")\(request.url.path): \(error.localizedDescription)",
                underlying: error)
        } catch {
            throw LatchkeyError(.networkError, "\(request.method) \(request.url.host ?? "")\(request.url.path) failed: \(error.localizedDescription)")
        }
    }
}

extension URLSessionHTTPClient {
    /// The shared session, except on Linux for a request with a body: there it goes on a connection of its own.
    /// libcurl (under swift-corelibs-foundation) silently sends a request again when the kept-alive connection it
    /// reused is reset before an answer, and swift-corelibs-foundation cannot rewind the body: the second send has
    /// the headers alone, and the server waits for the body until its timeout. For a refresh whose first answer was
    /// lost, that wait can outlast the server's reuse interval and turn the retry into a replay that ends the session
    /// (measured: `Tests/system/test_never_signed_out.py`). A fresh connection is never resent that way: the loss is
    /// an immediate network error, and the next attempt goes out at once.
    private func session(for request: HTTPRequest) -> (URLSession, own: Bool) {
        #if canImport(Darwin)
        return (session, false)
        #else
        guard request.body != nil else { return (session, false) }
        return (URLSession(configuration: configuration, delegate: RedirectBlocker(), delegateQueue: nil), true)
        #endif
    }
}

private final class RedirectBlocker: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

/// Form encoding with only RFC 3986 unreserved characters left bare.
public enum FormCoding {
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    public static func escape(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
    /// `url` with `parameters` added to its query (after any it has): a GET form of a request.
    static func url(_ url: URL, adding parameters: [(String, String)]) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        let existing = components.percentEncodedQuery.map { $0 + "&" } ?? ""
        components.percentEncodedQuery = existing + encode(parameters)
        return components.url
    }

    public static func encode(_ parameters: [(String, String)]) -> String {
        parameters.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&")
    }

    /// The pairs of an encoded form (or query), in order; `+` is a space.
    public static func decode(_ text: String) -> [(String, String)] {
        text.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func unescape(_ s: Substring) -> String? { s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = unescape(parts[0]), let value = unescape(parts.count > 1 ? parts[1] : "") else { return nil }
            return (name, value)
        }
    }
}
