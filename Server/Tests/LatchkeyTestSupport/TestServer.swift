import Foundation
import Hummingbird
import HummingbirdOTP
import LatchkeyServer
import Logging

/// An identity server running in-process on a loopback port chosen by the OS, with its own SQLite file.
package final class TestServer: Sendable {
    package let server: IdentityServer
    package let port: Int
    package let databasePath: String
    private let time: ServerClock.Adjustable
    /// The server's clock (what its rules decide by; moved by `advanceClock`).
    package var clock: ServerClock { time.clock }

    /// Moves the server's clock by `seconds`.
    package func advanceClock(_ seconds: TimeInterval) { time.advance(by: seconds) }

    /// Stops the server's clock where it is: from now on it moves only by `advanceClock`. For a test that first needs
    /// real time (an SDK sign-in whose proofs are dated by the server's `Date` header, which is the system's) and then
    /// a rule about exact offsets from the server's time.
    package func freezeClock() { time.freeze() }

    /// The 6-digit TOTP code of the server's current time step for `secret`. Stops the server's clock first
    /// (`freezeClock`): the code stays the current one however long the requests that carry it take on a busy machine,
    /// where a code computed from a running clock rolled out of its window between two requests.
    package func totpCode(_ secret: String, offsetSeconds: TimeInterval = 0) -> String {
        freezeClock()
        return String(format: "%06d", TOTP(secret: secret).compute(date: clock.now.addingTimeInterval(offsetSeconds)))
    }

    /// The raw key of a base32 authenticator secret (RFC 4648, as an enrollment shows it and an authenticator app
    /// decodes it), for `totpCode`; nil for a character outside the alphabet.
    package static func totpKey(fromBase32 text: String) -> String? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var (bits, value, bytes) = (0, 0, [UInt8]())
        for character in text {
            guard let index = alphabet.firstIndex(of: character) else { return nil }
            value = (value << 5) | index
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((value >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
    private let service: GracefulService

    package var issuer: String { server.issuer }
    package var base: String { "http://127.0.0.1:\(port)" }

    package static let confidentialClient = ClientConfiguration(
        clientId: "backend", name: "Backend", clientSecret: "backend-secret-0123456789", tokenEndpointAuthMethod: .clientSecretBasic,
        redirectUris: ["https://backend.example/callback"], grantTypes: [.clientCredentials, .tokenExchange, .authorizationCode, .refreshToken],
        scopes: ["openid", "profile", "email", "api.read", "api.write"], allowedAudiences: ["https://api.example"], requirePKCE: false)

    package static let postClient = ClientConfiguration(
        clientId: "poster", clientSecret: "poster-secret-0123456789", tokenEndpointAuthMethod: .clientSecretPost,
        grantTypes: [.clientCredentials], scopes: ["api.read"])

    /// A new SQLite file name, for tests of SQLite itself (they pass it as `databasePath`, also when the suites run
    /// on PostgreSQL).
    package static func newSQLitePath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("latchkey-test-\(UUID().uuidString).sqlite").path
    }

    /// Starts a server. `databasePath` reuses a file (restart tests); `configure` adjusts the configuration.
    /// `frozenClock`: the server's clock moves only by `advanceClock` (rules about the time between two requests).
    package static func start(
        databasePath: String? = nil, logger given: Logger? = nil, frozenClock: Bool = false,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        // With LATCHKEY_TEST_SERVER_POSTGRES_URL set, every server of the suites that does not name a file runs on a
        // fresh PostgreSQL database instead (the whole suite against the shared store).
        // On PostgreSQL a start waits its turn: every store call, the start's included, keeps the production
        // `database_timeout_seconds` (10 s), which a few hundred servers connecting in the same second would miss.
        let gate = (databasePath.map { $0.hasPrefix("postgres://") } ?? (TestDatabases.adminURL != nil)) ? PostgresGate.serverStarts : nil
        await gate?.acquire()
        let postgres: String?
        do { postgres = databasePath == nil ? try await TestDatabases.createIfConfigured() : nil } catch {
            await gate?.release()
            throw error
        }
        let path = databasePath ?? postgres ?? newSQLitePath()
        var configuration = DevelopmentDefaults.configuration(port: 0, databasePath: path, host: "127.0.0.1")
        configuration.bcryptCost = 4
        configuration.allowsLowBcryptCost = true  // some suites turn development mode off
        configuration.clients += [confidentialClient, postClient]
        configuration.users.append(UserSeed(username: "disabled@example.com", password: "disabled password", disabled: true))
        if path.hasPrefix("postgres://") {
            configuration.keyEncryptionKey = Data(repeating: 0x50, count: 32)
            configuration.databasePoolSize = 3  // hundreds of servers run at once in the suites
            // Six hundred servers were alive at once in a run of the suite, most of them between requests: the
            // connections they held idle reached the cluster's max_connections (53300 at a server's start). Idle
            // connections go back within seconds here.
            configuration.databaseIdleSeconds = 2
        }
        // Hundreds of servers run at once in the suites: none polls its delivery queues unless a test asks (the tests
        // of delivery run each pass themselves, or turn the loops on).
        configuration.runsDeliveryLoops = false
        // The documents its tests serve on loopback (key sets, request objects, logout receivers) answer at once, but a
        // machine busy with other work can hold one past the production 5 s; a test of the limit sets its own.
        configuration.outboundTimeoutSeconds = 120
        // Strict rotation, as the suites of refresh-token replay detection were written for (a second use at once is a
        // replay); the reuse interval's own tests (`RefreshTokenReuseTests`) set the production default.
        configuration.refreshTokenReuseSeconds = 0
        // The suites' hosted sign-ins go straight back to the application; the passkey offer's own tests turn it on.
        configuration.webAuthn.offerAfterPassword = false
        configure(&configuration)
        if !configuration.development, configuration.keyEncryptionKey == nil, configuration.keyEncryptionKeyFile == nil {
            // Production mode requires a key-encryption key; tests of other behaviour get a fixed one.
            configuration.keyEncryptionKey = Data(repeating: 0x4C, count: 32)
        }
        if !configuration.development, configuration.outbox == nil, configuration.smtp == nil {
            // Outside development an application that emails needs a delivery; tests of other behaviour get one that
            // keeps the messages (the refusal itself is tested with IdentityServer.open).
            configuration.outbox = CapturingOutbox()
        }
        var logger = given ?? Logger(label: "test.server")
        if given == nil { logger.logLevel = .critical }  // Hummingbird logs cancellation at shutdown as an error
        let time = ServerClock.Adjustable(frozen: frozenClock)
        let trace = ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE"] != nil
        if trace { FileHandle.standardError.write(Data("opening \(path)\n".utf8)) }
        let server: IdentityServer
        do { server = try await IdentityServer.open(configuration: configuration, clock: time.clock, logger: logger) } catch {
            await gate?.release()
            throw error
        }
        await gate?.release()
        if trace { FileHandle.standardError.write(Data("opened \(path)\n".utf8)) }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = server.application { port in continuation.yield(port) }
        let service = GracefulService(app, logger: logger) { error in
            if let error {
                FileHandle.standardError.write(Data("server run ended with \(error)\n".utf8))
            } else if ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE"] != nil {
                FileHandle.standardError.write(Data("server run ended\n".utf8))
            }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestFailure("server did not start") }
        if ProcessInfo.processInfo.environment["LATCHKEY_TEST_TRACE"] != nil {
            FileHandle.standardError.write(Data("server started on \(port)\n".utf8))
        }
        return TestServer(server: server, port: port, databasePath: path, time: time, service: service)
    }

    private init(
        server: IdentityServer, port: Int, databasePath: String, time: ServerClock.Adjustable, service: GracefulService
    ) {
        self.server = server; self.port = port; self.databasePath = databasePath; self.time = time; self.service = service
    }

    /// Stops the server (a graceful shutdown: no new connections, the open ones finished) and waits for it.
    /// `keepingDatabase` leaves a PostgreSQL database for a restart on it (the second server drops it).
    package func stop(keepingDatabase: Bool = false) async {
        await service.stop()
        server.close()
        if !keepingDatabase { await TestDatabases.dropIfCreated(databasePath) }
    }
}

/// `TestServer.start(configure:)` for main-actor suites: the configuration closure is made and used off the main actor.
package func startServer(_ configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
    try await TestServer.start(configure: configure)
}

package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

extension ServerConfiguration {
    /// Changes the configured application `clientId` (no-op when there is none): the preamble of a test that needs
    /// one setting of a fixture application otherwise.
    package mutating func changeClient(_ clientId: String, _ change: (inout ClientConfiguration) -> Void) {
        for index in clients.indices where clients[index].clientId == clientId { change(&clients[index]) }
    }
}
