import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import LatchkeyServer

/// A resolver that answers the names a test chose (with the addresses it chose, loopback ones included) and records
/// every lookup: it stands for a DNS name under a registrant's control.
final class ScriptedResolver: HostResolver {
    struct Unknown: Error {}
    private let answers: [String: [String]]
    private let lookups = NIOLockedValueBox<[String]>([])

    init(_ answers: [String: [String]]) { self.answers = answers }

    /// The names looked up, in order.
    var lookedUp: [String] { lookups.withLockedValue { $0 } }

    func addresses(of host: String, port: Int) async throws -> [SocketAddress] {
        lookups.withLockedValue { $0.append(host) }
        guard let addresses = answers[host.lowercased()] else { throw Unknown() }
        return try addresses.map { try SocketAddress(ipAddress: $0, port: port) }
    }
}

/// Review 3, R3-5, at fetch time: a registered URL whose host *name* resolves to the server's own network is not
/// contacted — the name is resolved once, every address is checked, and the connection goes to a checked address —
/// and the registrant reads the same answer for an open port and a closed one. The names here resolve through a
/// scripted resolver given to the in-process server (`ServerConfiguration.hostResolver`).
@Suite("Client documents: a name that resolves inside is not fetched")
struct ClientDocumentRebindingTests {
    static let resolver = ScriptedResolver([
        "keys.rebind.test": ["127.0.0.1"], "mixed.rebind.test": ["93.184.216.34", "127.0.0.1"], "mapped.rebind.test": ["::ffff:127.0.0.1"],
        "req.rebind.test": ["127.0.0.1"], "logout.rebind.test": ["127.0.0.1"], "localhost": ["127.0.0.1"]
    ])

    /// `PrivateKeyJWTTests.startForRegistration`'s server, resolving through `resolver`, logging into `capture`.
    static func start(_ resolver: ScriptedResolver, capture: NoSecretsInLogsTests.Capture, more: [ClientConfiguration] = []) async throws
        -> TestServer
    {
        try await TestServer.start(logger: capture.logger("server")) { configuration in
            configuration.hostResolver = resolver
            configuration.clientRegistration.grantTypes.append(.clientCredentials)
            configuration.clientRegistration.scopes.append("api.read")
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "backend" { client.scopes.append("registration") }
                return client
            }
            configuration.clients += more
        }
    }

    @Test("attack: a jwks_uri named keys.rebind.test (resolving to 127.0.0.1) is registered but never fetched; open and closed ports read the same")
    func aRebindingJWKSURIIsNotFetched() async throws {
        let listener = try await ConnectionCounter.start()
        defer { Task { await listener.stop() } }
        let resolver = ScriptedResolver(Self.resolver.answersForTests)
        let capture = NoSecretsInLogsTests.Capture()
        let server = try await Self.start(resolver, capture: capture)
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let open = try await ClientDocumentAddressTests.registrantSees(
            server, jwksURI: "https://keys.rebind.test:\(listener.port)/jwks", registrar: registrar)
        let closed = try await ClientDocumentAddressTests.registrantSees(server, jwksURI: "https://keys.rebind.test:9/jwks", registrar: registrar)
        #expect(open.hasPrefix("token 401"), "the name is registered, the fetch refused: \(open)")
        #expect(open == closed, "open: \(open) / closed: \(closed)")
        #expect(open.contains("could not be fetched"), "\(open)")
        #expect(!open.contains("127.0.0.1") && !open.contains("internal") && !open.contains("reached"), "no network detail: \(open)")
        // A name answering a public and an internal address is refused too, and an IPv4-mapped loopback address.
        for name in ["mixed.rebind.test", "mapped.rebind.test"] {
            let seen = try await ClientDocumentAddressTests.registrantSees(
                server, jwksURI: "https://\(name):\(listener.port)/jwks", registrar: registrar)
            #expect(seen == open, "\(name): \(seen)")
        }
        #expect(listener.connections == 0, "the listener on 127.0.0.1 was reached")
        // One lookup per fetch: the address checked is the address used.
        #expect(resolver.lookedUp.filter { $0 == "keys.rebind.test" }.count == 2, "\(resolver.lookedUp)")
        // The reason is in the server's log, for the operator.
        #expect(capture.all.contains { $0.contains("keys.rebind.test resolves to an internal address (127.0.0.1)") }, "\(capture.all.suffix(5))")
    }

    @Test(
        "attack: a registered request_uri and back-channel logout URI named inside are not contacted; the redirect says only 'could not be fetched'")
    func requestURIsAndLogoutURIsAreNotContacted() async throws {
        let listener = try await ConnectionCounter.start()
        defer { Task { await listener.stop() } }
        let capture = NoSecretsInLogsTests.Capture()
        let server = try await Self.start(ScriptedResolver(Self.resolver.answersForTests), capture: capture)
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        let key = try PrivateKeyJWTTests.AssertionKey.es256()
        var body = ClientRegistrationTests.publicApp
        body["jwks"] = ["keys": [PrivateKeyJWTTests.jsonObject(key.jwk)]]
        body["request_uris"] = ["https://req.rebind.test:\(listener.port)/request.jwt"]
        body["backchannel_logout_uri"] = "https://logout.rebind.test:\(listener.port)/logout"
        let registered = try await ClientRegistrationTests.register(server, body, token: registrar)
        #expect(registered.status == 201, "\(registered.text)")
        let clientId = try #require(try registered.string("client_id"))

        let redirected = try await RequestURITests.authorize(
            server,
            [
                "client_id": clientId, "request_uri": "https://req.rebind.test:\(listener.port)/request.jwt",
                "redirect_uri": ClientRegistrationTests.redirect, "state": "s1"
            ])
        #expect(redirected.locationQuery["error"] == "invalid_request_uri", "\(redirected.status) \(redirected.location ?? "")")
        #expect(
            redirected.locationQuery["error_description"] == "the request object at request_uri could not be fetched",
            "\(redirected.locationQuery)")

        // A sign-in to the registered application, then a logout: the notice is not delivered inside.
        let browser = TestBrowser()
        let tokens = try await server.tokens(browser, try ClientRegistrationTests.options(registered))
        _ = try await LogoutChannelsTests.logout(server, browser, idToken: try #require(tokens.idToken), redirect: false)
        await server.server.deliverBackChannelLogouts()
        #expect(listener.connections == 0, "the listener on 127.0.0.1 was reached")
        #expect(capture.all.contains { $0.contains("logout.rebind.test resolves to an internal address") }, "\(capture.all.suffix(5))")
    }

    @Test(
        "positive control: an application of the configuration file may name a loopback service (http://localhost); the fetch uses the resolved address"
    )
    func operatorApplicationsReachWhatTheyName() async throws {
        let documents = try await DocumentServer.start()
        defer { Task { await documents.stop() } }
        let key = try PrivateKeyJWTTests.AssertionKey.es256()
        try documents.set("jwks", keys: [key.jwk])
        var signer = PrivateKeyJWTTests.client([])
        signer.jwks = nil
        signer.jwksURI = "http://localhost:\(documents.port)/docs/jwks"
        let resolver = ScriptedResolver(Self.resolver.answersForTests)
        let server = try await Self.start(resolver, capture: NoSecretsInLogsTests.Capture(), more: [signer])
        defer { Task { await server.stop() } }
        let answer = try await ClientKeySetURITests.token(server, key)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(documents.hits("jwks") == 1)
        #expect(resolver.lookedUp == ["localhost"], "one lookup, through the server's resolver")
    }
}

extension ScriptedResolver {
    /// The same answers, for a fresh resolver with its own record of lookups.
    var answersForTests: [String: [String]] { answers }
}
