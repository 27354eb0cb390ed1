import Crypto
import Foundation
import Hummingbird
import LatchkeyJOSE
import NIOConcurrencyHelpers

/// What the double remembers between requests.
struct UpstreamState: Sendable {
    /// A code the authorization endpoint gave out, with what the token request must match.
    struct Grant: Sendable {
        var redirectURI: String
        var challenge: String?
        var nonce: String?
        var scope: [String]
        var user: UpstreamProviderDouble.User
        /// Apple: the app (bundle id) a native sign-in's code was issued to; nil for the double's own client.
        var clientId: String? = nil
    }

    var port = 0
    var user: UpstreamProviderDouble.User
    var behavior: UpstreamProviderDouble.Behavior
    var codes: [String: Grant] = [:]
    var accessTokens: [String: (user: UpstreamProviderDouble.User, scope: [String])] = [:]
    /// Apple: the subjects who already authorized the client (`user` is posted on the first authorization only).
    var appleAuthorized: Set<String> = []
    var lastAuthorizationQuery: [String: String] = [:]
    var authorizationRequests = 0
    var lastTokenForm: [String: String] = [:]
    var lastTokenClientAuthentication: String?
    var tokenRequests = 0
    var userInfoRequests = 0
    /// Apple: the refresh tokens the token endpoint issued and not yet revoked, with the client each was issued to.
    var appleRefreshTokens: [String: String] = [:]
    /// Apple: the tokens `/auth/revoke` revoked, in order.
    var revokedTokens: [String] = []
    /// Apple: requests to `/auth/revoke`, whatever came of them.
    var revocationRequests = 0
    /// Added to the wall clock where the double judges a client secret's times, to follow a server whose clock a test
    /// moved forward.
    var clockOffset: TimeInterval = 0
}

/// The double's routes and the state they share; the router's handlers hold it (the port is known only once it serves).
final class UpstreamCore: Sendable {
    /// The flavor, with Apple's public key as a JWK (a `Sendable` value).
    enum Kind: Sendable, Equatable {
        case oidc, google, github
        case microsoft(tenantId: String)
        case apple(teamId: String, keyId: String, key: JWK)

        var isOpenID: Bool {
            switch self {
            case .oidc, .google, .microsoft: true
            case .github, .apple: false
            }
        }
    }

    enum Endpoint { case authorization, token, jwks, userinfo }

    static let appleAudience = "https://appleid.apple.com"

    let kind: Kind
    let clientId: String
    let clientSecret: String
    /// Signs the ID tokens; published at the JWKS.
    let key: SigningKey
    /// Signs them when `badSignature` is on; never published.
    let rogueKey: SigningKey
    let state: NIOLockedValueBox<UpstreamState>

    init(flavor: UpstreamProviderDouble.Flavor, clientId: String, clientSecret: String, state: UpstreamState) throws {
        switch flavor {
        case .oidc: kind = .oidc
        case .google: kind = .google
        case .github: kind = .github
        case .microsoft(let tenantId): kind = .microsoft(tenantId: tenantId)
        case .apple(let teamId, let keyId, let publicKey):
            var jwk = JWK.p256(rawPublicKey: publicKey.rawRepresentation)
            jwk.kid = keyId
            kind = .apple(teamId: teamId, keyId: keyId, key: jwk)
        }
        self.clientId = clientId
        self.clientSecret = clientSecret
        key = try SigningKey.generate(.rs256)
        rogueKey = try SigningKey.generate(.rs256)
        self.state = NIOLockedValueBox(state)
    }

    var base: String { "http://127.0.0.1:\(state.withLockedValue { $0.port })" }

    /// The tenants whose paths a Microsoft double serves.
    var tenants: [String] {
        guard case .microsoft(let tenantId) = kind else { return [] }
        return ["common", "organizations", tenantId]
    }

    /// The `iss` of the ID tokens.
    var idTokenIssuer: String {
        guard case .microsoft(let tenantId) = kind else { return base }
        return base + "/\(tenantId)/v2.0"
    }

    /// The metadata's `issuer` (Microsoft: the template `{tenantid}` for the multi-tenant paths).
    func metadataIssuer(tenant: String?) -> String {
        guard case .microsoft(let tenantId) = kind else { return base }
        return base + (tenant == tenantId ? "/\(tenantId)/v2.0" : "/{tenantid}/v2.0")
    }

    func endpoint(_ endpoint: Endpoint, tenant: String) -> String {
        switch (kind, endpoint) {
        case (.microsoft, .authorization): base + "/\(tenant)/oauth2/v2.0/authorize"
        case (.microsoft, .token): base + "/\(tenant)/oauth2/v2.0/token"
        case (.microsoft, .jwks): base + "/\(tenant)/discovery/v2.0/keys"
        case (.microsoft, .userinfo): base + "/oidc/userinfo"
        case (.github, .authorization): base + "/login/oauth/authorize"
        case (.github, .token): base + "/login/oauth/access_token"
        case (.github, _): base + "/api/user"  // no JWKS, and its "userinfo" is the API's user
        case (.apple, .authorization): base + "/auth/authorize"
        case (.apple, .token): base + "/auth/token"
        case (.apple, _): base + "/auth/keys"  // no userinfo
        case (_, .authorization): base + "/authorize"
        case (_, .token): base + "/token"
        case (_, .jwks): base + "/jwks"
        case (_, .userinfo): base + "/userinfo"
        }
    }

    // MARK: Authorization endpoint

    func authorize(_ request: Request, tenant: String?) -> Response {
        let query = UpstreamHTTP.decodeForm(request.uri.query ?? "")
        let (behavior, user) = state.withLockedValue { state in
            state.lastAuthorizationQuery = query
            state.authorizationRequests += 1
            return (state.behavior, state.user)
        }
        if let tenant, !tenants.contains(tenant) { return UpstreamHTTP.page(.badRequest, "AADSTS90002: Tenant '\(tenant)' not found.") }
        // Who the client is and where to answer are checked before anything is sent there (RFC 6749 §4.1.2.1).
        guard query["client_id"] == clientId else { return UpstreamHTTP.page(.badRequest, "unknown client_id") }
        guard let redirectURI = query["redirect_uri"], let target = URLComponents(string: redirectURI), target.scheme != nil,
            behavior.registeredRedirectURI.map({ $0 == redirectURI }) ?? true
        else { return UpstreamHTTP.page(.badRequest, "redirect_uri is not registered for this client") }

        let scope = (query["scope"] ?? "").split(whereSeparator: { $0 == " " || (kind == .github && $0 == ",") }).map(String.init)
        let formPost = kind != .github && query["response_mode"] == "form_post"
        if case .apple = kind, scope.contains("name") || scope.contains("email"), !formPost {
            return UpstreamHTTP.page(.badRequest, "invalid_request: response_mode must be form_post when name or email scope is requested")
        }
        var issParameter: [(String, String)] = []
        if kind.isOpenID, behavior.wrongIssParameter {
            issParameter = [("iss", base + "/impostor")]
        } else if kind.isOpenID, behavior.sendsIss {
            issParameter = [("iss", metadataIssuer(tenant: tenant))]
        }
        let stateParameter = query["state"].map { [("state", $0)] } ?? []
        func answer(_ parameters: [(String, String)]) -> Response {
            formPost ? UpstreamHTTP.formPostPage(action: redirectURI, parameters) : UpstreamHTTP.redirect(redirectURI, parameters)
        }
        func fail(_ error: String, _ description: String) -> Response {
            answer([("error", error), ("error_description", description)] + stateParameter + issParameter)
        }

        let responseType = query["response_type"]
        let responseTypeAccepted =
            switch kind {
            case .github: responseType == nil || responseType == "code"
            case .apple: responseType == "code" || responseType == "code id_token"
            default: responseType == "code"
            }
        guard responseTypeAccepted else { return fail("unsupported_response_type", "response_type must be code") }
        if kind.isOpenID, !scope.contains("openid") { return fail("invalid_scope", "the openid scope is required") }
        let challenge = query["code_challenge"], challengeMethod = query["code_challenge_method"]
        if challenge == nil ? challengeMethod != nil : challengeMethod != "S256" {
            return fail("invalid_request", "code_challenge_method must be S256, with a code_challenge")
        }
        if behavior.denyConsent {
            if case .apple = kind { return answer([("error", "user_cancelled_authorize")] + stateParameter) }
            return fail("access_denied", "The user denied the request.")
        }

        let code = UpstreamHTTP.randomToken()
        let grant = UpstreamState.Grant(redirectURI: redirectURI, challenge: challenge, nonce: query["nonce"], scope: scope, user: user)
        let first = state.withLockedValue { state in
            state.codes[code] = grant
            guard case .apple = kind else { return false }
            return state.appleAuthorized.insert(user.sub).inserted
        }
        var parameters = [("code", code)] + stateParameter + issParameter
        switch kind {
        case .google:
            parameters += [("scope", scope.joined(separator: " ")), ("authuser", "0"), ("prompt", "consent")]
        case .apple:
            if responseType == "code id_token", let token = try? idToken(user: user, audience: nil, nonce: grant.nonce, behavior: behavior) {
                parameters.append(("id_token", token))
            }
            if first, scope.contains("name") || scope.contains("email") {
                parameters.append(("user", appleUserJSON(user, scope: scope)))
            }
        default:
            break
        }
        return answer(parameters)
    }

    /// Apple's `user` field: the name and email the person shared, as JSON, sent once.
    private func appleUserJSON(_ user: UpstreamProviderDouble.User, scope: [String]) -> String {
        var object: [String: Any] = [:]
        if scope.contains("name") {
            var name: [String: String] = [:]
            name["firstName"] = user.givenName
            name["lastName"] = user.familyName
            object["name"] = name
        }
        if scope.contains("email"), let email = user.email { object["email"] = email }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Token endpoint

    func token(_ request: Request, tenant: String?) async throws -> Response {
        let form = UpstreamHTTP.decodeForm(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
        let behavior = state.withLockedValue { state in
            state.tokenRequests += 1
            state.lastTokenForm = form
            return state.behavior
        }
        if behavior.tokenEndpointFails {
            return UpstreamHTTP.page(.internalServerError, "the upstream provider is having a bad day")
        }
        if case .github = kind { return gitHubToken(form, accept: request.headers[.accept] ?? "") }
        if let tenant, !tenants.contains(tenant) { return UpstreamHTTP.oauthError("invalid_request", "AADSTS90002: Tenant not found.") }

        let authorization = request.headers[.authorization]
        if let problem = authenticateClient(form, authorization: authorization, behavior: behavior) {
            var response = UpstreamHTTP.oauthError("invalid_client", problem, status: kind.isOpenID ? .unauthorized : .badRequest)
            if authorization?.hasPrefix("Basic ") == true { response.headers[.wwwAuthenticate] = "Basic realm=\"upstream\"" }
            return response
        }
        guard form["grant_type"] == "authorization_code" else {
            return UpstreamHTTP.oauthError("unsupported_grant_type", "grant_type must be authorization_code")
        }
        guard let code = form["code"], let grant = state.withLockedValue({ $0.codes.removeValue(forKey: code) }) else {
            return UpstreamHTTP.oauthError("invalid_grant", "the code is unknown, expired or already used")
        }
        // Apple: a native code belongs to its app, and the double's own codes to the double's client.
        guard form["client_id"].map({ $0 == (grant.clientId ?? clientId) }) ?? (grant.clientId == nil) else {
            return UpstreamHTTP.oauthError("invalid_grant", "the code was issued to another client")
        }
        // A native code came without a redirect URI, and is redeemed without one.
        guard (form["redirect_uri"] ?? "") == grant.redirectURI else {
            return UpstreamHTTP.oauthError("invalid_grant", "redirect_uri is not the authorization request's")
        }
        guard Self.pkceHolds(challenge: grant.challenge, verifier: form["code_verifier"]) else {
            return UpstreamHTTP.oauthError("invalid_grant", "PKCE verification failed")
        }
        let access = UpstreamHTTP.randomToken()
        state.withLockedValue { $0.accessTokens[access] = (grant.user, grant.scope) }
        var body: [String: Any] = [
            "access_token": access, "token_type": "Bearer", "expires_in": 3600,
            "id_token": try idToken(user: grant.user, audience: grant.clientId, nonce: grant.nonce, behavior: behavior)
        ]
        if !grant.scope.isEmpty { body["scope"] = grant.scope.joined(separator: " ") }
        if case .apple = kind {
            let refresh = UpstreamHTTP.randomToken()
            state.withLockedValue { $0.appleRefreshTokens[refresh] = grant.clientId ?? clientId }
            body["refresh_token"] = refresh
        }
        return UpstreamHTTP.json(body)
    }

    // MARK: Apple's token revocation

    /// `POST /auth/revoke`: `client_id`, the client secret JWT, `token` and an optional `token_type_hint`. A token the
    /// double issued to the authenticated client is revoked (recorded); an unknown one, or another client's, is answered
    /// 200 as well (RFC 7009 §2.2) and not recorded.
    func revoke(_ request: Request) async throws -> Response {
        let form = UpstreamHTTP.decodeForm(String(buffer: try await request.body.collect(upTo: 64 * 1024)))
        let behavior = state.withLockedValue { state in
            state.revocationRequests += 1
            return state.behavior
        }
        if behavior.revocationFails { return UpstreamHTTP.page(.serviceUnavailable, "the upstream provider is having a bad day") }
        if let problem = authenticateClient(form, authorization: request.headers[.authorization], behavior: behavior) {
            return UpstreamHTTP.oauthError("invalid_client", problem)
        }
        guard let token = form["token"], !token.isEmpty else { return UpstreamHTTP.oauthError("invalid_request", "token is missing") }
        if let hint = form["token_type_hint"], !["refresh_token", "access_token"].contains(hint) {
            return UpstreamHTTP.oauthError("unsupported_token_type", "token_type_hint must be refresh_token or access_token")
        }
        state.withLockedValue { state in
            guard let owner = state.appleRefreshTokens[token], owner == form["client_id"] else { return }
            state.appleRefreshTokens[token] = nil
            state.revokedTokens.append(token)
        }
        return Response(status: .ok)
    }

    /// Why the client is not authenticated, or nil when it is (and the method is recorded).
    private func authenticateClient(_ form: [String: String], authorization: String?, behavior: UpstreamProviderDouble.Behavior) -> String? {
        if case .apple(let teamId, let keyId, let key) = kind {
            guard let client = form["client_id"], client == clientId || behavior.appleNativeClientIds.contains(client) else {
                return "unknown client_id"
            }
            guard let secret = form["client_secret"] else { return "client_secret is missing" }
            let now = Date().addingTimeInterval(state.withLockedValue { $0.clockOffset })
            if let problem = Self.appleClientSecretProblem(secret, teamId: teamId, keyId: keyId, key: key, clientId: client, now: now) {
                return problem
            }
            state.withLockedValue { $0.lastTokenClientAuthentication = "client_secret_post" }
            return nil
        }
        let method: String
        if let authorization, authorization.hasPrefix("Basic ") {
            guard form["client_secret"] == nil else { return "more than one client authentication method" }
            guard let data = Data(base64Encoded: String(authorization.dropFirst(6))), case let decoded = String(decoding: data, as: UTF8.self),
                let colon = decoded.firstIndex(of: ":")
            else {
                return "malformed Basic credentials"
            }
            // RFC 6749 §2.3.1: both halves are form-urlencoded before they are joined.
            let id = UpstreamHTTP.formUnescape(String(decoded[..<colon]))
            let secret = UpstreamHTTP.formUnescape(String(decoded[decoded.index(after: colon)...]))
            guard id == clientId, secret == clientSecret, form["client_id"].map({ $0 == clientId }) ?? true else { return "bad client credentials" }
            method = "client_secret_basic"
        } else if let secret = form["client_secret"] {
            guard form["client_id"] == clientId, secret == clientSecret else { return "bad client credentials" }
            method = "client_secret_post"
        } else {
            return "no client authentication"
        }
        guard behavior.tokenEndpointAuthMethods.contains(method) else { return "\(method) is not accepted here" }
        state.withLockedValue { $0.lastTokenClientAuthentication = method }
        return nil
    }

    /// Why Apple would refuse this client secret, or nil when it accepts it.
    static func appleClientSecretProblem(_ secret: String, teamId: String, keyId: String, key: JWK, clientId: String, now: Date = Date()) -> String? {
        guard let jws = try? CompactJWS(parsing: secret) else { return "client_secret is not a JWT" }
        guard jws.header.alg == "ES256" else { return "client_secret's alg is not ES256" }
        guard jws.header.kid == keyId else { return "client_secret's kid is not the key id" }
        guard (try? jws.verify(with: JWKSet(keys: [key]))) != nil else { return "client_secret's signature does not verify" }
        guard let claims = try? jws.claimsObject() else { return "client_secret's payload is not JSON" }
        guard claims["iss"]?.stringValue == teamId else { return "client_secret's iss is not the team id" }
        guard claims["sub"]?.stringValue == clientId else { return "client_secret's sub is not the client id" }
        guard claims["aud"]?.stringArray?.contains(appleAudience) == true else { return "client_secret's aud is not \(appleAudience)" }
        guard let exp = claims["exp"]?.doubleValue, let iat = claims["iat"]?.doubleValue else { return "client_secret lacks exp or iat" }
        let seconds = now.timeIntervalSince1970
        guard exp > seconds else { return "client_secret expired" }
        guard iat <= seconds + 60, exp - iat <= 15_777_000 else { return "client_secret's lifetime is not acceptable" }
        return nil
    }

    /// RFC 7636: the verifier's S256 is the challenge; a verifier without a challenge is refused too (a downgrade).
    static func pkceHolds(challenge: String?, verifier: String?) -> Bool {
        switch (challenge, verifier) {
        case (nil, nil): return true
        case (let challenge?, let verifier?):
            guard (43...128).contains(verifier.count) else { return false }
            return Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8)))) == challenge
        default: return false
        }
    }

    // MARK: GitHub

    /// GitHub's token endpoint: JSON only when asked for, and every error with HTTP 200.
    private func gitHubToken(_ form: [String: String], accept: String) -> Response {
        let json = accept.contains("application/json")
        func answer(_ fields: [(String, String)]) -> Response {
            guard json else { return UpstreamHTTP.formEncoded(fields) }
            return UpstreamHTTP.json(Dictionary(fields, uniquingKeysWith: { a, _ in a }))
        }
        func error(_ code: String, _ description: String) -> Response {
            answer([
                ("error", code), ("error_description", description),
                ("error_uri", "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors")
            ])
        }
        guard form["client_id"] == clientId, form["client_secret"] == clientSecret else {
            return error("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
        }
        state.withLockedValue { $0.lastTokenClientAuthentication = "client_secret_post" }
        guard let code = form["code"], let grant = state.withLockedValue({ $0.codes.removeValue(forKey: code) }) else {
            return error("bad_verification_code", "The code passed is incorrect or expired.")
        }
        if let redirectURI = form["redirect_uri"], redirectURI != grant.redirectURI {
            return error("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
        }
        guard Self.pkceHolds(challenge: grant.challenge, verifier: form["code_verifier"]) else {
            return error("bad_verification_code", "The code_verifier does not match the code_challenge.")
        }
        let access = "gho_" + UpstreamHTTP.randomToken().filter { $0.isLetter || $0.isNumber }
        state.withLockedValue { $0.accessTokens[access] = (grant.user, grant.scope) }
        return answer([("access_token", access), ("token_type", "bearer"), ("scope", grant.scope.joined(separator: ","))])
    }

    /// `GET /api/user` and `GET /api/user/emails`.
    func gitHubAPI(_ request: Request, emails: Bool) -> Response {
        let behavior = state.withLockedValue { state in
            state.userInfoRequests += 1
            return state.behavior
        }
        if behavior.requiresUserAgent, (request.headers[.userAgent] ?? "").isEmpty {
            return UpstreamHTTP.page(
                .forbidden,
                "Request forbidden by administrative rules. Please make sure your request has a User-Agent header "
                    + "(https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required).")
        }
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? header.dropFirst(7) : header.hasPrefix("token ") ? header.dropFirst(6) : ""
        guard let grant = state.withLockedValue({ $0.accessTokens[String(token)] }) else {
            return UpstreamHTTP.json(
                ["message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"], status: .unauthorized)
        }
        let user = grant.user
        let id: Any = Int(user.sub).map { $0 as Any } ?? user.sub
        guard emails else {
            return UpstreamHTTP.json([
                "id": id, "login": user.login, "node_id": "U_" + user.sub, "type": "User",
                "name": user.name.map { $0 as Any } ?? NSNull(), "email": NSNull(), "avatar_url": base + "/avatars/\(user.sub)"
            ])
        }
        guard grant.scope.contains("user:email") || grant.scope.contains("user") else {
            return UpstreamHTTP.json(
                ["message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"], status: .notFound)
        }
        // The primary address, then GitHub's no-reply one: verified, but never the one to link by.
        var list: [[String: Any]] = []
        if let email = user.email { list.append(["email": email, "primary": true, "verified": user.emailVerified, "visibility": "private"]) }
        list.append(["email": "\(user.sub)+\(user.login)@users.noreply.github.com", "primary": false, "verified": true, "visibility": NSNull()])
        return UpstreamHTTP.json(list)
    }

    // MARK: ID tokens and userinfo

    func idToken(user: UpstreamProviderDouble.User, audience: String?, nonce: String?, behavior: UpstreamProviderDouble.Behavior) throws -> String {
        let now = Int(Date().timeIntervalSince1970) - (behavior.expired ? 1200 : 0)
        var claims: [String: JSONValue] = [
            "sub": .string(user.sub), "aud": .string(behavior.wrongAudience ? "someone-else" : audience ?? clientId),
            "iat": .number(Double(now)), "exp": .number(Double(now + 600)), "auth_time": .number(Double(now))
        ]
        switch (kind, behavior.wrongIssuer) {
        case (.microsoft, true): claims["iss"] = .string(base + "/00000000-0000-0000-0000-00000000dead/v2.0")
        case (_, true): claims["iss"] = .string(base + "/impostor")
        case (_, false): claims["iss"] = .string(idTokenIssuer)
        }
        if behavior.wrongNonce {
            claims["nonce"] = .string((nonce ?? "unrequested") + "-altered")
        } else if let nonce {
            claims["nonce"] = .string(nonce)
        }
        if let amr = user.amr { claims["amr"] = .array(amr.map { .string($0) }) }
        if let email = user.email { claims["email"] = .string(email) }
        if case .apple = kind {
            // Apple: booleans as strings, and never a name in the token.
            if let email = user.email {
                claims["email_verified"] = .string(user.emailVerified ? "true" : "false")
                claims["is_private_email"] = .string(email.hasSuffix("@privaterelay.appleid.com") ? "true" : "false")
            }
            claims["nonce_supported"] = .bool(true)
        } else {
            claims.merge(profileClaims(user).filter { $0.key != "sub" && $0.key != "email" }) { current, _ in current }
        }
        switch kind {
        case .google: claims["azp"] = .string(clientId)
        case .microsoft(let tenantId):
            claims["tid"] = .string(tenantId)
            claims["oid"] = .string(Self.objectId(of: user.sub))
            claims["ver"] = .string("2.0")
            if let email = user.email { claims["preferred_username"] = .string(email) }
        default: break
        }
        guard behavior.badSignature else { return try key.sign(claims: claims) }
        let input = try CompactJWS.signingInput(header: JWSHeader(alg: key.algorithm.rawValue, kid: key.kid, typ: "JWT"), claims: claims)
        return input + "." + Base64URL.encode(try rogueKey.sign(Data(input.utf8)))
    }

    private func profileClaims(_ user: UpstreamProviderDouble.User) -> [String: JSONValue] {
        var claims: [String: JSONValue] = ["sub": .string(user.sub)]
        if let email = user.email {
            claims["email"] = .string(email)
            claims["email_verified"] = .bool(user.emailVerified)
        }
        if let name = user.name { claims["name"] = .string(name) }
        if let givenName = user.givenName { claims["given_name"] = .string(givenName) }
        if let familyName = user.familyName { claims["family_name"] = .string(familyName) }
        return claims
    }

    /// A stable GUID-shaped object id for a subject (Microsoft's `oid`).
    private static func objectId(of sub: String) -> String {
        let hex = SHA256.hash(data: Data(sub.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    func userinfo(_ request: Request) -> Response {
        let header = request.headers[.authorization] ?? ""
        let token = header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : ""
        let grant = state.withLockedValue { state in
            state.userInfoRequests += 1
            return state.accessTokens[token]
        }
        guard let grant else {
            return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
        }
        return UpstreamHTTP.json(profileClaims(grant.user).mapValues(\.foundationValue))
    }

    func jwks() throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(JWKSet(keys: [try key.publicJWK()])))))
    }

    func discovery(tenant: String?) -> Response {
        let behavior = state.withLockedValue { $0.behavior }
        if let tenant, !tenants.contains(tenant) { return UpstreamHTTP.oauthError("invalid_tenant", "AADSTS90002: Tenant not found.") }
        let tenantPath = tenant ?? "common"
        var metadata: [String: Any] = [
            "issuer": metadataIssuer(tenant: tenant),
            "authorization_endpoint": endpoint(.authorization, tenant: tenantPath),
            "token_endpoint": endpoint(.token, tenant: tenantPath),
            "jwks_uri": endpoint(.jwks, tenant: tenantPath),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query", "form_post"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "grant_types_supported": ["authorization_code"],
            "token_endpoint_auth_methods_supported": behavior.tokenEndpointAuthMethods,
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": behavior.sendsIss,
            "claims_supported": ["iss", "sub", "aud", "exp", "iat", "nonce", "email", "email_verified", "name", "given_name", "family_name", "amr"]
        ]
        switch kind {
        case .apple:
            metadata["response_types_supported"] = ["code", "code id_token"]
            metadata["response_modes_supported"] = ["query", "fragment", "form_post"]
            metadata["subject_types_supported"] = ["pairwise"]
            metadata["scopes_supported"] = ["openid", "email", "name"]
            metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
            metadata["authorization_response_iss_parameter_supported"] = false
            metadata["claims_supported"] = [
                "aud", "email", "email_verified", "exp", "iat", "is_private_email", "iss", "nonce", "nonce_supported", "sub"
            ]
        case .microsoft:
            metadata["userinfo_endpoint"] = endpoint(.userinfo, tenant: tenantPath)
            metadata["claims_supported"] = ["iss", "sub", "aud", "exp", "iat", "nonce", "tid", "oid", "email", "name", "preferred_username", "amr"]
        default:
            metadata["userinfo_endpoint"] = endpoint(.userinfo, tenant: tenantPath)
        }
        return UpstreamHTTP.json(metadata)
    }

    // MARK: Routes

    func routes(_ router: Router<BasicRequestContext>) {
        switch kind {
        case .oidc, .google:
            router.get("/.well-known/openid-configuration") { _, _ in self.discovery(tenant: nil) }
            router.get("/authorize") { request, _ in self.authorize(request, tenant: nil) }
            router.post("/token") { request, _ in try await self.token(request, tenant: nil) }
            router.get("/jwks") { _, _ in try self.jwks() }
            router.get("/userinfo") { request, _ in self.userinfo(request) }
            router.post("/userinfo") { request, _ in self.userinfo(request) }
        case .microsoft:
            router.get("/:tenant/v2.0/.well-known/openid-configuration") { _, context in
                self.discovery(tenant: context.parameters.get("tenant") ?? "")
            }
            router.get("/:tenant/oauth2/v2.0/authorize") { request, context in
                self.authorize(request, tenant: context.parameters.get("tenant") ?? "")
            }
            router.post("/:tenant/oauth2/v2.0/token") { request, context in
                try await self.token(request, tenant: context.parameters.get("tenant") ?? "")
            }
            router.get("/:tenant/discovery/v2.0/keys") { _, _ in try self.jwks() }
            router.get("/oidc/userinfo") { request, _ in self.userinfo(request) }
        case .github:
            router.get("/login/oauth/authorize") { request, _ in self.authorize(request, tenant: nil) }
            router.post("/login/oauth/access_token") { request, _ in try await self.token(request, tenant: nil) }
            router.get("/api/user") { request, _ in self.gitHubAPI(request, emails: false) }
            router.get("/api/user/emails") { request, _ in self.gitHubAPI(request, emails: true) }
        case .apple:
            router.get("/.well-known/openid-configuration") { _, _ in self.discovery(tenant: nil) }
            router.get("/auth/authorize") { request, _ in self.authorize(request, tenant: nil) }
            router.post("/auth/token") { request, _ in try await self.token(request, tenant: nil) }
            router.get("/auth/keys") { _, _ in try self.jwks() }
            router.post("/auth/revoke") { request, _ in try await self.revoke(request) }
        }
    }
}

extension JSONValue {
    /// The value as `JSONSerialization` takes it.
    fileprivate var foundationValue: Any {
        switch self {
        case .string(let s): s
        case .number(let n): n.rounded() == n ? Int(n) as Any : n as Any
        case .bool(let b): b
        case .object(let o): o.mapValues(\.foundationValue)
        case .array(let a): a.map(\.foundationValue)
        case .null: NSNull()
        }
    }
}
