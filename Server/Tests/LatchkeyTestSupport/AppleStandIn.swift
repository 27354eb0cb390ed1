import Crypto
import Foundation
import Hummingbird
import LatchkeyJOSE
import Logging
import LatchkeyServer

/// A stand-in for Apple's identity service: its own RS256 key, published at `/auth/keys` on a loopback port, and
/// identity tokens shaped like Apple's (`iss`, `aud` = bundle id, `sub`, `nonce`, `email`, `email_verified` as a
/// string). The server under test is pointed at it through `AppleSettings`.
package final class AppleStandIn: Sendable {
    package static let issuer = "https://appleid.apple.com"
    package let key: SigningKey
    package let port: Int
    private let service: GracefulService

    package var jwksURL: URL { URL(string: "http://127.0.0.1:\(port)/auth/keys") ?? URL(fileURLWithPath: "/") }

    package static func start() async throws -> AppleStandIn {
        let key = try SigningKey.generate(.rs256)
        let jwks = try JSONEncoder().encode(JWKSet(keys: [try key.publicJWK()]))
        let router = Router()
        router.get("/auth/keys") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: jwks)))
        }
        let (port, service) = try await GracefulService.serve(router, label: "stand-in Apple issuer")
        return AppleStandIn(key: key, port: port, service: service)
    }

    private init(key: SigningKey, port: Int, service: GracefulService) { self.key = key; self.port = port; self.service = service }

    package func stop() async { await service.stop() }

    struct Claims: Encodable {
        var iss = AppleStandIn.issuer
        var aud: String
        var sub: String
        var iat: Int
        var exp: Int
        var nonce: String?
        var email: String?
        var email_verified: String?
    }

    /// An identity token for `bundleId` whose nonce is S256 of `verifier` (what the app put in Apple's request).
    package func identityToken(
        sub: String, bundleId: String, verifier: String?, email: String?, emailVerified: Bool = true,
        issuedAt: Date = Date(), lifetime: TimeInterval = 600, signer: SigningKey? = nil, issuer: String = AppleStandIn.issuer
    ) throws -> String {
        try identityToken(
            sub: sub, bundleId: bundleId, nonceClaim: verifier.map { Base64URL.encode(Data(SHA256.hash(data: Data($0.utf8)))) },
            email: email, emailVerified: emailVerified, issuedAt: issuedAt, lifetime: lifetime, signer: signer, issuer: issuer)
    }

    /// An identity token whose `nonce` claim is exactly `nonceClaim` (what the app passed to Apple).
    package func identityToken(
        sub: String, bundleId: String, nonceClaim nonce: String?, email: String?, emailVerified: Bool = true,
        issuedAt: Date = Date(), lifetime: TimeInterval = 600, signer: SigningKey? = nil, issuer: String = AppleStandIn.issuer
    ) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims = Claims(
            iss: issuer, aud: bundleId, sub: sub, iat: iat, exp: iat + Int(lifetime), nonce: nonce, email: email,
            email_verified: email == nil ? nil : (emailVerified ? "true" : "false"))
        return try (signer ?? key).sign(claims: claims, type: nil)
    }
}

extension TestServer {
    /// The demo application accepting Sign in with Apple tokens for `bundleId`, pointed at `apple`'s keys.
    package static func startForNativeLogin(
        bundleId: String, apple: AppleStandIn? = nil, databasePath: String? = nil, frozenClock: Bool = false,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        try await start(databasePath: databasePath, frozenClock: frozenClock) { configuration in
            configuration.clients = configuration.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.appleBundleIds = [bundleId] }
                return client
            }
            if let apple { configuration.apple.jwksURL = apple.jwksURL }
            configure(&configuration)
        }
    }
}

extension TestServer {
    /// A nonce for a native provider sign-in of `clientId`, from `POST /identity/v1/native-nonce` (the server's, as
    /// the SDK gets it: a token must carry it or its SHA-256).
    package func nativeNonce(clientId: String = "latchkey-demo") async throws -> String {
        let answer = try await TestBrowser().postJSON(base + "/identity/v1/native-nonce", ["client_id": clientId])
        guard answer.status == 200, let nonce = try answer.json()["nonce"] as? String else {
            throw TestFailure("no native sign-in nonce: \(answer.status) \(answer.text)")
        }
        return nonce
    }

    /// Sign in with Apple as the SDK sends it (`/oauth/authorize?provider=apple&id_token=…&nonce=<server nonce>`) with
    /// a token of `issuer` for `sub`/`email` (its `nonce` the S256 of the server's); returns the redirect back to the app.
    package func appleSignIn(_ issuer: AppleStandIn, sub: String, email: String, bundleId: String) async throws -> HTTPResult {
        let verifier = try await nativeNonce()
        let token = try issuer.identityToken(sub: sub, bundleId: bundleId, verifier: verifier, email: email)
        var o = AuthorizeOptions()
        o.nonce = verifier
        o.extra = ["provider": "apple", "id_token": token]
        return try await TestBrowser().get(authorizeURL(o).replacingOccurrences(of: "/oauth2/authorize", with: "/oauth/authorize"))
    }

    /// A test server whose demo application requires MFA.
    package static func startRequiringMFA() async throws -> TestServer {
        try await start { config in
            config.clients = config.clients.map { client in
                var client = client
                if client.clientId == "latchkey-demo" { client.requireMFA = true }
                return client
            }
        }
    }
}
