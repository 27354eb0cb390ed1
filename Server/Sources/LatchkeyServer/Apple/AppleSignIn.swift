import Crypto
import Foundation
import LatchkeyJOSE
import Logging

/// Why a Sign in with Apple identity token was refused.
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
    case accountDisabled
    /// No account is linked or linkable, and the application does not let new accounts register.
    case registrationClosed

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
        case .accountDisabled: "the account is disabled"
        case .registrationClosed: "no account is linked to this Apple ID and the application's registration is not open"
        }
    }

    var oauthError: OAuthError { OAuthError(.accessDenied, description) }
    var messageKey: String {
        switch self {
        case .expired: "apple.expired"
        case .accountDisabled: "login.disabled"
        case .registrationClosed: "flows.errors.registration_disabled"
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

/// Sign in with Apple for native apps: Apple's identity token verified against Apple's published keys, and the
/// account it signs in to.
struct AppleSignIn: Sendable {
    let appleKeys: AppleKeySet
    /// Apple's issuer (`ServerConfiguration.apple`).
    let appleIssuer: String
    let store: any UserStore & FederatedIdentityStore
    let clock: ServerClock
    let metrics: ServerMetrics
    /// Exchanges the app's authorization code for the Apple refresh token the account's deletion revokes.
    let federation: Federation

    /// Verifies a Sign in with Apple identity token for `client` and returns the account it signs in: the linked one,
    /// else the account whose email claim is the same address when both Apple and the account have it verified (then
    /// linked), else a new account (first-time name applied) when the application's registration is open.
    ///
    /// The nonce is the server's (`NativeSignInNonces`): the app fetched one (`POST /identity/v1/native-nonce`), put
    /// its `base64url(SHA256(nonce))` in Apple's request and sends the nonce here. The token must be recent, and the
    /// token and nonce are spent before any account is looked up, so a lifted token signs nobody in and a caught one
    /// at most once.
    ///
    /// `authorizationCode` is the credential's `authorizationCode`: with an `apple` provider configured (the team's
    /// key), it is exchanged at Apple for the refresh token that deleting the account revokes (kept sealed on the
    /// link). Without one, or when Apple refuses it, the sign-in goes on.
    func signInWithApple(
        idToken: String, nonce: String?, client: ClientConfiguration,
        givenName: String?, familyName: String?, authorizationCode: String? = nil, nonces: NativeSignInNonces, logger: Logger
    ) async throws -> UserRecord {
        do {
            let user = try await verifyAppleSignIn(
                idToken: idToken, nonce: nonce, client: client, givenName: givenName, familyName: familyName,
                authorizationCode: authorizationCode, nonces: nonces, logger: logger)
            metrics.signIn(.apple, .success)
            return user
        } catch let failure as AppleSignInFailure {
            metrics.signIn(.apple, .failure)
            throw failure
        }
    }

    private func verifyAppleSignIn(
        idToken: String, nonce: String?, client: ClientConfiguration,
        givenName: String?, familyName: String?, authorizationCode: String?, nonces: NativeSignInNonces, logger: Logger
    ) async throws -> UserRecord {
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
        // Store failures propagate as they are (a server fault, answered 500), not as a refused token.
        let user = try await appleAccount(claims, client: client, givenName: givenName, familyName: familyName, logger: logger)
        guard !user.disabled else { throw AppleSignInFailure.accountDisabled }
        if let code = authorizationCode?.nonEmpty, let bundleId = claims.aud.values.first(where: client.appleBundleIds.contains),
            let sealed = await federation.nativeAppleRefreshToken(code: code, bundleId: bundleId, subject: claims.sub, logger: logger)
        {
            try await store.keepFederatedRefreshToken(provider: Federation.nativeAppleLink, subject: claims.sub, sealed: sealed)
        }
        return user
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

    private func appleAccount(
        _ claims: AppleIdentityClaims, client: ClientConfiguration, givenName: String?,
        familyName: String?, logger: Logger
    ) async throws -> UserRecord {
        let provider = Federation.nativeAppleLink
        if let link = try await store.federatedIdentity(provider: provider, subject: claims.sub),
            let user = try await store.user(id: link.userId)
        {
            return user
        }
        let now = clock.now
        if let email = claims.email, claims.emailVerified == true {
            // Both sides must have proven the same address: an account whose email nobody verified (anyone can sign up
            // with any address) is not handed to the Apple user, nor the other way round (account pre-hijacking).
            // Matched on the email claim only, never the username: `email_verified` vouches for the claim, and a
            // username that looks like an address proves nothing about who reads it.
            let verified = try await store.users(claim: "email", equals: email).filter {
                $0.claims["email"]?.lowercased() == email.lowercased() && $0.claims["email_verified"] == "true"
            }
            if verified.count == 1, let existing = verified.first {
                try await store.linkFederatedIdentity(.init(provider: provider, subject: claims.sub, userId: existing.id, createdAt: now))
                logger.info("Sign in with Apple linked to an existing account", metadata: ["user": .string(existing.id)])
                return existing
            }
        }
        // Linking is fine under any policy; a new account only where anyone may register (invite-only and closed
        // applications create accounts through their own flows).
        guard client.registration == .open else { throw AppleSignInFailure.registrationClosed }
        var profile: [String: String] = [:]
        if let email = claims.email {
            profile["email"] = email
            profile["email_verified"] = claims.emailVerified == true ? "true" : "false"
        }
        if let givenName = givenName?.nonEmpty { profile["given_name"] = givenName }
        if let familyName = familyName?.nonEmpty { profile["family_name"] = familyName }
        if let name = [givenName, familyName].compactMap({ $0?.nonEmpty }).joined(separator: " ").nonEmpty { profile["name"] = name }
        let id = UUID().uuidString.lowercased()
        // The email becomes the sign-in name unless an account already uses it (an unverified Apple email must not
        // take over, nor be blocked by, someone else's account).
        var username = "apple.\(claims.sub)"
        if let email = claims.email, try await store.user(username: email) == nil,
            try await store.users(claim: "email", equals: email).isEmpty
        {
            username = email
        }
        let user = UserRecord(
            id: id, username: username, passwordHash: PasswordHasher.noPassword,
            claims: profile, disabled: false, failedLogins: 0, lockedUntil: nil, createdAt: now)
        try await store.insertUser(user)
        try await store.linkFederatedIdentity(.init(provider: provider, subject: claims.sub, userId: id, createdAt: now))
        logger.info("account created with Sign in with Apple", metadata: ["user": .string(id)])
        return user
    }
}
