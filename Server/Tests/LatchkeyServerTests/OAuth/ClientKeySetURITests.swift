import Foundation
import Hummingbird
import LatchkeyJOSE
import LatchkeyTestSupport
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import LatchkeyServer

/// An application's web server on a loopback port: answers `GET /docs/{name}` with the document set for that name
/// (404 when there is none) and counts the requests for each name.
final class DocumentServer: Sendable {
    struct Document: Sendable {
        var status = 200
        var body = Data()
        var location: String?
        var contentType = "application/json"
        /// Sent in chunks of 16 KiB without a `Content-Length`, so only the bytes as they come tell its size.
        var chunked = false
    }

    let port: Int
    private let service: GracefulService
    private let state: NIOLockedValueBox<(documents: [String: Document], hits: [String: Int])>

    var base: String { "http://127.0.0.1:\(port)" }
    func url(_ name: String) -> String { base + "/docs/" + name }
    /// How many requests `name` received.
    func hits(_ name: String) -> Int { state.withLockedValue { $0.hits[name] ?? 0 } }
    var totalHits: Int { state.withLockedValue { $0.hits.values.reduce(0, +) } }

    func set(_ name: String, _ document: Document) { state.withLockedValue { $0.documents[name] = document } }
    func set(_ name: String, text: String, contentType: String = "application/json") {
        set(name, Document(body: Data(text.utf8), contentType: contentType))
    }
    func set(_ name: String, keys: [JWK]) throws {
        set(name, Document(body: try JSONEncoder().encode(JWKSet(keys: keys))))
    }

    private init(port: Int, service: GracefulService, state: NIOLockedValueBox<(documents: [String: Document], hits: [String: Int])>) {
        self.port = port
        self.service = service
        self.state = state
    }

    static func start() async throws -> DocumentServer {
        let state = NIOLockedValueBox<(documents: [String: Document], hits: [String: Int])>(([:], [:]))
        let router = Router()
        router.get("/docs/:name") { _, context -> Response in
            let name = context.parameters.get("name") ?? ""
            let document = state.withLockedValue { state -> Document? in
                state.hits[name, default: 0] += 1
                return state.documents[name]
            }
            guard let document else { return Response(status: .notFound) }
            var fields = HTTPFields()
            fields[.contentType] = document.contentType
            if let location = document.location { fields[.location] = location }
            guard document.chunked else {
                return Response(
                    status: .init(code: document.status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: document.body)))
            }
            let body = document.body
            return Response(
                status: .init(code: document.status), headers: fields,
                body: ResponseBody { writer in
                    var offset = 0
                    while offset < body.count {
                        let end = min(offset + 16 * 1024, body.count)
                        try await writer.write(ByteBuffer(bytes: body[offset..<end]))
                        offset = end
                    }
                    try await writer.finish(nil)
                })
        }
        let (port, service) = try await GracefulService.serve(router, label: "test.client-documents")
        return DocumentServer(port: port, service: service, state: state)
    }

    func stop() async { await service.stop() }
}

/// `jwks_uri` (RFC 7591 §2, OpenID Connect Core §10.1.1): a `private_key_jwt` application publishes its keys at a URL
/// instead of registering them by value; the server fetches the set (5 s, 64 KiB, no redirect), keeps it 5 minutes,
/// fetches it again for an unknown `kid` at most every 30 s, and refuses the assertion (`invalid_client`,
/// `keys_unavailable`) when the set cannot be had. Time moves with the server's clock, never by sleeping.
@Suite("jwks_uri: client keys fetched by URL")
struct ClientKeySetURITests {
    typealias Key = PrivateKeyJWTTests.AssertionKey
    static let clientId = PrivateKeyJWTTests.clientId

    /// The `private_key_jwt` client `signer` with its keys at `documents`' `jwks`.
    static func start(_ documents: DocumentServer, change: @escaping @Sendable (inout ClientConfiguration) -> Void = { _ in })
        async throws -> TestServer
    {
        var signer = PrivateKeyJWTTests.client([])
        signer.jwks = nil
        signer.jwksURI = documents.url("jwks")
        change(&signer)
        // The clock moves only when a test moves it: "at most one fetch per 30 s" must not depend on how long five
        // requests take on a busy machine.
        return try await TestServer.start(frozenClock: true) { [signer] configuration in configuration.clients.append(signer) }
    }

    /// Runs `body` with an application's web server publishing `keys` at `jwks` and a server whose `signer` takes its
    /// keys from there.
    static func withKeysAtURI(_ keys: [Key], _ body: (DocumentServer, TestServer) async throws -> Void) async throws {
        let documents = try await DocumentServer.start()
        defer { Task { await documents.stop() } }
        try documents.set("jwks", keys: keys.map(\.jwk))
        let server = try await Self.start(documents)
        defer { Task { await server.stop() } }
        try await body(documents, server)
    }

    /// A client-credentials request with an assertion signed by `key`, made at the server's time.
    static func token(_ server: TestServer, _ key: Key) async throws -> HTTPResult {
        try await PrivateKeyJWTTests.token(server, assertion: try key.assertion(PrivateKeyJWTTests.claims(server, now: server.server.clock.now)))
    }

    @Test("oidcc-server (private_key_jwt, jwks_uri): assertions verify with the fetched set, kept 5 minutes, then fetched again")
    func assertionsVerifyWithTheFetchedSet() async throws {
        let key = try Key.es256()
        try await Self.withKeysAtURI([key]) { documents, server in
            #expect(documents.hits("jwks") == 0, "nothing is fetched before it is needed")
            let first = try await Self.token(server, key)
            #expect(first.status == 200, "\(first.text)")
            #expect(try await Self.token(server, key).status == 200)
            #expect(documents.hits("jwks") == 1, "the set is kept")
            server.advanceClock(ClientKeySetCache.lifetimeSeconds + 1)
            #expect(try await Self.token(server, key).status == 200)
            #expect(documents.hits("jwks") == 2, "fetched again once it is older than 5 minutes")
        }
    }

    @Test("a key rotated at the jwks_uri (a new kid) is found by fetching the set again; the old key is refused")
    func rotatedKeyIsPickedUp() async throws {
        let old = try Key.es256(kid: "es-1")
        let new = try Key.es256(kid: "es-2")
        try await Self.withKeysAtURI([old]) { documents, server in
            #expect(try await Self.token(server, old).status == 200)
            try documents.set("jwks", keys: [new.jwk])
            server.advanceClock(ClientKeySetCache.refetchSeconds + 1)
            let rotated = try await Self.token(server, new)
            #expect(rotated.status == 200, "\(rotated.text)")
            #expect(documents.hits("jwks") == 2)
            try PrivateKeyJWTTests.expectRefused(try await Self.token(server, old), "no registered key")
            #expect(documents.hits("jwks") == 2, "a refetch at most every 30 s")
        }
    }

    @Test(
        "fapi2-security-profile-final-ensure-client-assertion-signed-by-unregistered-key-fails (with jwks_uri): unknown kids cost at most one fetch per 30 s"
    )
    func unknownKidsAreRateLimited() async throws {
        let key = try Key.es256()
        try await Self.withKeysAtURI([key]) { documents, server in
            #expect(try await Self.token(server, key).status == 200)
            #expect(documents.hits("jwks") == 1)
            server.advanceClock(ClientKeySetCache.refetchSeconds + 1)
            for index in 0..<5 {
                let forged = try Key.es256(kid: "forged-\(index)")
                try PrivateKeyJWTTests.expectRefused(try await Self.token(server, forged), "no registered key")
            }
            #expect(documents.hits("jwks") == 2, "five unknown kids, one fetch")
            server.advanceClock(ClientKeySetCache.refetchSeconds + 1)
            try PrivateKeyJWTTests.expectRefused(try await Self.token(server, try Key.es256(kid: "forged-again")), "no registered key")
            #expect(documents.hits("jwks") == 3)
            #expect(try await Self.token(server, key).status == 200, "the registered key still works")
            #expect(documents.hits("jwks") == 3)
        }
    }

    @Test(
        "an unreachable, oversized (announced or not), redirecting, missing, unreadable or private jwks_uri, or RSA keys under fapi2, refuse the assertion (keys_unavailable); why a fetch failed is only in the log"
    )
    func unusableSetsAreRefused() async throws {
        let capture = NoSecretsInLogsTests.Capture()
        let documents = try await DocumentServer.start()
        defer { Task { await documents.stop() } }
        // Port 9 (discard) on loopback: nothing listens there, and no server of the suite gets it (they bind port 0, in
        // the ephemeral range). A stopped server's port would not do: another server of the suite may take it meanwhile.
        let closedURL = "http://127.0.0.1:9/jwks"
        let key = try Key.es256()
        try documents.set("good", keys: [key.jwk])
        var withPrivate = PrivateKeyJWTTests.jsonObject(key.jwk)
        withPrivate["d"] = "c2VjcmV0"
        let cases: [(String, DocumentServer.Document?, String)] = [
            ("oversized", .init(body: Data(repeating: 0x20, count: ClientDocumentFetcher.maximumBytes + 1)), "more than 64 KiB"),
            (
                "oversized, no length", .init(body: Data(repeating: 0x20, count: 4 * ClientDocumentFetcher.maximumBytes), chunked: true),
                "more than 64 KiB"
            ),
            ("RSA under fapi2", .init(body: try JSONEncoder().encode(JWKSet(keys: [try Key.rs256().jwk]))), "only EC P-256 or Ed25519"),
            ("redirect", .init(status: 302, location: documents.url("good")), "answered 302 (redirects are not followed)"),
            ("missing", nil, "answered 404"),
            ("not JSON", .init(body: Data("keys".utf8)), "is not JSON"),
            ("private key", .init(body: try JSONSerialization.data(withJSONObject: ["keys": [withPrivate]])), "private member d")
        ]
        // Each case is its own application, whose jwks_uri is the case's document.
        let server = try await TestServer.start(logger: capture.logger("server")) { configuration in
            for (index, (name, _, _)) in cases.enumerated() {
                var client = PrivateKeyJWTTests.client([], id: "case-\(index)")
                client.jwks = nil
                client.jwksURI = documents.url("case-\(index)")
                if name.hasSuffix("fapi2") {
                    client.adoptFAPI2()
                    client.grantTypes = [.clientCredentials]
                }
                configuration.clients.append(client)
            }
            var unreachable = PrivateKeyJWTTests.client([], id: "unreachable")
            unreachable.jwks = nil
            unreachable.jwksURI = closedURL
            configuration.clients.append(unreachable)
        }
        defer { Task { await server.stop() } }
        func attempt(_ client: String) async throws -> HTTPResult {
            try await PrivateKeyJWTTests.token(
                server, assertion: try key.assertion(PrivateKeyJWTTests.claims(server, client: client, now: server.server.clock.now)))
        }
        for (index, (name, document, reason)) in cases.enumerated() {
            if let document { documents.set("case-\(index)", document) }
            let answer = try await attempt("case-\(index)")
            try PrivateKeyJWTTests.expectRefused(answer, "could not be fetched from its jwks_uri")
            // What the document said is the application's to know; how the fetch failed (status, size, redirect) is
            // only in the server's log (review 3, R3-5: the answers must not map the network behind the server).
            let fetchFailure = ["more than 64 KiB", "answered 302 (redirects are not followed)", "answered 404"].contains(reason)
            #expect(answer.text.contains(reason) == !fetchFailure, "\(name): \(answer.text)")
            #expect(!fetchFailure || capture.all.contains { $0.contains(reason) }, "\(name): the log says why")
            #expect(try await PrivateKeyJWTTests.lastRefusal(server).details["reason"] == "keys_unavailable", "\(name)")
        }
        #expect(documents.hits("good") == 0, "the redirect was not followed")
        try PrivateKeyJWTTests.expectRefused(try await attempt("unreachable"), "could not be fetched")
        #expect(capture.all.contains { $0.contains("127.0.0.1 cannot be reached") }, "\(capture.all.suffix(3))")

        // A failure is remembered for 30 s: no fetch meanwhile, then one more try (which now succeeds).
        let missing = "case-\(try #require(cases.firstIndex { $0.0 == "missing" }))"
        let before = documents.hits(missing)
        try documents.set(missing, keys: [key.jwk])
        try PrivateKeyJWTTests.expectRefused(try await attempt(missing), "could not be fetched")
        #expect(documents.hits(missing) == before)
        server.advanceClock(ClientKeySetCache.refetchSeconds + 1)
        let retried = try await attempt(missing)
        #expect(retried.status == 200, "\(retried.text)")
        #expect(documents.hits(missing) == before + 1)
    }

    @Test("start-up refuses jwks with jwks_uri, a non-loopback http, userinfo or fragment jwks_uri, and request_uris without keys or with PAR")
    func configurationRules() throws {
        let https = "https://signer.example/jwks.json"
        func refusal(_ change: (inout ClientConfiguration) -> Void) -> String? {
            var client = PrivateKeyJWTTests.client([])
            client.jwks = nil
            client.jwksURI = https
            change(&client)
            do { try client.validate() } catch let ConfigurationError.invalid(why) { return why } catch { return "\(error)" }
            return nil
        }
        #expect(refusal { _ in } == nil)
        #expect(refusal { $0.jwksURI = "http://127.0.0.1:8080/jwks" } == nil, "loopback http from the file")
        let key = try Key.es256()
        #expect(refusal { $0.jwks = JWKSet(keys: [key.jwk]) }?.contains("register jwks or jwks_uri, not both") == true)
        #expect(refusal { $0.jwksURI = "http://signer.example/jwks" }?.contains("not loopback") == true)
        #expect(refusal { $0.jwksURI = "https://user:pw@signer.example/jwks" }?.contains("user information") == true)
        #expect(refusal { $0.jwksURI = "https://signer.example/jwks#keys" }?.contains("has a fragment") == true)
        #expect(refusal { $0.jwksURI = "/jwks" }?.contains("not an absolute URL") == true)
        #expect(refusal { $0.jwksURI = nil }?.contains("register its public keys as jwks") == true)
        #expect(
            refusal {
                $0.tokenEndpointAuthMethod = .clientSecretBasic; $0.clientSecret = String(repeating: "s", count: 20)
            } == nil, "any client may publish keys for its request objects")
        #expect(refusal { $0.requestURIs = ["https://signer.example/request#v1"] } == nil)
        #expect(refusal { $0.requestURIs = ["ftp://signer.example/request"] }?.contains("must be an https URL") == true)
        #expect(
            refusal {
                $0.requestURIs = ["https://signer.example/r"]; $0.requirePushedAuthorizationRequests = true
            }?.contains("require_pushed") == true)
        var keyless = ClientConfiguration(clientId: "plain", redirectUris: ["http://127.0.0.1/cb"])
        keyless.requestURIs = ["https://plain.example/r"]
        #expect(throws: ConfigurationError.self) { try keyless.validate() }
    }

    @Test("the configuration's jwks_uri and request_uris survive the store (client records hold the configuration as JSON)")
    func storedConfigurationKeepsTheURLs() throws {
        var client = PrivateKeyJWTTests.client([])
        client.jwks = nil
        client.jwksURI = "https://signer.example/jwks.json"
        client.requestURIs = ["https://signer.example/r#1"]
        let json = try JSONEncoder().encode(client)
        #expect(try JSONDecoder().decode(ClientConfiguration.self, from: json) == client)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"jwks_uri\"") && text.contains("\"request_uris\""))
        // A record written before these settings existed reads as before.
        let plain = try JSONEncoder().encode(PrivateKeyJWTTests.client([try Key.es256().jwk]))
        let decoded = try JSONDecoder().decode(ClientConfiguration.self, from: plain)
        #expect(decoded.jwksURI == nil && decoded.requestURIs.isEmpty)
        #expect(!String(decoding: plain, as: UTF8.self).contains("request_uris"))
    }

    @Test("dynamic registration: an https jwks_uri and request_uris are registered and shown; http ones are refused")
    func registration() async throws {
        let server = try await PrivateKeyJWTTests.startForRegistration()
        defer { Task { await server.stop() } }
        let initial = try await server.clientToken(scope: "registration")
        var body = PrivateKeyJWTTests.registration(try Key.es256())
        body["jwks"] = nil
        body["jwks_uri"] = "https://batch.example/jwks.json"
        body["request_uris"] = ["https://batch.example/request.jwt#v1"]
        let registered = try await ClientRegistrationTests.register(server, body, token: initial)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(try registered.string("jwks_uri") == "https://batch.example/jwks.json")
        #expect(try registered.value("request_uris") as? [String] == ["https://batch.example/request.jwt#v1"])
        #expect(try registered.value("jwks") == nil)
        let read = try await ClientRegistrationTests.manage(server, "GET", registered)
        #expect(try read.string("jwks_uri") == "https://batch.example/jwks.json")

        for (member, value) in [
            ("jwks_uri", "http://127.0.0.1:9/jwks.json" as Any), ("request_uris", ["http://127.0.0.1:9/r"] as Any),
            ("jwks_uri", "https://batch.example/jwks#x" as Any), ("request_uris", ["https://u:p@batch.example/r"] as Any)
        ] {
            var refused = body
            refused[member] = value
            let answer = try await ClientRegistrationTests.register(server, refused, token: initial)
            #expect(answer.status == 400, "\(member) \(value): \(answer.text)")
            #expect(try answer.string("error") == "invalid_client_metadata")
            #expect((try answer.string("error_description") ?? "").hasPrefix(member), "\(answer.text)")
        }
    }
}
