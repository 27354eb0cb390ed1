import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import NIOHTTP1
import Latchkey
import LatchkeyServer
import Logging

/// The token endpoint's throughput against a bare Hummingbird route in the same process (and against glewlwyd's when
/// `LATCHKEY_BENCH_GLEWLWYD_*` name one), and a whole code-flow sign-in through the SDK against the sum of its HTTP
/// round trips. Loopback only; the client is the same for every figure (URLSession, `workers` requests in flight).
enum ServerBenchmarks {
    static let workers = 8

    static func run() async throws {
        print("Server throughput over loopback HTTP (\(workers) requests in flight, same client for every figure)")
        // Every request comes from 127.0.0.1: the per-address limits would measure themselves.
        let bench = try await BenchServer.start { $0.loginPolicy.maxStartsPerAddress = 1_000_000_000 }
        let (bare, bareStop) = try await bareHummingbird()
        let http = URLSessionHTTPClient()

        let bareRate = try await throughput(port: bare) { _ in Call(path: "/bare") }
        let health = try await throughput(port: bench.port) { _ in Call(path: "/health") }
        Benchmarks.report("GET /health (every middleware)", health, baseline: "bare Hummingbird route", bareRate)

        // Refresh grant: one rotating chain per worker.
        let refresh = try await refreshRate(bench)
        Benchmarks.report("refresh grant (rotation, RS256 ID token)", refresh, baseline: "bare Hummingbird route", bareRate)
        let es256Bench = try await BenchServer.start {
            $0.clients[0].idTokenSignedResponseAlg = .es256
            $0.loginPolicy.maxStartsPerAddress = 1_000_000_000
        }
        let refreshES256 = try await refreshRate(es256Bench)
        await es256Bench.stop()
        Benchmarks.report("refresh grant (ES256 ID token)", refreshES256, baseline: "bare Hummingbird route", bareRate)

        // Authorization-code grant: codes minted beforehand through the SSO session (no password check in the loop).
        let (_, cookie) = try await SDKBenchmarks.signInKeepingSession(server: bench.server, http: http)
        let pkce = PKCEPair()
        var minted: [String] = []
        for _ in 0..<(workers * 150) { minted.append(try await mintCode(server: bench.server, http: http, cookie: cookie, pkce: pkce)) }
        let codes = CodeQueue(minted)
        let codeGrant = try await throughput(port: bench.port, limit: minted.count) { _ in
            Call(
                method: .POST, path: "/oauth2/token",
                form: "grant_type=authorization_code&client_id=latchkey-demo&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback"
                    + "&code_verifier=\(pkce.verifier)&code=\(codes.next())")
        }
        Benchmarks.report("authorization-code grant", codeGrant, baseline: "bare Hummingbird route", bareRate)

        if let glewlwyd = try await glewlwydRefresh() {
            Benchmarks.report("refresh grant (Latchkey)", refresh, baseline: "glewlwyd refresh grant", glewlwyd)
        } else {
            print("  glewlwyd: not measured (scripts/bench-peers.sh starts it and passes LATCHKEY_BENCH_GLEWLWYD_*)")
        }

        try await fullSignIn(bench: bench)
        await bareStop()
        await bench.stop()
    }

    /// The refresh grant alone (for a profiler: `LATCHKEY_BENCH_SECONDS=10 perf record … latchkey-bench refresh`).
    static func refreshOnly() async throws {
        print("Refresh grant alone")
        let bench = try await BenchServer.start()
        print(String(format: "  refresh grant: %.0f/s", try await refreshRate(bench)))
        await bench.stop()
    }

    /// The refresh grant's throughput, one rotating chain per worker.
    static func refreshRate(_ bench: BenchServer) async throws -> Double {
        let http = URLSessionHTTPClient()
        var chains: [String] = []
        for _ in 0..<workers { chains.append(try await SDKBenchmarks.signIn(server: bench.server, http: http).refreshToken ?? "") }
        let tokens = ChainBox(chains)
        return try await throughput(
            port: bench.port,
            check: { worker, data in
                guard let next = try? JSONDecoder().decode(TokenResponse.self, from: data).refreshToken else { return false }
                tokens.set(worker, next)
                return true
            }
        ) { worker in
            Call(method: .POST, path: "/oauth2/token", form: "grant_type=refresh_token&client_id=latchkey-demo&refresh_token=" + tokens.get(worker))
        }
    }

    // MARK: Full sign-in

    /// `signInWithBrowser` through a scripted browser (authorize, login page, form post, callback), every request
    /// of both timed by the HTTP client; the ratio is the whole sign-in over the sum of its round trips.
    static func fullSignIn(bench: BenchServer) async throws {
        let timing = TimingHTTPClient()
        let agent = ScriptedBrowser(http: timing, issuer: bench.server.issuer)
        var total = 0.0, inHTTP = 0.0
        for index in 0..<31 {
            let client = LatchkeyClient(http: timing, userAgent: agent)
            try await client.initialize(
                config: LatchkeyConfig(baseUrl: bench.server.issuer, clientId: "latchkey-demo"), storage: InMemoryStorageAdapter())
            _ = try await client.signInWithBrowser()  // the first one fetches metadata and keys, as an app's first does
            timing.reset()
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await client.signInWithBrowser(sessionId: "s\(index)")
            if index > 0 {  // the first round warms up
                total += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
                inHTTP += timing.milliseconds
            }
        }
        print(
            String(
                format: "  code-flow sign-in through the SDK: %.2f ms, of which %.2f ms in its %d HTTP round trips (ratio %.2f)",
                total / 30, inHTTP / 30, timing.requests, total / inHTTP))
    }

    // MARK: Peers

    /// glewlwyd's refresh grant with the same client, when `LATCHKEY_BENCH_GLEWLWYD_TOKEN_URL`, `_CLIENT_ID` and
    /// `_REFRESH_TOKEN` are set (glewlwyd keeps its refresh token; ours rotates one per request).
    static func glewlwydRefresh() async throws -> Double? {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["LATCHKEY_BENCH_GLEWLWYD_TOKEN_URL"], let client = environment["LATCHKEY_BENCH_GLEWLWYD_CLIENT_ID"],
            let token = environment["LATCHKEY_BENCH_GLEWLWYD_REFRESH_TOKEN"], let parsed = URLComponents(string: url),
            let host = parsed.host, LoopbackHost.isLoopback(host), let port = parsed.port
        else { return nil }
        let body =
            "grant_type=refresh_token&client_id=\(client)&refresh_token=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)"
        return try await throughput(port: port) { _ in Call(method: .POST, path: parsed.percentEncodedPath, form: body) }
    }

    // MARK: Harness

    /// One request: method, path (with query), form body.
    struct Call: Sendable { var method: HTTPMethod = .GET; var path: String; var form: String? }

    /// Requests per second with `workers` keep-alive connections each a request in flight, for twice
    /// `Benchmarks.seconds` (or until `limit` requests); every answer must be 200 (and pass `check`).
    static func throughput(
        port: Int, limit: Int = .max, check: @escaping @Sendable (Int, Data) -> Bool = { _, _ in true },
        _ call: @escaping @Sendable (Int) -> Call
    ) async throws -> Double {
        let seconds = Benchmarks.seconds * 2
        let counter = ChainBox([])
        var connections: [KeepAliveConnection] = []
        for _ in 0..<workers { connections.append(try await KeepAliveConnection(host: "127.0.0.1", port: port)) }
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            try await load(connections, start: start, seconds: seconds, counter: counter, limit: limit, check: check, call)
        } catch {
            for connection in connections { await connection.close() }  // NIO requires its writers finished
            throw error
        }
        let rate = Double(counter.taken) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        for connection in connections { await connection.close() }
        return rate
    }

    private static func load(
        _ connections: [KeepAliveConnection], start: UInt64, seconds: Double, counter: ChainBox, limit: Int,
        check: @escaping @Sendable (Int, Data) -> Bool, _ call: @escaping @Sendable (Int) -> Call
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (worker, connection) in connections.enumerated() {
                group.addTask {
                    while Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 < seconds, counter.take(limit) {
                        let request = call(worker)
                        let (status, data) = try await connection.send(request.method, request.path, form: request.form)
                        guard status == 200, check(worker, data) else {
                            throw BenchError("\(request.path): \(status) \(String(decoding: data.prefix(200), as: UTF8.self))")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A code from `/oauth2/authorize` on the strength of the SSO cookie.
    static func mintCode(server: IdentityServer, http: URLSessionHTTPClient, cookie: String, pkce: PKCEPair) async throws -> String {
        let query = FormCoding.encode([
            ("response_type", "code"), ("client_id", "latchkey-demo"), ("redirect_uri", "http://127.0.0.1:9/callback"),
            ("scope", "openid offline_access"), ("state", "s"), ("nonce", "n"),
            ("code_challenge", pkce.challenge), ("code_challenge_method", "S256")
        ])
        guard let url = URL(string: server.issuer + "/oauth2/authorize?" + query) else { throw BenchError("url") }
        let answer = try await http.send(Latchkey.HTTPRequest(url: url, headers: ["Cookie": cookie]))
        guard let code = answer.location.flatMap(URLComponents.init(string:))?.queryItems?.first(where: { $0.name == "code" })?.value else {
            throw BenchError("no code from the SSO session (\(answer.status))")
        }
        return code
    }

    /// A Hummingbird application with one route answering "ok", in this process on a free loopback port.
    static func bareHummingbird() async throws -> (port: Int, stop: @Sendable () async -> Void) {
        let router = Router()
        router.get("/bare") { _, _ in "ok" }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var quiet = Logger(label: "bench.bare")
        quiet.logLevel = .critical  // its shutdown at the end of a group is not news
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: quiet)
        let task = Task { try await app.runService() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw BenchError("bare server did not start") }
        return (
            port,
            {
                task.cancel(); _ = await task.result
            }
        )
    }
}

/// Per-worker strings (refresh chains, code lists) and a shared request count, behind a lock.
final class ChainBox: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String]
    private var count = 0
    init(_ values: [String]) { self.values = values }
    func get(_ index: Int) -> String { lock.withLock { values[index] } }
    func set(_ index: Int, _ value: String) { lock.withLock { values[index] = value } }
    /// Counts one request unless `limit` are counted already.
    func take(_ limit: Int) -> Bool {
        lock.withLock {
            guard count < limit else { return false }; count += 1; return true
        }
    }
    var taken: Int { lock.withLock { count } }
}

/// Authorization codes handed out once each, in order.
final class CodeQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let codes: [String]
    private var position = 0
    init(_ codes: [String]) { self.codes = codes }
    func next() -> String {
        lock.withLock {
            defer { position += 1 }
            return position < codes.count ? codes[position] : ""
        }
    }
}

/// Sums the time spent in `send` (the HTTP round trips) across every request.
final class TimingHTTPClient: Latchkey.HTTPClient, @unchecked Sendable {
    private let inner = URLSessionHTTPClient()
    private let lock = NSLock()
    private var nanoseconds: UInt64 = 0
    private var count = 0
    var milliseconds: Double { lock.withLock { Double(nanoseconds) / 1e6 } }
    var requests: Int { lock.withLock { count } }
    func reset() {
        lock.withLock {
            nanoseconds = 0; count = 0
        }
    }
    func send(_ request: Latchkey.HTTPRequest) async throws -> Latchkey.HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let spent = DispatchTime.now().uptimeNanoseconds - start;
            lock.withLock {
                nanoseconds += spent; count += 1
            }
        }
        return try await inner.send(request)
    }
}

/// A browser reduced to the requests of the hosted login: authorize, the login page, the form post (cookies by hand).
struct ScriptedBrowser: AuthorizationUserAgent {
    let http: TimingHTTPClient
    let issuer: String

    func prepareRedirectURI() async throws -> String? { "http://127.0.0.1:9/callback" }
    func release(redirectURI: String) {}
    func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL { try await authorize(url: url) }

    func authorize(url: URL) async throws -> URL {
        let toLogin = try await http.send(Latchkey.HTTPRequest(url: url))
        guard let loginPath = toLogin.location, let loginURL = URL(string: issuer + loginPath) else { throw BenchError("no login page") }
        let page = try await http.send(Latchkey.HTTPRequest(url: loginURL))
        let html = String(decoding: page.body, as: UTF8.self)
        func field(_ name: String) -> String {
            guard let r = html.range(of: "name=\"\(name)\" value=\"") else { return "" }
            return String(html[r.upperBound...].prefix { $0 != "\"" })
        }
        let csrfCookie = page.headers.first { $0.key.lowercased() == "set-cookie" }?.value.split(separator: ";").first.map(String.init) ?? ""
        guard let postURL = URL(string: issuer + "/login") else { throw BenchError("url") }
        let done = try await http.send(
            .form(
                postURL,
                [
                    ("request", field("request")), ("csrf", field("csrf")),
                    ("username", DevelopmentDefaults.demoUsername), ("password", DevelopmentDefaults.demoPassword)
                ],
                headers: ["Cookie": csrfCookie]))
        guard let callback = done.location.flatMap(URL.init(string:)) else { throw BenchError("sign-in failed (\(done.status))") }
        return callback
    }
}
