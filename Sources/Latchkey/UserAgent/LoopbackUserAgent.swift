import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// RFC 8252 §7.3 loopback redirect for native and command-line apps: listens on 127.0.0.1 on an ephemeral port,
/// opens the system browser (or prints the URL), and takes the redirect that comes back to `/callback` with the
/// authorization request's `state`. Anything else that reaches the port (another local process, a web page probing
/// loopback ports) is answered 404 and ignored, so it can neither end nor hijack the sign-in.
public final class LoopbackUserAgent: AuthorizationUserAgent {
    /// How the authorization URL reaches the user: the system browser, or printed for the user to open.
    public enum BrowserMode: Sendable {
        /// Try `xdg-open`/`open`; print the URL when that fails.
        case system
        /// Only print the URL (headless machines, SSH sessions, tests).
        case printOnly
    }

    private let mode: BrowserMode
    private let timeout: TimeInterval
    private let output: @Sendable (String) -> Void
    /// One listener per sign-in in progress, keyed by its redirect URI, so concurrent sign-ins never share a slot.
    private let listeners = Locked<[String: LoopbackListener]>([:])

    public init(
        mode: BrowserMode = .system, timeout: TimeInterval = 300,
        output: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
    ) {
        self.mode = mode
        self.timeout = timeout
        self.output = output
    }

    public func prepareRedirectURI() async throws -> String? { try listen(path: "/callback") }

    /// The end of a sign-out comes back to `/logout` on a port of its own (a provider registers loopback redirect URIs
    /// without their port, RFC 8252 §7.3, for sign-out as for sign-in).
    public func prepareSignOutRedirectURI() async throws -> String? { try listen(path: "/logout") }

    /// The system browser (or the one the person opens the printed URL in) keeps the provider's session cookie.
    public var keepsProviderSession: Bool { true }

    private func listen(path: String) throws -> String {
        let listener = try LoopbackListener()
        let redirectURI = "http://127.0.0.1:\(listener.port)\(path)"
        listeners.withLock { $0[redirectURI] = listener }
        return redirectURI
    }

    public func release(redirectURI: String) {
        listeners.withLock { $0.removeValue(forKey: redirectURI) }?.close()
    }

    public func authorize(url: URL) async throws -> URL {
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems
        guard let redirectURI = query?.first(where: { $0.name == "redirect_uri" })?.value else {
            throw LatchkeyError(.invalidConfiguration, "the authorization URL's redirect_uri was not prepared by this user agent")
        }
        return try await authorize(url: url, redirectURI: redirectURI, state: query?.first { $0.name == "state" }?.value)
    }

    /// The pushed-request form too (RFC 9126): the redirect URI and `state` come from the SDK, not from the URL.
    public func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL {
        let state = presentation.state ?? URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value
        return try await authorize(url: url, redirectURI: presentation.redirectURI, state: state)
    }

    private func authorize(url: URL, redirectURI: String, state: String?) async throws -> URL {
        guard let l = listeners.withLock({ $0.removeValue(forKey: redirectURI) }) else {
            throw LatchkeyError(.invalidConfiguration, "the authorization URL's redirect_uri was not prepared by this user agent")
        }
        defer { l.close() }
        let path = URLComponents(string: redirectURI)?.path ?? "/callback"
        if mode == .printOnly || !Self.openBrowser(url) {
            // A sign-out need not wait for a person to open a printed URL when the app did not ask for printing: it
            // falls back to a request (the SDK takes this error as "no page can be shown here").
            if path == "/logout", mode == .system {
                throw LatchkeyError(.invalidConfiguration, "no browser could be opened to end the provider's session")
            }
            output(url.absoluteString)
        }
        return try await l.waitForCallback(timeout: timeout, expectedState: state, path: path)
    }

    static func openBrowser(_ url: URL) -> Bool {
        #if os(Linux) || os(macOS)
        let process = Process()
        #if os(macOS)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/open")
        #else
        process.executableURL = URL(fileURLWithPath: "/usr/bin/xdg-open")
        #endif
        process.arguments = [url.absoluteString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard FileManager.default.isExecutableFile(atPath: process.executableURL?.path ?? "") else { return false }
        do { try process.run() } catch { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
        #else
        return false
        #endif
    }
}

/// A one-shot HTTP listener on 127.0.0.1. Blocking socket calls run on their own thread, never on the cooperative
/// pool; closing the socket unblocks `accept`.
final class LoopbackListener: @unchecked Sendable {
    private let fd: Int32
    let port: Int
    private let closed = Locked(false)

    init() throws {
        #if os(Linux)
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let s = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard s >= 0 else { throw LatchkeyError(.networkError, "cannot create the loopback socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(s, 4) == 0 else { _ = systemClose(s); throw LatchkeyError(.networkError, "cannot listen on 127.0.0.1") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) }
        }
        fd = s
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        let already = closed.withLock { c -> Bool in
            defer { c = true }; return c
        }
        if !already { shutdown(fd, Int32(SHUT_RDWR)); _ = systemClose(fd) }
    }

    /// How long one connection may take to send its request line before it is dropped: an idle connection must not
    /// hold the only accepting thread (closing the listening socket would not unblock `recv` on it).
    static let requestReadTimeout: TimeInterval = 5

    /// Accepts connections until one asks for `path` carrying `expectedState` (any request for `path` when nil); answers
    /// it with a small page and returns its URL. Every other request gets a 404 and the wait goes on.
    func waitForCallback(timeout: TimeInterval, expectedState: String? = nil, path: String = "/callback") async throws -> URL {
        let port = self.port
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .seconds(timeout))
            self?.close()
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                let thread = Thread { [self] in
                    while true {
                        let client = accept(fd, nil, nil)
                        guard client >= 0 else {
                            continuation.resume(
                                throwing: LatchkeyError(.canceled, "no browser came back to the loopback redirect (canceled or timed out)"))
                            return
                        }
                        Self.limitReadTime(client)
                        let target = Self.readRequestTarget(client)
                        let url = target.flatMap { URL(string: "http://127.0.0.1:\(port)\($0)") }
                        let isCallback = url.map { Self.isCallback($0, expectedState: expectedState, path: path) } ?? false
                        Self.respond(client, ok: isCallback, signedOut: path == "/logout")
                        _ = systemClose(client)
                        if isCallback, let url {
                            continuation.resume(returning: url)
                            return
                        }
                    }
                }
                thread.start()
            }
        } onCancel: {
            self.close()
        }
    }

    /// The redirect of this sign-in (or sign-out): its path and, when a state is expected, exactly that `state`.
    static func isCallback(_ url: URL, expectedState: String?, path: String = "/callback") -> Bool {
        guard url.path == path else { return false }
        guard let expectedState else { return true }
        let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value
        return state.map { constantTimeEquals($0, expectedState) } ?? false
    }

    private static func limitReadTime(_ client: Int32) {
        var limit = timeval(tv_sec: Int(requestReadTimeout), tv_usec: 0)
        _ = setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads the request line (`GET /callback?… HTTP/1.1`) and returns its target.
    static func readRequestTarget(_ client: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var received = 0
        // SO_RCVTIMEO bounds each recv; this bounds the whole request line (a byte every few seconds is still idle).
        let deadline = Date().addingTimeInterval(requestReadTimeout)
        while received < buffer.count, Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress! + received, $0.count - received, 0) }
            if n <= 0 { break }
            received += n
            if buffer[..<received].contains(0x0A) { break }
        }
        let line = String(decoding: buffer[..<received], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" else { return nil }
        return String(parts[1])
    }

    private static func respond(_ client: Int32, ok: Bool, signedOut: Bool = false) {
        let title = signedOut ? "Signed out" : "Signed in"
        let page =
            ok
            ? "<!doctype html><html lang=\"en\"><title>\(title)</title><p>You can close this window and return to the application.</p></html>"
            : "<!doctype html><html lang=\"en\"><title>Not found</title><p>Not found.</p></html>"
        let response =
            "HTTP/1.1 \(ok ? "200 OK" : "404 Not Found")\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(page.utf8.count)\r\nConnection: close\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\n\r\n\(page)"
        // A peer that already reset the connection must not kill the process with SIGPIPE.
        #if os(Linux)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        var on: Int32 = 1
        _ = setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        let flags: Int32 = 0
        #endif
        _ = response.withCString { send(client, $0, strlen($0), flags) }
    }
}

private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #else
    Darwin.close(fd)
    #endif
}
