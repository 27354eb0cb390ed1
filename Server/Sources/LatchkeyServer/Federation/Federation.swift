import Crypto
import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE
import Logging

/// Sign-in through another identity provider: the upstream leg (authorization code with PKCE, `state` and `nonce`),
/// its verification, and the hand-off of the result to whoever asked — the hosted page in the same browser, or an app
/// (a flow, a link) that collects it with a one-time code.
///
/// Everything in flight lives in the store (`FederatedLoginStore`), so the provider may send the browser back to any
/// instance.
struct Federation: Sendable {
    let providers: [IdentityProviderConfiguration]
    /// The issuer in force (known once the listener is bound when the configured port is 0).
    let issuerInForce: @Sendable () -> String
    let directory: UpstreamDirectory
    let http: UpstreamHTTP
    let store: any FederatedLoginStore
    let clock: ServerClock
    let lifetimes: TokenLifetimes
    let metrics: ServerMetrics
    /// Seals Apple's refresh tokens before they are stored.
    let sealer: SecretSealer

    /// What a federated sign-in was started for.
    struct Pending: Codable, Sendable {
        enum Purpose: String, Codable, Sendable {
            /// The hosted login page: `target` is the login request; the browser is bound by a cookie.
            case hostedLogin
            /// An app-native flow: `target` is the execution; the app collects the result at `redirectUri`.
            case flow
            /// Linking to a signed-in account: `target` is the account; the app collects the result at `redirectUri`.
            case link
        }
        var purpose: Purpose
        var target: String
        var clientId: String
        var redirectUri: String?
        var codeVerifier: String
        var nonce: String
        /// Digest of the browser's `lk_fed` cookie (hosted login only).
        var browserHash: Data?
    }

    /// A verified identity waiting for the app that asked for it.
    struct Result: Codable, Sendable {
        var purpose: Pending.Purpose
        var target: String
        var clientId: String
        /// Digest of the upstream `state`, which the app sends back with the code.
        var stateHash: Data
        var identity: UpstreamIdentity
    }

    private static let pendingPurpose = "pending"
    private static let resultPurpose = "result"

    /// The provider `id`, if it is configured and `client` offers it.
    func provider(_ id: String, for client: ClientConfiguration) throws(FederationFailure) -> IdentityProviderConfiguration {
        let bare = id.split(separator: ":", maxSplits: 1).first.map(String.init) ?? id  // reachFive's `name:variant`
        guard client.identityProviders.contains(bare), let provider = providers.first(where: { $0.id == bare }) else {
            throw .unknownProvider(bare)
        }
        return provider
    }

    /// The providers `client` offers, in its order.
    func providers(for client: ClientConfiguration) -> [IdentityProviderConfiguration] {
        client.identityProviders.compactMap { id in providers.first { $0.id == id } }
    }

    /// `{issuer}/federation/{id}/callback`: what an operator registers at the provider.
    func callbackURL(_ provider: IdentityProviderConfiguration) -> String { issuerInForce() + "/federation/\(provider.id)/callback" }

    // MARK: The upstream leg

    /// Stores the pending sign-in and returns the provider's authorization URL and the `state` it carries.
    func begin(
        _ provider: IdentityProviderConfiguration, purpose: Pending.Purpose, target: String, clientId: String,
        redirectUri: String? = nil, browserBinding: String? = nil
    ) async throws -> (url: URL, state: String) {
        let endpoints = try await directory.endpoints(of: provider, now: clock.now)
        let state = Secrets.token(), verifier = Secrets.token(), nonce = Secrets.token()
        let pending = Pending(
            purpose: purpose, target: target, clientId: clientId, redirectUri: redirectUri, codeVerifier: verifier, nonce: nonce,
            browserHash: browserBinding.map(Secrets.digest))
        try await store.insertFederatedLogin(
            FederatedLoginRecord(
                handleHash: Secrets.digest(state), provider: provider.id, purpose: Self.pendingPurpose,
                payload: try JSONEncoder().encode(pending),
                expiresAt: clock.now.addingTimeInterval(TimeInterval(lifetimes.loginRequest))))
        var query: [(String, String)] = [
            ("response_type", "code"), ("client_id", provider.clientId), ("redirect_uri", callbackURL(provider)),
            ("scope", provider.scopes.joined(separator: " ")), ("state", state),
            ("code_challenge", Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))), ("code_challenge_method", "S256")
        ]
        if provider.isOpenID { query.append(("nonce", nonce)) }
        // Apple sends name and email only with a form_post answer.
        if provider.kind == .apple { query.append(("response_mode", "form_post")) }
        var components = URLComponents(url: endpoints.authorization, resolvingAgainstBaseURL: false)
        let existing = components?.percentEncodedQuery.map { $0 + "&" } ?? ""
        let added: [String] = query.map { (name: String, value: String) in FormEncoding.encode(name) + "=" + FormEncoding.encode(value) }
        components?.percentEncodedQuery = existing + added.joined(separator: "&")
        guard let url = components?.url else { throw FederationFailure.unavailable("its authorization endpoint is not a URL") }
        return (url, state)
    }

    /// The provider came back: the pending sign-in is taken (once), its browser checked, the code exchanged and the
    /// identity verified. `params` are the callback's query or form; `browserBinding` the request's `lk_fed` cookie.
    /// A failure after the state was recognized carries the pending sign-in, so the caller can answer whoever asked.
    func complete(
        providerId: String, params: [String: String], browserBinding: String?, logger: Logger
    ) async throws -> (Pending, UpstreamIdentity) {
        guard let state = params["state"], !state.isEmpty,
            let record = try await store.takeFederatedLogin(handleHash: Secrets.digest(state), now: clock.now),
            record.purpose == Self.pendingPurpose, record.provider == providerId,
            let pending = try? JSONDecoder().decode(Pending.self, from: record.payload)
        else {
            throw FederationFailure.unknownState
        }
        do {
            if let expected = pending.browserHash {
                guard let binding = browserBinding, Secrets.constantTimeEquals(Secrets.digest(binding), expected) else {
                    throw FederationFailure.otherBrowser
                }
            }
            guard let provider = providers.first(where: { $0.id == providerId }) else { throw FederationFailure.unknownProvider(providerId) }
            let identity = try await verify(provider, params: params, pending: pending)
            metrics.signIn(.federated, .success)
            return (pending, identity)
        } catch let failure as FederationFailure {
            metrics.signIn(.federated, .failure)
            throw PendingFailure(pending: pending, failure: failure)
        }
    }

    /// A failure of a recognized pending sign-in (so the answer goes where that sign-in came from).
    struct PendingFailure: Error {
        var pending: Pending
        var failure: FederationFailure
    }

    private func verify(
        _ provider: IdentityProviderConfiguration, params: [String: String], pending: Pending
    ) async throws(FederationFailure) -> UpstreamIdentity {
        if let error = params["error"] { throw .denied(Self.printable(error)) }
        let now = clock.now
        let endpoints = try await directory.endpoints(of: provider, now: now)
        // RFC 9207: a response naming another issuer came through a mix-up; one the provider promised to mark must be.
        if let iss = params["iss"] {
            if let expected = endpoints.issuer, !expected.contains("{"), UpstreamDirectory.trimmed(iss) != UpstreamDirectory.trimmed(expected) {
                throw .issuerMismatch
            }
        } else if endpoints.sendsIssParameter {
            throw .issuerMismatch
        }
        guard let code = params["code"], !code.isEmpty else { throw .denied("no code") }
        let tokens = try await exchange(code, provider: provider, endpoints: endpoints, verifier: pending.codeVerifier, now: now)
        switch provider.kind {
        case .github:
            return try await githubIdentity(provider, accessToken: tokens.accessToken, endpoints: endpoints)
        default:
            var identity = try await openIDIdentity(
                provider, tokens: tokens, endpoints: endpoints, nonce: pending.nonce, user: params["user"], now: now)
            // Apple asks that an app revoke its tokens when the account is deleted (App Store Review 5.1.1(v)); its
            // refresh token is what `auth/revoke` takes. Sealed, it is useless to whoever copies the database.
            if provider.kind == .apple, let refresh = tokens.refreshToken {
                identity.sealedRefreshToken = sealRefreshToken(
                    UpstreamRefreshGrant(clientId: provider.clientId, token: refresh), provider: provider.id, subject: identity.subject)
            }
            return identity
        }
    }

    /// What a provider sent as an error code, fit for a log line: at most 64 of `A-Z a-z 0-9 _ . -` (it is the
    /// provider's text, or whoever forged the callback's).
    static func printable(_ code: String) -> String {
        String(
            code.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "_.-".unicodeScalars.contains($0) }.prefix(64).map(
                Character.init))
    }

    // MARK: Token exchange

    struct TokenAnswer {
        var accessToken: String
        var idToken: String?
        var refreshToken: String?
    }

    private func exchange(
        _ code: String, provider: IdentityProviderConfiguration, endpoints: UpstreamEndpoints, verifier: String, now: Date
    ) async throws(FederationFailure) -> TokenAnswer {
        let form: [(String, String)] = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", callbackURL(provider)), ("code_verifier", verifier)
        ]
        return try await tokenRequest(form, provider: provider, endpoints: endpoints, now: now)
    }

    /// The token endpoint's answer to `form` with the client authenticated as `provider` wants it (`clientId`: the
    /// Apple client the secret is made for, the provider's own by default).
    func tokenRequest(
        _ form: [(String, String)], provider: IdentityProviderConfiguration, endpoints: UpstreamEndpoints, clientId: String? = nil,
        now: Date
    ) async throws(FederationFailure) -> TokenAnswer {
        let (data, status) = try await authenticatedPost(
            endpoints.token, form, provider: provider, endpoints: endpoints, clientId: clientId, now: now)
        let object = (try? JSONValue.parse(data))?.objectValue ?? [:]
        // GitHub answers its errors with 200 and an `error` member.
        if let error = object["error"]?.stringValue { throw .tokenExchange("the token endpoint answered \(Self.printable(error))") }
        guard status == 200, let accessToken = object["access_token"]?.stringValue else {
            throw .tokenExchange("the token endpoint answered \(status)")
        }
        return TokenAnswer(
            accessToken: accessToken, idToken: object["id_token"]?.stringValue, refreshToken: object["refresh_token"]?.stringValue)
    }

    /// POSTs `form` to one of the provider's endpoints (token, revocation) with the client authenticated as the provider
    /// takes it: HTTP Basic or in the form, with the client secret (for Apple, the JWT made for `clientId`).
    func authenticatedPost(
        _ url: URL, _ form: [(String, String)], provider: IdentityProviderConfiguration, endpoints: UpstreamEndpoints, clientId: String? = nil,
        now: Date
    ) async throws(FederationFailure) -> (Data, Int) {
        let client = clientId ?? provider.clientId
        let secret = provider.kind == .apple ? try appleClientSecret(provider, clientId: client, now: now) : (provider.clientSecret ?? "")
        if endpoints.usesBasicAuthentication { return try await http.postForm(url, form, basic: (client, secret)) }
        return try await http.postForm(url, form + [("client_id", client), ("client_secret", secret)])
    }

    /// Sign in with Apple's client secret for `clientId` (the provider's Services ID by default, or an app's bundle id):
    /// an ES256 JWT by the team's key (`kid` = key id), valid five minutes.
    func appleClientSecret(
        _ provider: IdentityProviderConfiguration, clientId: String? = nil, now: Date
    ) throws(FederationFailure) -> String {
        guard let pem = provider.privateKeyPEM, let keyId = provider.keyId, let teamId = provider.teamId,
            let key = try? SigningKey(algorithm: .es256, pem: pem, kid: keyId)
        else { throw .tokenExchange("the Apple team key is not usable") }
        let iat = Int(now.timeIntervalSince1970)
        let claims: [String: JSONValue] = [
            "iss": .string(teamId), "sub": .string(clientId ?? provider.clientId), "aud": .string("https://appleid.apple.com"),
            "iat": .number(Double(iat)), "exp": .number(Double(iat + 300))
        ]
        // Apple's secret has no `typ`: its header is `alg` and `kid` alone.
        guard let secret = try? key.sign(claims: claims, type: nil) else { throw .tokenExchange("the Apple client secret could not be signed") }
        return secret
    }

    // MARK: Identities

    private func openIDIdentity(
        _ provider: IdentityProviderConfiguration, tokens: TokenAnswer, endpoints: UpstreamEndpoints, nonce: String, user: String?,
        now: Date
    ) async throws(FederationFailure) -> UpstreamIdentity {
        guard let idToken = tokens.idToken, let jws = try? CompactJWS(parsing: idToken), let claims = try? jws.claimsObject() else {
            throw .invalidIdentity("the token endpoint sent no readable ID token")
        }
        guard let jwks = endpoints.jwks else { throw .invalidIdentity("the provider publishes no keys") }
        try await directory.verify(jws, provider: provider, jwksURL: jwks, now: now)
        let verified = try IDTokenRules.check(claims, provider: provider, issuer: endpoints.issuer, audience: provider.clientId, now: now)
        guard let sent = claims["nonce"]?.stringValue, Secrets.constantTimeEquals(sent, nonce) else { throw .nonceMismatch }
        var identity = verified
        // Some providers put only `sub` in the ID token; the rest is at the userinfo endpoint.
        if identity.email == nil, let userinfo = endpoints.userinfo,
            let data = try? await http.get(userinfo, bearer: tokens.accessToken),
            let object = (try? JSONValue.parse(data))?.objectValue, object["sub"]?.stringValue == identity.subject
        {
            identity.email = object["email"]?.stringValue
            identity.emailVerified = IDTokenRules.bool(object["email_verified"])
            identity.name = identity.name ?? object["name"]?.stringValue
            identity.givenName = identity.givenName ?? object["given_name"]?.stringValue
            identity.familyName = identity.familyName ?? object["family_name"]?.stringValue
        }
        // Apple sends the name once, beside the code (the `user` form field of the first authorization).
        if provider.kind == .apple, let user, let object = (try? JSONValue.parse(Data(user.utf8)))?.objectValue,
            let name = object["name"]?.objectValue
        {
            identity.givenName = name["firstName"]?.stringValue ?? identity.givenName
            identity.familyName = name["lastName"]?.stringValue ?? identity.familyName
        }
        if identity.name == nil, let full = [identity.givenName, identity.familyName].compactMap({ $0?.nonEmpty }).joined(separator: " ").nonEmpty {
            identity.name = full
        }
        return identity
    }

    /// GitHub: the account from `/user` (its numeric id is the subject), the verified primary address from
    /// `/user/emails` (the profile's public email is what the person typed there, not proof).
    private func githubIdentity(
        _ provider: IdentityProviderConfiguration, accessToken: String, endpoints: UpstreamEndpoints
    ) async throws(FederationFailure) -> UpstreamIdentity {
        guard let userURL = endpoints.userinfo else { throw .unavailable("no user API") }
        let data = try await http.get(userURL, bearer: accessToken, accept: "application/vnd.github+json")
        guard let user = (try? JSONValue.parse(data))?.objectValue, let id = user["id"]?.doubleValue, id.isFinite, id >= 1 else {
            throw .invalidIdentity("the user API sent no account id")
        }
        var identity = UpstreamIdentity(
            provider: provider.id, subject: String(Int64(id)), email: user["email"]?.stringValue, emailVerified: false,
            name: user["name"]?.stringValue, preferredUsername: user["login"]?.stringValue, assertsMFA: false)
        if let data = try? await http.get(userURL.appendingPathComponent("emails"), bearer: accessToken, accept: "application/vnd.github+json"),
            let emails = (try? JSONValue.parse(data))?.arrayValue
        {
            let primary = emails.compactMap(\.objectValue).first { $0["primary"]?.boolValue == true && $0["verified"]?.boolValue == true }
            if let address = primary?["email"]?.stringValue {
                identity.email = address
                identity.emailVerified = true
            }
        }
        return identity
    }

    // MARK: Native ID tokens

    /// An ID token an app got from the provider's own SDK (Google Sign-In on iOS), exchanged without a browser: its
    /// signature from the provider's keys, its issuer, an audience of this provider's (`client_id` or one of
    /// `native_client_ids`), then `NativeSignInNonces`' rules: its `nonce` is a nonce this server issued to `clientId`
    /// (`POST /identity/v1/native-nonce`), or that value's base64url SHA-256; it was issued in the last few minutes;
    /// and neither the token nor the nonce was used before (both are spent here). A token lifted from another sign-in,
    /// a log or a backend therefore signs nobody in, and one caught in flight signs in at most once.
    func verifyNativeIDToken(
        _ idToken: String, nonce: String?, provider: IdentityProviderConfiguration, clientId: String, nonces: NativeSignInNonces
    ) async throws -> UpstreamIdentity {
        do {
            guard provider.isOpenID, provider.kind != .apple else { throw FederationFailure.unknownProvider(provider.id) }
            let now = clock.now
            let endpoints = try await directory.endpoints(of: provider, now: now)
            guard let jws = try? CompactJWS(parsing: idToken), let claims = try? jws.claimsObject() else {
                throw FederationFailure.invalidIdentity("id_token is not a JWT")
            }
            guard let jwks = endpoints.jwks else { throw FederationFailure.invalidIdentity("the provider publishes no keys") }
            try await directory.verify(jws, provider: provider, jwksURL: jwks, now: now)
            let identity = try IDTokenRules.check(
                claims, provider: provider, issuer: endpoints.issuer, audience: provider.clientId, now: now,
                extraAudiences: provider.nativeClientIds)
            // `IDTokenRules.check` required both.
            guard let issuer = claims["iss"]?.stringValue, let expiry = claims["exp"]?.doubleValue else {
                throw FederationFailure.invalidIdentity("no iss or exp")
            }
            do {
                try await nonces.accept(
                    token: idToken, nonce: nonce, nonceClaim: claims["nonce"]?.stringValue, issuer: issuer, jti: claims["jti"]?.stringValue,
                    issuedAt: claims["iat"]?.doubleValue, expiresAt: expiry, clientId: clientId)
            } catch let refusal as NativeTokenRefusal {
                switch refusal {
                case .nonceMismatch: throw FederationFailure.nonceMismatch
                case .nonceNotIssued, .tooOld, .replayed: throw FederationFailure.invalidIdentity(refusal.description)
                }
            }
            metrics.signIn(.federated, .success)
            return identity
        } catch let failure as FederationFailure {
            metrics.signIn(.federated, .failure)
            throw failure
        }
    }

    // MARK: Hand-off to the app

    /// Stores the verified identity for the app that asked and returns the one-time code it collects it with.
    func handOff(_ identity: UpstreamIdentity, pending: Pending, state: String) async throws -> String {
        let code = Secrets.token()
        let result = Result(
            purpose: pending.purpose, target: pending.target, clientId: pending.clientId, stateHash: Secrets.digest(state), identity: identity)
        try await store.insertFederatedLogin(
            FederatedLoginRecord(
                handleHash: Secrets.digest(code), provider: identity.provider, purpose: Self.resultPurpose,
                payload: try JSONEncoder().encode(result),
                expiresAt: clock.now.addingTimeInterval(TimeInterval(lifetimes.loginTicket))))
        return code
    }

    /// Takes (once) the result `code` names, if it was handed off for `purpose` and `target` with this `state` (and,
    /// given `clientId`, to that application: a link an app started is completed by that app).
    func collect(code: String, state: String, purpose: Pending.Purpose, target: String, clientId: String? = nil) async throws
        -> UpstreamIdentity
    {
        guard !code.isEmpty, let record = try await store.takeFederatedLogin(handleHash: Secrets.digest(code), now: clock.now),
            record.purpose == Self.resultPurpose, let result = try? JSONDecoder().decode(Result.self, from: record.payload),
            result.purpose == purpose, Secrets.constantTimeEquals(result.target, target), clientId.map({ $0 == result.clientId }) ?? true,
            Secrets.constantTimeEquals(result.stateHash, Secrets.digest(state))
        else {
            throw FederationFailure.unknownResult
        }
        return result.identity
    }
}

/// The checks an upstream ID token's claims must pass after its signature (OpenID Connect Core §3.1.3.7).
enum IDTokenRules {
    static func check(
        _ claims: [String: JSONValue], provider: IdentityProviderConfiguration, issuer: String?, audience: String, now: Date,
        extraAudiences: [String] = []
    ) throws(FederationFailure) -> UpstreamIdentity {
        guard let sub = claims["sub"]?.stringValue, !sub.isEmpty, sub.count <= 255 else { throw .invalidIdentity("no sub") }
        guard let iss = claims["iss"]?.stringValue, issuerMatches(iss, expected: issuer, claims: claims, provider: provider) else {
            throw .invalidIdentity("iss is not the provider's issuer")
        }
        let audiences: [String] = claims["aud"]?.stringValue.map { [$0] } ?? claims["aud"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let accepted = [audience] + extraAudiences
        guard let mine = audiences.first(where: accepted.contains) else { throw .invalidIdentity("aud is another client") }
        // Several audiences: the one it was issued to must be us (`azp`).
        if audiences.count > 1, claims["azp"]?.stringValue != mine { throw .invalidIdentity("azp is another client") }
        guard let exp = claims["exp"]?.doubleValue, exp > now.timeIntervalSince1970 - 60 else { throw .invalidIdentity("the ID token has expired") }
        if let iat = claims["iat"]?.doubleValue, iat > now.timeIntervalSince1970 + 300 { throw .invalidIdentity("iat is in the future") }
        let amr = claims["amr"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let mfa = amr.contains("mfa") || claims["acr"]?.stringValue == AuthenticationMethods.multiFactorACR
        return UpstreamIdentity(
            provider: provider.id, subject: sub, email: claims["email"]?.stringValue, emailVerified: bool(claims["email_verified"]),
            name: claims["name"]?.stringValue, givenName: claims["given_name"]?.stringValue,
            familyName: claims["family_name"]?.stringValue, preferredUsername: claims["preferred_username"]?.stringValue,
            assertsMFA: mfa && provider.trustsMFA)
    }

    /// `email_verified` as a boolean, or as Apple's string.
    static func bool(_ value: JSONValue?) -> Bool { value?.boolValue ?? (value?.stringValue == "true") }

    /// The token's issuer is the provider's: equal, or (Microsoft's multi-tenant template) equal once the token's own
    /// `tid` fills `{tenantid}`; Google's tokens may name the issuer without its scheme.
    static func issuerMatches(_ iss: String, expected: String?, claims: [String: JSONValue], provider: IdentityProviderConfiguration) -> Bool {
        guard let expected else { return false }
        let want = UpstreamDirectory.trimmed(expected), got = UpstreamDirectory.trimmed(iss)
        if want.contains("{tenantid}") {
            guard let tid = claims["tid"]?.stringValue, !tid.isEmpty, tid.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                return false
            }
            if let tenant = provider.tenant, !["common", "organizations", "consumers"].contains(tenant), tenant != tid { return false }
            return got == want.replacingOccurrences(of: "{tenantid}", with: tid)
        }
        if got == want { return true }
        if provider.kind == .google, let host = URL(string: want)?.host, got == host { return true }
        return false
    }
}
