import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import LatchkeyServer

/// A TCP listener on a loopback port that only counts the connections it accepts (and closes them): what a service
/// inside the server's network sees of a fetch aimed at it.
final class ConnectionCounter: Sendable {
    let port: Int
    private let channel: any Channel
    private let accepted: NIOLockedValueBox<Int>

    var connections: Int { accepted.withLockedValue { $0 } }

    private init(port: Int, channel: any Channel, accepted: NIOLockedValueBox<Int>) {
        self.port = port
        self.channel = channel
        self.accepted = accepted
    }

    static func start() async throws -> ConnectionCounter {
        let accepted = NIOLockedValueBox(0)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                accepted.withLockedValue { $0 += 1 }
                return child.close()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        return ConnectionCounter(port: port, channel: channel, accepted: accepted)
    }

    func stop() async { try? await channel.close() }
}

/// Review 3, R3-5: the guard on the URLs the server fetches for registered applications (`jwks_uri`, `request_uris`,
/// back-channel logout URIs). Address literals are canonicalized as `inet_aton`/`inet_pton` read them before the
/// registration check; a host name is resolved at fetch time and refused when any of its addresses is internal, and
/// the connection goes to the address that was checked. The registrant learns only that the document could not be
/// fetched: an open port and a closed one read the same.
@Suite("Client documents: no fetch to the server's own network")
struct ClientDocumentAddressTests {
    /// Every literal form of an internal address from the review (and the IPv6 forms of the same), each refused at
    /// registration whatever its spelling.
    static let internalLiterals = [
        "127.0.0.1", "2130706433", "127.1", "0x7f000001", "017700000001", "0x7f.1", "0177.0.0.1", "127.0.1", "[::1]",
        "[0:0:0:0:0:0:0:1]", "[::127.0.0.1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]", "167772161", "10.0.0.1",
        "2852039166", "169.254.169.254", "0xa9fea9fe", "[::ffff:169.254.169.254]", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "100.64.0.1", "100.127.255.254", "0.0.0.0", "0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "[::]", "[fc00::1]",
        "[fd12:3456::1]", "[fe80::1]", "[febf::1]", "[ff02::1]", "[::ffff:10.0.0.1]", "[::10.0.0.1]", "[64:ff9b::a00:1]",
        "[2002:7f00:1::1]", "localhost", "LOCALHOST", "localhost.", "api.localhost", "api.localhost."
    ]

    /// Public addresses, in canonical and other spellings, and names: registration takes them (the fetch decides).
    static let publicHosts = [
        "93.184.216.34", "1572395042", "[2606:2800:220:1:248:1893:25c8:1946]", "[::ffff:93.184.216.34]", "100.128.0.1", "172.32.0.1",
        "signer.example", "keys.example.com."
    ]

    @Test("every literal spelling of an internal address is refused at registration (inet_aton and inet_pton forms)")
    func internalLiteralsAreRefused() {
        for host in Self.internalLiterals {
            let refusal = ClientDocumentURL.refusal(
                "https://\(host):8443/jwks", member: "jwks_uri", operatorSet: false, fragmentAllowed: false)
            #expect(refusal?.contains("loopback or private address") == true, "\(host): \(refusal ?? "accepted")")
        }
        for host in Self.publicHosts {
            let refusal = ClientDocumentURL.refusal("https://\(host)/jwks", member: "jwks_uri", operatorSet: false, fragmentAllowed: false)
            #expect(refusal == nil, "\(host): \(refusal ?? "")")
        }
        // The operator's file may still name a loopback service over http.
        #expect(ClientDocumentURL.refusal("http://127.0.0.1:8080/jwks", member: "jwks_uri", operatorSet: true, fragmentAllowed: false) == nil)
    }

    /// A `private_key_jwt` registration whose keys are at `jwksURI`.
    static func registration(jwksURI: String) throws -> [String: Any] {
        var body = PrivateKeyJWTTests.registration(try PrivateKeyJWTTests.AssertionKey.es256())
        body["jwks"] = nil
        body["jwks_uri"] = jwksURI
        return body
    }

    /// What the registrant learns of `jwksURI`: the registration's refusal, or, once registered, the `error_description`
    /// of a client-credentials request whose assertion makes the server fetch the keys.
    static func registrantSees(_ server: TestServer, jwksURI: String, registrar: String) async throws -> String {
        let registered = try await ClientRegistrationTests.register(server, try Self.registration(jwksURI: jwksURI), token: registrar)
        guard registered.status == 201 else {
            let why: String? = try? registered.string("error_description")
            return "registration \(registered.status): \(why ?? "")"
        }
        let clientId = try #require(try registered.string("client_id"))
        let key = try PrivateKeyJWTTests.AssertionKey.es256()
        let answer = try await PrivateKeyJWTTests.token(
            server, assertion: try key.assertion(PrivateKeyJWTTests.claims(server, client: clientId, now: server.server.clock.now)))
        #expect(answer.status == 401, "\(answer.text)")
        return "token \(answer.status): " + ((try? answer.json()["error_description"] as? String) ?? answer.text)
    }

    @Test("a jwks_uri whose host name resolves to 127.0.0.1 (localhost. with a trailing dot): no connection, and an open port reads as a closed one")
    func aNameResolvingToLoopbackIsNotFetched() async throws {
        let listener = try await ConnectionCounter.start()
        defer { Task { await listener.stop() } }
        let server = try await PrivateKeyJWTTests.startForRegistration()
        defer { Task { await server.stop() } }
        let registrar = try await server.clientToken(scope: "registration")
        // Port 9 (discard) on loopback: nothing listens there (servers of the suite bind ephemeral ports).
        let open = try await Self.registrantSees(server, jwksURI: "https://localhost.:\(listener.port)/jwks", registrar: registrar)
        let closed = try await Self.registrantSees(server, jwksURI: "https://localhost.:9/jwks", registrar: registrar)
        #expect(listener.connections == 0, "the listener was reached: \(open)")
        // A refusal at registration repeats the URL: the port aside, the two must read the same.
        #expect(open.replacingOccurrences(of: ":\(listener.port)/", with: ":9/") == closed, "open: \(open) / closed: \(closed)")
        // The literal spellings of loopback are refused before any fetch, whatever the port.
        for host in ["2130706433", "127.1", "0x7f000001", "017700000001", "[0:0:0:0:0:0:0:1]", "[::127.0.0.1]"] {
            let seen = try await Self.registrantSees(server, jwksURI: "https://\(host):\(listener.port)/jwks", registrar: registrar)
            #expect(seen.hasPrefix("registration 400"), "\(host): \(seen)")
        }
        #expect(listener.connections == 0)
    }
}
