import Crypto
import Foundation
import LatchkeyJOSE
import Logging

/// Why a Sign in with Apple identity token was refused (what the account then does is `FederationFailure`'s).
enum AppleSignInFailure: Error, Equatable, CustomStringConvertible {
    case notConfigured
    case malformed
    case keysUnavailable
    case badSignature
    case wrongIssuer
    case wrongAudience
    case expired
    case nonceMismatch
    /// The token or its nonce was already exchanged (`NativeSignInNonces`).
    case replayed

    var description: String {
        switch self {
        case .notConfigured: "the application accepts no Sign in with Apple tokens (apple_bundle_ids is empty)"
        case .malformed: "id_token is not a JWT with the expected claims"
        case .keysUnavailable: "Apple's signing keys could not be fetched"
        case .badSignature: "id_token signature does not verify against Apple's keys"
        case .wrongIssuer: "id_token was not issued by Apple"
        case .wrongAudience: "id_token was issued to another application"
        case .expired: "id_token has expired"
        case .nonceMismatch: "id_token nonce is not a nonce this server issued to the application (or its SHA-256)"
        case .replayed: "id_token or its nonce was already used"
        }
    }

    var oauthError: OAuthError { OAuthError(.accessDenied, description) }
    var messageKey: String {
        switch self {
        case .expired: "apple.expired"
        default: "apple.failed"
        }
    }
}

/// The claims we read from Apple's identity token.
struct AppleIdentityClaims: Decodable, Sendable {
    var iss: String
    var sub: String
    var aud: Audience
    var exp: Int
    var iat: Int?
    var nonce: String?
    var jti: String?
    var email: String?
    var emailVerified: Bool?

    /// `aud` is a string (Apple) or an array (JWT allows both).
    enum Audience: Decodable, Sendable {
        case one(String), many([String])
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let s = try? c.decode(String.self) { self = .one(s) } else { self = .many(try c.decode([String].self)) }
        }
        var values: [String] {
            switch self {
            case .one(let s): [s];
            case .many(let a): a
            }
        }
    }

    enum CodingKeys: String, CodingKey { case iss, sub, aud, exp, iat, nonce, jti, email, emailVerified = "email_verified" }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        iss = try c.decode(String.self, forKey: .iss)
        sub = try c.decode(String.self, forKey: .sub)
        aud = try c.decode(Audience.self, forKey: .aud)
        exp = try c.decode(Int.self, forKey: .exp)
        iat = try c.decodeIfPresent(Int.self, forKey: .iat)
        nonce = try c.decodeIfPresent(String.self, forKey: .nonce)
        jti = try? c.decodeIfPresent(String.self, forKey: .jti)
        email = try c.decodeIfPresent(String.self, forKey: .email)
        // Apple sends "true"/"false" as strings; other issuers send booleans.
        if let b = try? c.decodeIfPresent(Bool.self, forKey: .emailVerified) {
            emailVerified = b
        } else {
            emailVerified = (try? c.decodeIfPresent(String.self, forKey: .emailVerified)).flatMap { $0.map { $0 == "true" } }
        }
    }
}

/// Sign in with Apple for native apps, the Apple preset's native path: Apple's identity token verified against Apple's
/// published keys, then the account it signs in to by the federation's rules (`FederatedAccounts`), as the ID token of
/// any other provider's native SDK.
struct NativeAppleSignIn: Sendable {
    let appleKeys: AppleKeySet
    /// Apple's issuer (`ServerConfiguration.apple`).
    let appleIssuer: String
    let clock: ServerClock
    let metrics: ServerMetrics
    /// Exchanges the app's authorization code for the Apple refresh token the account's deletion revokes.
    let federation: Federation
    let accounts: FederatedAccounts

    /// The provider the native path links under (`apple`, the web preset's id too, so one Apple ID is one link). Apple
    /// verifies every address it sends, its private relay addresses included, so an Apple identity links to the account
    /// that has verified the same address (`link_by_verified_email`); Apple authenticated the person in a way we cannot
    /// see, so it never counts as a second factor (`trust_mfa` off).
    static let provider = IdentityProviderConfiguration(
        id: Federation.nativeAppleLink, kind: .apple, name: "Apple", clientId: "", linkByVerifiedEmail: true, trustsMFA: false)

    /// Verifies a Sign in with Apple identity token for `client` and returns the account it signs in to and the
    /// identity it signed in with: the linked account, else the one that has verified the same address (then linked),
    /// else a new account (first-time name applied) when the application's registration is open. An address another
    /// account uses that may not be linked is refused (`FederationFailure.emailInUse`), and an address Apple did not
    /// verify is not kept, as for every provider.
    ///
    /// The nonce is the server's (`NativeSignInNonces`): the app fetched one (`POST /identity/v1/native-nonce`), put
    /// its `base64url(SHA256(nonce))` in Apple's request and sends the nonce here. The token must be recent, and the
    /// token and nonce are spent before any account is looked up, so a lifted token signs nobody in and a caught one
    /// at most once.
    ///
    /// `authorizationCode` is the credential's `authorizationCode`: with an `apple` provider configured (the team's
    /// key), it is exchanged at Apple for the refresh token that deleting the account revokes (kept sealed on the
    /// link). Without one, or when Apple refuses it, the sign-in goes on.
    func signIn(
        idToken: String, nonce: String?, client: ClientConfiguration, givenName: String?, familyName: String?,
        authorizationCode: String? = nil, nonces: NativeSignInNonces, origin: AuditOrigin
    ) async throws -> (user: UserRecord, identity: UpstreamIdentity) {
        do {
            let (identity, bundleId) = try await verify(
                idToken: idToken, nonce: nonce, client: client, givenName: givenName, familyName: familyName, nonces: nonces)
            // Store failures propagate as they are (a server fault, answered 500), not as a refused token.
            let user = try await accounts.signIn(identity, provider: Self.provider, client: client, origin: origin)
            // Only for a sign-in that went through: a refused one must not leave an Apple authorization behind that no
            // deletion would ever revoke.
            if let code = authorizationCode?.nonEmpty,
                let sealed = await federation.nativeAppleRefreshToken(
                    code: code, bundleId: bundleId, subject: identity.subject, logger: origin.logger)
            {
                var kept = identity
                kept.sealedRefreshToken = sealed
                try await accounts.keepRefreshToken(of: kept)
            }
            metrics.signIn(.apple, .success)
            return (user, identity)
        } catch let refusal as any SignInRefusal {
            metrics.signIn(.apple, .failure)
            throw refusal
        }
    }

    /// The identity Apple's token asserts, after its signature, its claims and its nonce, and the application's bundle
    /// id it was issued to.
    private func verify(
        idToken: String, nonce: String?, client: ClientConfiguration, givenName: String?, familyName: String?, nonces: NativeSignInNonces
    ) async throws -> (UpstreamIdentity, bundleId: String) {
        guard !client.appleBundleIds.isEmpty else { throw AppleSignInFailure.notConfigured }
        let jws: CompactJWS
        let claims: AppleIdentityClaims
        do {
            jws = try CompactJWS(parsing: idToken)
            claims = try jws.claims(as: AppleIdentityClaims.self)
        } catch { throw AppleSignInFailure.malformed }
        let now = clock.now
        do { try await appleKeys.verify(jws, now: now) } catch let failure as AppleSignInFailure { throw failure } catch {
            throw AppleSignInFailure.badSignature
        }
        try Self.check(claims, client: client, issuer: appleIssuer, now: now)
        do {
            try await nonces.accept(
                token: idToken, nonce: nonce, nonceClaim: claims.nonce, issuer: claims.iss, jti: claims.jti,
                issuedAt: claims.iat.map { TimeInterval($0) }, expiresAt: TimeInterval(claims.exp), clientId: client.clientId)
        } catch let refusal as NativeTokenRefusal {
            switch refusal {
            case .nonceNotIssued, .nonceMismatch: throw AppleSignInFailure.nonceMismatch
            case .tooOld: throw AppleSignInFailure.expired
            case .replayed: throw AppleSignInFailure.replayed
            }
        }
        // Apple's token carries no name: the app sends the one Apple gave it on the first authorization.
        let name = [givenName, familyName].compactMap { $0?.nonEmpty }.joined(separator: " ").nonEmpty
        let identity = UpstreamIdentity(
            provider: Self.provider.id, subject: claims.sub, email: claims.email, emailVerified: claims.emailVerified == true,
            name: name, givenName: givenName?.nonEmpty, familyName: familyName?.nonEmpty, preferredUsername: nil, assertsMFA: false)
        // `check` found it.
        guard let bundleId = claims.aud.values.first(where: client.appleBundleIds.contains) else { throw AppleSignInFailure.wrongAudience }
        return (identity, bundleId)
    }

    /// The claim rules, after the signature (the nonce, age and single use are `NativeSignInNonces`').
    private static func check(
        _ claims: AppleIdentityClaims, client: ClientConfiguration, issuer: String, now: Date
    ) throws(AppleSignInFailure) {
        guard claims.iss == issuer else { throw .wrongIssuer }
        guard claims.aud.values.contains(where: client.appleBundleIds.contains) else { throw .wrongAudience }
        guard TimeInterval(claims.exp) > now.timeIntervalSince1970 - 30 else { throw .expired }
        if let iat = claims.iat, TimeInterval(iat) > now.timeIntervalSince1970 + 300 { throw .malformed }
    }
}
