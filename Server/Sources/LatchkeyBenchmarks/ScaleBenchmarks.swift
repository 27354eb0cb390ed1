import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Latchkey
import LatchkeyServer

/// Scale figures: refresh-grant and authorization-code throughput on SQLite (one instance), PostgreSQL (one
/// instance) and PostgreSQL (two instances behind a round-robin client, as behind a load balancer), each against
/// `GET /health` of the same servers measured in the same run.
///
/// Concurrent workers over loopback HTTP: each keeps its own refresh-token chain (a rotated token is spent, so every
/// request needs the previous answer) and its own SSO session for the code flow (authorize with the session cookie,
/// then the code exchange: two requests per sign-in). The two instances run in this process with separate stores,
/// pools, key rings and listeners: what they share is the database, as separate processes would.
///
/// Runs when `LATCHKEY_BENCH_POSTGRES_URL` names a database the benchmark may fill (a throwaway one).
enum ScaleBenchmarks {
    static let workers = 8
    static let seconds = 3.0

    static func run() async throws {
        guard let url = ProcessInfo.processInfo.environment["LATCHKEY_BENCH_POSTGRES_URL"] else {
            print("Scale: set LATCHKEY_BENCH_POSTGRES_URL to a throwaway PostgreSQL database to measure it")
            return
        }
        print("Scale: \(workers) concurrent clients for \(Int(seconds)) s each, over loopback HTTP")
        let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
        // One loopback address sends every request: the per-address limits stay on (and counted, in the database with
        // PostgreSQL) but high enough not to refuse the load.
        func configure(_ configuration: inout ServerConfiguration) {
            configuration.keyEncryptionKey = key
            configuration.loginPolicy.maxStartsPerAddress = 10_000_000
        }

        let sqlite = try await BenchServer.start { configure(&$0) }
        let single = try await measure([sqlite])
        await sqlite.stop()

        let postgresA = try await BenchServer.start {
            configure(&$0); $0.databasePath = url
        }
        let onePostgres = try await measure([postgresA])
        // The second instance answers for the same issuer, as instances behind one address do.
        let sharedIssuer = URL(string: "http://127.0.0.1:\(postgresA.port)")!
        let postgresB = try await BenchServer.start {
            configure(&$0); $0.databasePath = url; $0.issuer = sharedIssuer
        }
        let twoPostgres = try await measure([postgresA, postgresB])
        await postgresA.stop()
        await postgresB.stop()

        for (name, m) in [("SQLite ×1", single), ("PostgreSQL ×1", onePostgres), ("PostgreSQL ×2", twoPostgres)] {
            Benchmarks.report("refresh grant, \(name)", m.refresh, baseline: "GET /health, \(name)", m.health)
            Benchmarks.report("code sign-in, \(name)", m.codeFlow, baseline: "GET /health, \(name)", m.health)
        }
        Benchmarks.report("refresh grant, PostgreSQL ×1", onePostgres.refresh, baseline: "SQLite ×1", single.refresh)
        Benchmarks.report("refresh grant, PostgreSQL ×2", twoPostgres.refresh, baseline: "PostgreSQL ×1", onePostgres.refresh)
        Benchmarks.report("code sign-in, PostgreSQL ×1", onePostgres.codeFlow, baseline: "SQLite ×1", single.codeFlow)
        Benchmarks.report("code sign-in, PostgreSQL ×2", twoPostgres.codeFlow, baseline: "PostgreSQL ×1", onePostgres.codeFlow)
    }

    struct Measurement { var health: Double; var refresh: Double; var codeFlow: Double }

    /// Requests per second (sign-ins per second for the code flow) with `workers` clients spread over `servers`.
    static func measure(_ servers: [BenchServer]) async throws -> Measurement {
        let http = URLSessionHTTPClient()
        // Each worker signs in once through the hosted login: its refresh token and its SSO session cookie.
        var signedIn: [(refresh: String, cookie: String)] = []
        for index in 0..<workers {
            let server = servers[index % servers.count].server
            signedIn.append(try await sessionSignIn(server: server, http: http))
        }
        let seeds = signedIn
        let bases = servers.map { $0.server.issuerBaseForBench($0.port) }
        progress("signed in \(workers) clients on \(servers.count) instance(s)")

        let health = try await concurrentRate { worker, round in
            let response = try await http.send(HTTPRequest(url: URL(string: bases[(worker + round) % bases.count] + "/health")!))
            guard response.status == 200 else { throw BenchError("health \(response.status)") }
        }
        progress("GET /health: \(Int(health))/s")
        let chains = TokenChains(seeds.map(\.refresh))
        let refresh = try await concurrentRate { worker, round in
            let base = bases[(worker + round) % bases.count]
            let response = try await http.send(
                .form(
                    URL(string: base + "/oauth2/token")!,
                    [
                        ("grant_type", "refresh_token"), ("refresh_token", await chains.token(worker)),
                        ("client_id", DevelopmentDefaults.demoClientId)
                    ]))
            guard response.status == 200, let next = try JSONDecoder().decode(TokenResponse.self, from: response.body).refreshToken else {
                throw BenchError("refresh \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))")
            }
            await chains.set(worker, next)
        }
        progress("refresh grant: \(Int(refresh))/s")
        let codeFlow = try await concurrentRate { worker, round in
            // Authorize on one instance, redeem on the next: a load balancer does not keep a client on one instance.
            let pkce = PKCEPair()
            let redirect = "http://127.0.0.1:9/callback"
            let query = FormCoding.encode([
                ("response_type", "code"), ("client_id", DevelopmentDefaults.demoClientId), ("redirect_uri", redirect),
                ("scope", "openid"), ("state", "s"), ("nonce", "n"), ("code_challenge", pkce.challenge),
                ("code_challenge_method", "S256")
            ])
            let authorize = try await http.send(
                HTTPRequest(
                    url: URL(string: bases[(worker + round) % bases.count] + "/oauth2/authorize?" + query)!,
                    headers: ["Cookie": seeds[worker].cookie]))
            guard let code = authorize.location.flatMap(URLComponents.init(string:))?.queryItems?.first(where: { $0.name == "code" })?.value else {
                throw BenchError("authorize \(authorize.status) did not answer with a code")
            }
            let token = try await http.send(
                .form(
                    URL(string: bases[(worker + round + 1) % bases.count] + "/oauth2/token")!,
                    [
                        ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect),
                        ("client_id", DevelopmentDefaults.demoClientId),
                        ("code_verifier", pkce.verifier)
                    ]))
            guard token.status == 200 else { throw BenchError("code exchange \(token.status)") }
        }
        return Measurement(health: health, refresh: refresh, codeFlow: codeFlow)
    }

    /// A progress line on standard error (the table goes to standard output).
    static func progress(_ line: String) {
        FileHandle.standardError.write(Data(("  … " + line + "\n").utf8))
    }

    /// Operations per second of `workers` tasks running `body` in a loop for `seconds` (after one warm-up round each).
    static func concurrentRate(_ body: @escaping @Sendable (_ worker: Int, _ round: Int) async throws -> Void) async throws -> Double {
        for worker in 0..<workers { try await body(worker, 0) }
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var count = 0
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        try await body(worker, count + 1)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(total) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// The demo user signed in through the hosted form: the refresh token and the SSO session cookie.
    static func sessionSignIn(server: IdentityServer, http: URLSessionHTTPClient) async throws -> (refresh: String, cookie: String) {
        let (tokens, cookie) = try await SDKBenchmarks.signInKeepingSession(server: server, http: http)
        guard let refresh = tokens.refreshToken else { throw BenchError("no refresh token") }
        return (refresh, cookie)
    }

    /// The latest refresh token of each worker's chain.
    actor TokenChains {
        private var tokens: [String]
        init(_ tokens: [String]) { self.tokens = tokens }
        func token(_ worker: Int) -> String { tokens[worker] }
        func set(_ worker: Int, _ token: String) { tokens[worker] = token }
    }
}

extension IdentityServer {
    /// The instance's own address: with two instances the issuer names only one of them.
    func issuerBaseForBench(_ port: Int) -> String { "http://127.0.0.1:\(port)" }
}
