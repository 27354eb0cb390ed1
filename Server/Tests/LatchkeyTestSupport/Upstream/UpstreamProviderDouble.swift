import Crypto
import Foundation
import Hummingbird
import LatchkeyJOSE
import NIOConcurrencyHelpers

/// An upstream identity provider on a loopback port, for the server's federation (issue 27) to sign in against: one
/// person (`user`), one client (`clientId`/`clientSecret`), an authorization endpoint that approves at once (no login
/// page) and a token endpoint, in one of five flavors with the quirks of the provider it stands for:
/// - `.oidc`: a generic OpenID provider; discovery at `{base}/.well-known/openid-configuration`, endpoints `/authorize`,
///   `/token`, `/jwks`, `/userinfo`; the authorization response carries `iss` (RFC 9207).
/// - `.google`: the same layout (the preset's `authority` is `base`, the issuer), with Google's extra redirect
///   parameters (`scope`, `authuser`, `prompt`) and an `azp` claim.
/// - `.microsoft(tenantId:)`: discovery at `{base}/{tenant}/v2.0/.well-known/openid-configuration` for `common`,
///   `organizations` and the tenant id; for the first two the metadata's `issuer` is Microsoft's multi-tenant template
///   `{base}/{tenantid}/v2.0` (the braces literally), for the tenant id it is `{base}/<tenantId>/v2.0`. Endpoints are
///   Microsoft's, under the tenant: `/{tenant}/oauth2/v2.0/authorize`, `/{tenant}/oauth2/v2.0/token`,
///   `/{tenant}/discovery/v2.0/keys`; userinfo at `/oidc/userinfo`. ID tokens carry `tid` and `iss` = `{base}/<tid>/v2.0`.
///   No `iss` on the authorization response unless `sendsIss` is switched on.
/// - `.github`: plain OAuth 2.0. `/login/oauth/authorize` (no `response_type` needed), `POST /login/oauth/access_token`
///   answering JSON only to `Accept: application/json` (else a form-encoded body) and every error with HTTP 200
///   `{"error":…}`; the REST API at `{base}/api`: `/user` (`id` a JSON number, `email` null) and `/user/emails` (needs the
///   `user:email` or `user` scope, else 404 as GitHub does), both with `Authorization: Bearer|token …` and, by
///   default, a `User-Agent` header (GitHub answers 403 without one). No ID token, no nonce.
/// - `.apple(teamId:keyId:publicKey:)`: `/auth/authorize` with `response_mode=form_post` answers 200 with an HTML form
///   posting `code`, `state` and, on the person's first authorization of this client, `user` =
///   `{"name":{"firstName","lastName"},"email"}` to the redirect URI (without form_post it redirects with a query, and
///   refuses with 400 when the scope asks for `name` or `email`); a refusal posts `error=user_cancelled_authorize`.
///   `POST /auth/token` takes `client_secret` = an ES256 JWT that must verify with `publicKey` (header kid = keyId; iss =
///   teamId, sub = client id, aud = `https://appleid.apple.com`, exp in the future and at most 15777000 s after iat);
///   keys at `/auth/keys`; `POST /auth/revoke` revokes a refresh token it issued (same client authentication). ID tokens have `email_verified` and `is_private_email` as strings, and no name.
///
/// Common to all: the authorization request must name the client, a redirect URI (the registered one when
/// `Behavior.registeredRedirectURI` is set) and `response_type=code`; a `code_challenge` must use S256; the OpenID flavors
/// require the `openid` scope. The code is single use, bound to the redirect URI, the challenge and the nonce. The token
/// endpoint checks the client (client_secret_basic or client_secret_post for the OpenID flavors, as
/// `Behavior.tokenEndpointAuthMethods` allows; the secret in the form for GitHub; the JWT for Apple), the code, the
/// redirect URI, and the PKCE verifier (required when a challenge was sent, refused when none was). ID tokens are RS256
/// with the `kid` of the key at the JWKS. `Behavior` switches on the failures the negative tests need.
package final class UpstreamProviderDouble: Sendable {
    /// Which provider the double stands for.
    ///
    /// `@unchecked`: swift-crypto 3.x does not mark `P256.Signing.PublicKey` `Sendable` on Linux although it is an
    /// immutable value; nothing else in here is unchecked.
    package enum Flavor: @unchecked Sendable {
        case oidc
        case google
        case microsoft(tenantId: String)
        case github
        /// Sign in with Apple for the web: `publicKey` is the public half of the team's key `keyId` (the `.p8` file).
        case apple(teamId: String, keyId: String, publicKey: P256.Signing.PublicKey)
    }

    /// The person who signs in upstream (whoever opens the authorization endpoint is them).
    package struct User: Sendable, Equatable {
        /// The subject; for GitHub, the numeric user id (sent as a JSON number).
        package var sub: String
        package var email: String?
        package var emailVerified: Bool
        package var name: String?
        package var givenName: String?
        package var familyName: String?
        /// The `amr` claim of the ID token (say `["pwd", "mfa"]`); nil: no `amr` claim.
        package var amr: [String]?
        /// GitHub's `login`; the other flavors ignore it.
        package var login: String

        package init(
            sub: String = "upstream-user-1", email: String? = "ada@upstream.example", emailVerified: Bool = true,
            name: String? = "Ada Lovelace", givenName: String? = "Ada", familyName: String? = "Lovelace", amr: [String]? = nil,
            login: String = "ada"
        ) {
            self.sub = sub; self.email = email; self.emailVerified = emailVerified; self.name = name
            self.givenName = givenName; self.familyName = familyName; self.amr = amr; self.login = login
        }

        /// The person a double of `flavor` starts with: Ada Lovelace, or on GitHub `octo` (id 12345, "Octo Cat").
        package static func standard(for flavor: Flavor) -> User {
            guard case .github = flavor else { return User() }
            return User(sub: "12345", email: "octo@upstream.example", name: "Octo Cat", givenName: nil, familyName: nil, login: "octo")
        }
    }

    /// What the double does, settable from tests (`setBehavior`); every failure is off by default.
    package struct Behavior: Sendable, Equatable {
        /// The redirect URI registered upstream: an authorization request with another is refused (400, no redirect).
        /// nil: any is accepted, and the token request must repeat the one its authorization request carried.
        package var registeredRedirectURI: String?
        /// Whether the authorization response carries `iss` (RFC 9207) and the metadata says so. On by default for
        /// `.oidc` and `.google`, off for `.microsoft`; never for GitHub and Apple.
        package var sendsIss: Bool
        /// The authorization endpoint refuses: `error=access_denied&error_description=…&state=…` on the redirect
        /// (Apple: `error=user_cancelled_authorize` and `state`, posted like its codes).
        package var denyConsent = false
        /// The ID token's `nonce` is not the one the request sent (or is present when none was sent).
        package var wrongNonce = false
        /// The ID token's `aud` is `"someone-else"`.
        package var wrongAudience = false
        /// The ID token's `iss` is another issuer (Microsoft: another tenant's, while `tid` stays the tenant id).
        package var wrongIssuer = false
        /// The ID token is signed by a key that is not in the JWKS (with the published key's `kid`).
        package var badSignature = false
        /// The ID token expired ten minutes ago.
        package var expired = false
        /// The authorization response's `iss` parameter names another issuer (sent even when `sendsIss` is off).
        package var wrongIssParameter = false
        /// The token endpoint answers 500.
        package var tokenEndpointFails = false
        /// Apple's `/auth/revoke` answers 503.
        package var revocationFails = false
        /// Apple: the apps (bundle ids) of the team besides the double's client (a Services ID): their native
        /// sign-ins' codes are redeemed, and their tokens revoked, with a client secret whose `sub` is the bundle id.
        package var appleNativeClientIds: [String] = []
        /// Client authentication methods the token endpoint accepts (and the OpenID metadata lists) for `.oidc`,
        /// `.google` and `.microsoft`: `client_secret_basic`, `client_secret_post`.
        package var tokenEndpointAuthMethods = ["client_secret_basic", "client_secret_post"]
        /// GitHub's API answers 403 to a request without `User-Agent`, as GitHub does.
        package var requiresUserAgent = true

        /// The behavior a double of `flavor` starts with: nothing broken, `iss` as the flavor sends it.
        package init(for flavor: Flavor) {
            switch flavor {
            case .oidc, .google: sendsIss = true
            case .microsoft, .github, .apple: sendsIss = false
            }
        }
    }

    package let flavor: Flavor
    package let clientId: String
    package let clientSecret: String
    package let port: Int
    private let core: UpstreamCore
    private let service: GracefulService

    /// `http://127.0.0.1:PORT`: the `issuer` of an `.oidc` provider's configuration, the `authority` of the presets.
    package var base: String { "http://127.0.0.1:\(port)" }
    /// The issuer its ID tokens carry: `base`, or for Microsoft `{base}/<tenantId>/v2.0`.
    package var issuer: String { core.idTokenIssuer }
    /// The discovery document (Microsoft: the `common` tenant's); nil for GitHub.
    package var discoveryURL: String? {
        switch core.kind {
        case .github: nil
        case .microsoft: base + "/common/v2.0/.well-known/openid-configuration"
        default: base + "/.well-known/openid-configuration"
        }
    }
    /// The authorization endpoint (Microsoft: the `common` tenant's).
    package var authorizationEndpoint: String { core.endpoint(.authorization, tenant: "common") }
    /// The token endpoint (Microsoft: the `common` tenant's).
    package var tokenEndpoint: String { core.endpoint(.token, tenant: "common") }
    /// The JWKS (Microsoft: the `common` tenant's); nil for GitHub.
    package var jwksURI: String? { core.kind == .github ? nil : core.endpoint(.jwks, tenant: "common") }
    /// GitHub's REST API base (`api_base` of the github preset): `{base}/api`.
    package var apiBase: String { base + "/api" }
    /// The `kid` of the key ID tokens are signed with.
    package var signingKeyId: String { core.key.kid }

    /// Starts a double of `flavor` on a free loopback port. `clientSecret` is unused by `.apple` (its secret is a JWT).
    package static func start(
        _ flavor: Flavor, clientId: String = "latchkey-upstream", clientSecret: String = "upstream-secret",
        redirectURI: String? = nil, user: User? = nil
    ) async throws -> UpstreamProviderDouble {
        var behavior = Behavior(for: flavor)
        behavior.registeredRedirectURI = redirectURI
        let core = try UpstreamCore(
            flavor: flavor, clientId: clientId, clientSecret: clientSecret,
            state: UpstreamState(user: user ?? .standard(for: flavor), behavior: behavior))
        let router = Router()
        core.routes(router)
        let (port, service) = try await GracefulService.serve(router, label: "the upstream provider double")
        core.state.withLockedValue { $0.port = port }
        return UpstreamProviderDouble(flavor: flavor, clientId: clientId, clientSecret: clientSecret, port: port, core: core, service: service)
    }

    private init(flavor: Flavor, clientId: String, clientSecret: String, port: Int, core: UpstreamCore, service: GracefulService) {
        self.flavor = flavor; self.clientId = clientId; self.clientSecret = clientSecret; self.port = port
        self.core = core; self.service = service
    }

    /// Closes the port: the upstream is unreachable from then on.
    package func stop() async { await service.stop() }

    // MARK: The person and the behavior

    package var user: User { core.state.withLockedValue { $0.user } }
    /// Who signs in from the next authorization request on.
    package func setUser(_ user: User) { core.state.withLockedValue { $0.user = user } }

    package var behavior: Behavior { core.state.withLockedValue { $0.behavior } }
    package func setBehavior(_ change: (inout Behavior) -> Void) { core.state.withLockedValue { change(&$0.behavior) } }

    /// Apple: forgets which people already authorized the client, so the next authorization posts `user` again (as
    /// when the person removes the app from their Apple ID).
    package func forgetAuthorizations() { core.state.withLockedValue { $0.appleAuthorized.removeAll() } }

    /// Apple: the `authorizationCode` a native Sign in with Apple hands the app `bundleId` (an `appleNativeClientIds`
    /// entry) for the current user; redeemed once, without a redirect URI or PKCE.
    package func nativeAuthorizationCode(bundleId: String) -> String {
        let code = UpstreamHTTP.randomToken()
        core.state.withLockedValue { state in
            state.codes[code] = UpstreamState.Grant(redirectURI: "", challenge: nil, nonce: nil, scope: [], user: state.user, clientId: bundleId)
        }
        return code
    }

    /// Moves the clock the double judges Apple client secrets by (to follow a test server's advanced clock).
    package func advanceClock(_ seconds: TimeInterval) { core.state.withLockedValue { $0.clockOffset += seconds } }

    // MARK: What it was asked

    /// The query of the last authorization request (decoded; `scope` as sent, space-separated).
    package var lastAuthorizationQuery: [String: String] { core.state.withLockedValue { $0.lastAuthorizationQuery } }
    package var authorizationRequests: Int { core.state.withLockedValue { $0.authorizationRequests } }
    /// The form of the last token request (decoded; secrets included).
    package var lastTokenForm: [String: String] { core.state.withLockedValue { $0.lastTokenForm } }
    /// How the last token request authenticated its client: `client_secret_basic` or `client_secret_post` (GitHub,
    /// and Apple with its JWT, are `client_secret_post`); nil before one authenticated.
    package var lastTokenClientAuthentication: String? { core.state.withLockedValue { $0.lastTokenClientAuthentication } }
    /// Token requests, whatever came of them.
    package var tokenRequests: Int { core.state.withLockedValue { $0.tokenRequests } }
    /// Requests to the userinfo endpoint or GitHub's API, whatever came of them.
    package var userInfoRequests: Int { core.state.withLockedValue { $0.userInfoRequests } }
    /// Apple: the refresh tokens issued and not revoked.
    package var liveRefreshTokens: Set<String> { core.state.withLockedValue { Set($0.appleRefreshTokens.keys) } }
    /// Apple: the refresh tokens `/auth/revoke` revoked (with a valid client secret, by the client each was issued to),
    /// in order.
    package var revokedTokens: [String] { core.state.withLockedValue { $0.revokedTokens } }
    /// Apple: requests to `/auth/revoke`, whatever came of them.
    package var revocationRequests: Int { core.state.withLockedValue { $0.revocationRequests } }

    // MARK: Tokens made directly

    /// An ID token for `user` (default: the current one) as the token endpoint would issue it, with the behavior's
    /// failures applied: for a native sign-in that hands the server a token the app got itself (Google's
    /// `id_token`, whose `aud` may be a native client id). `nonce`: the claim as is.
    package func idToken(for user: User? = nil, audience: String? = nil, nonce: String?) throws -> String {
        let (current, behavior) = core.state.withLockedValue { ($0.user, $0.behavior) }
        return try core.idToken(user: user ?? current, audience: audience, nonce: nonce, behavior: behavior)
    }
}

extension UpstreamProviderDouble {
    /// The action and the fields of the first form of a page (Apple's form_post answer): what a browser posts.
    package static func formPost(in html: String) -> (action: String, fields: [String: String])? {
        guard let formStart = html.range(of: "<form"), let formEnd = html[formStart.upperBound...].firstIndex(of: ">") else { return nil }
        guard let action = attribute("action", in: html[formStart.upperBound..<formEnd]) else { return nil }
        var fields: [String: String] = [:]
        var rest = html[formEnd...]
        while let input = rest.range(of: "<input") {
            guard let end = rest[input.upperBound...].firstIndex(of: ">") else { break }
            let tag = rest[input.upperBound..<end]
            if let name = attribute("name", in: tag) { fields[name] = attribute("value", in: tag) ?? "" }
            rest = rest[end...]
        }
        return (action, fields)
    }

    /// A key for Sign in with Apple's client secret, and its PKCS#8 PEM (what Apple's `AuthKey_<keyId>.p8` holds).
    package static func appleTeamKey() -> (privateKey: P256.Signing.PrivateKey, pemPKCS8: String) {
        let key = P256.Signing.PrivateKey()
        return (key, key.pemRepresentation)
    }

    /// Sign in with Apple's client secret as a server makes it: an ES256 JWT with `kid` = `keyId`, `iss` = `teamId`,
    /// `sub` = `clientId`, `aud` = `audience`, `iat`, `exp` = `iat + lifetime`.
    package static func appleClientSecret(
        privateKey: P256.Signing.PrivateKey, teamId: String, keyId: String, clientId: String,
        audience: String = "https://appleid.apple.com", issuedAt: Date = Date(), lifetime: TimeInterval = 3600
    ) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "iss": .string(teamId), "sub": .string(clientId), "aud": .string(audience), "iat": .number(Double(iat)),
            "exp": .number(Double(iat + Int(lifetime)))
        ]
        let input = try CompactJWS.signingInput(header: JWSHeader(alg: "ES256", kid: keyId), claims: claims)
        return input + "." + Base64URL.encode(try privateKey.signature(for: Data(input.utf8)).rawRepresentation)
    }

    private static func attribute(_ name: String, in tag: Substring) -> String? {
        guard let start = tag.range(of: " \(name)=\"") else { return nil }
        let rest = tag[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return UpstreamHTTP.htmlUnescape(String(rest[..<end]))
    }
}
