import Foundation
import LatchkeyJOSE
import LatchkeyTestSupport
import Logging
import Testing

@testable import LatchkeyServer

/// Request objects by reference (RFC 9101 §5.2, OpenID Connect Core §6.2): an authorization request's `request_uri`
/// naming one of the client's registered `request_uris` is fetched from the client's web server (a loopback
/// `DocumentServer` here) and is the request; any other `request_uri` is refused with `invalid_request_uri` and never
/// fetched. The cases follow the conformance suite's `oidcc-request-uri-*` modules, named at each.
@Suite("request_uri by reference (RFC 9101 §5.2)")
struct RequestURITests {
    typealias Key = PrivateKeyJWTTests.AssertionKey
    static let clientId = PrivateKeyJWTTests.clientId
    static let redirect = PrivateKeyJWTTests.redirect

    /// The `private_key_jwt` client `signer` with `key` and the registered request URI `documents`' `request`, and the
    /// FAPI-like `pushy` that requires PAR.
    static func start(_ documents: DocumentServer, key: Key, keysByURI: Bool = false, logger: Logger? = nil) async throws -> TestServer {
        var signer = PrivateKeyJWTTests.client([key.jwk])
        signer.requestURIs = [documents.url("request")]
        if keysByURI {
            signer.jwks = nil
            signer.jwksURI = documents.url("jwks")
        }
        var pushy = PrivateKeyJWTTests.client([key.jwk], id: "pushy")
        pushy.requirePushedAuthorizationRequests = true
        return try await TestServer.start(logger: logger) { [signer, pushy] configuration in configuration.clients += [signer, pushy] }
    }

    /// Runs `body` with the client's web server and the test server (`start`).
    static func withRequestURI(
        key: Key, keysByURI: Bool = false, logger: Logger? = nil, _ body: (DocumentServer, TestServer) async throws -> Void
    ) async throws {
        let documents = try await DocumentServer.start()
        defer { Task { await documents.stop() } }
        if keysByURI { try documents.set("jwks", keys: [key.jwk]) }
        let server = try await Self.start(documents, key: key, keysByURI: keysByURI, logger: logger)
        defer { Task { await server.stop() } }
        try await body(documents, server)
    }

    static func authorize(_ server: TestServer, _ parameters: [String: String], browser: TestBrowser = TestBrowser()) async throws -> HTTPResult {
        try await browser.get(server.base + "/oauth2/authorize?" + TestBrowser.formEncode(parameters))
    }

    @Test("oidcc-request-uri-signed-rs256 and discovery: a registered request_uri is fetched and is the request, to a code and tokens")
    func aRegisteredRequestURIIsTheRequest() async throws {
        let key = try Key.rs256()
        try await Self.withRequestURI(key: key) { documents, server in
            let discovery = try await TestBrowser().get(server.base + "/.well-known/openid-configuration").json()
            #expect(discovery["request_uri_parameter_supported"] as? Bool == true)
            #expect(discovery["require_request_uri_registration"] as? Bool == true)

            let o = RequestObjectTests.options()
            documents.set("request", text: try RequestObjectTests.object(server, o, key: key), contentType: "application/oauth-authz-req+jwt")
            let browser = TestBrowser()
            // The fragment is not part of the comparison (OpenID Connect Core §6.2); the outer state is not the request's.
            let start = try await Self.authorize(
                server, ["client_id": Self.clientId, "request_uri": documents.url("request") + "#v2", "state": "outer"], browser: browser)
            #expect(documents.hits("request") == 1)
            try await RequestObjectTests.signInAndRedeem(server, browser, start: start, o, key: key)
        }
    }

    @Test("a request object at a request_uri verifies with keys at the client's jwks_uri")
    func keysByReferenceToo() async throws {
        let key = try Key.es256()
        try await Self.withRequestURI(key: key, keysByURI: true) { documents, server in
            let o = RequestObjectTests.options()
            documents.set("request", text: try RequestObjectTests.object(server, o, key: key))
            let callback = try await server.browse(
                try #require(
                    URL(string: PushedAuthorizationTests.authorizeURL(server, requestURI: documents.url("request"), clientId: Self.clientId))))
            let query = URLComponents(url: callback, resolvingAgainstBaseURL: false)?.queryItems ?? []
            #expect(query.first { $0.name == "state" }?.value == o.state)
            #expect(query.first { $0.name == "code" } != nil)
            #expect(documents.hits("jwks") == 1 && documents.hits("request") == 1)
        }
    }

    @Test("an unregistered request_uri is refused with invalid_request_uri and never fetched")
    func anUnregisteredRequestURIIsNotFetched() async throws {
        let key = try Key.es256()
        try await Self.withRequestURI(key: key) { documents, server in
            let o = RequestObjectTests.options()
            documents.set("elsewhere", text: try RequestObjectTests.object(server, o, key: key))
            // With the client's registered redirect URI: the error goes back there.
            let redirected = try await Self.authorize(
                server, ["client_id": Self.clientId, "request_uri": documents.url("elsewhere"), "redirect_uri": Self.redirect, "state": "s1"])
            #expect(redirected.status == 302 && redirected.location?.hasPrefix(Self.redirect) == true, "\(redirected.status)")
            #expect(redirected.locationQuery["error"] == "invalid_request_uri")
            #expect(redirected.locationQuery["state"] == "s1")
            // Without one: the error page. A look-alike of the registered URL (another path, a query) is not it either.
            for uri in [documents.url("elsewhere"), documents.url("request") + "?x=1", documents.url("request/more")] {
                let page = try await Self.authorize(server, ["client_id": Self.clientId, "request_uri": uri])
                #expect(page.status == 400 && page.location == nil, "\(uri): \(page.status)")
            }
            // A client with no request_uris, and one that requires PAR (FAPI 2.0), whose request_uri must be a pushed one.
            for client in ["latchkey-demo", "pushy"] {
                let page = try await Self.authorize(server, ["client_id": client, "request_uri": documents.url("request")])
                #expect(page.status == 400 && page.location == nil, "\(client): \(page.status)")
            }
            #expect(documents.totalHits == 0, "nothing was fetched")
        }
    }

    @Test("oidcc-request-uri-unsigned: an unsigned (alg none) request object at a registered request_uri is refused")
    func anUnsignedObjectIsRefused() async throws {
        let key = try Key.es256()
        try await Self.withRequestURI(key: key) { documents, server in
            let claims = try RequestObjectTests.object(server, RequestObjectTests.options(), key: key).split(separator: ".")[1]
            documents.set("request", text: Base64URL.encode(Data(#"{"alg":"none"}"#.utf8)) + "." + claims + ".")
            let answer = try await Self.authorize(server, ["client_id": Self.clientId, "request_uri": documents.url("request")])
            #expect(answer.status == 400 && answer.location == nil, "\(answer.status) \(answer.location ?? "")")
            #expect(documents.hits("request") == 1)
            // Signed by a key the client never registered: refused the same way.
            documents.set("request", text: try RequestObjectTests.object(server, RequestObjectTests.options(), key: try Key.es256(kid: "other")))
            #expect(try await Self.authorize(server, ["client_id": Self.clientId, "request_uri": documents.url("request")]).status == 400)
        }
    }

    @Test(
        "a registered request_uri that answers 404, a redirect or too much is invalid_request_uri, saying only that it could not be fetched (the reason is logged); a redirect is not followed"
    )
    func fetchFailuresAreInvalidRequestURI() async throws {
        let key = try Key.es256()
        let capture = NoSecretsInLogsTests.Capture()
        try await Self.withRequestURI(key: key, logger: capture.logger("server")) { documents, server in
            documents.set("target", text: try RequestObjectTests.object(server, RequestObjectTests.options(), key: key))
            let cases: [(String, DocumentServer.Document?, String)] = [
                ("missing", nil, "answered 404"),
                ("redirect", .init(status: 303, location: documents.url("target")), "redirects are not followed"),
                ("oversized", .init(body: Data(repeating: 0x41, count: ClientDocumentFetcher.maximumBytes + 1)), "more than 64 KiB")
            ]
            for (name, document, reason) in cases {
                if let document { documents.set("request", document) }
                let answer = try await Self.authorize(
                    server, ["client_id": Self.clientId, "request_uri": documents.url("request"), "redirect_uri": Self.redirect, "state": name])
                #expect(answer.locationQuery["error"] == "invalid_request_uri", "\(name): \(answer.status) \(answer.location ?? "")")
                // The redirect URI learns that the fetch failed, never why (review 3, R3-5: no port oracle); the log knows.
                #expect(
                    answer.locationQuery["error_description"] == "the request object at request_uri could not be fetched",
                    "\(name): \(answer.location ?? "")")
                #expect(capture.all.contains { $0.contains("could not be fetched") && $0.contains(reason) }, "\(name): \(capture.all.suffix(3))")
                #expect(answer.locationQuery["state"] == name)
            }
            #expect(documents.hits("request") == 3 && documents.hits("target") == 0)
        }
    }
}
