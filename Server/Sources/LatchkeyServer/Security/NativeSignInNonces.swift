import Crypto
import Foundation
import LatchkeyJOSE

/// Why a native provider's ID token (Google Sign-In's, Sign in with Apple's) was refused by `NativeSignInNonces`.
enum NativeTokenRefusal: Error, Equatable, CustomStringConvertible {
    /// The request's `nonce` is not one this server issued to this application, or it has expired.
    case nonceNotIssued
    /// The token's `nonce` claim is neither the server's nonce nor its base64url SHA-256.
    case nonceMismatch
    /// The token has no `iat`, or was issued longer ago than `NativeSignInNonces.maxTokenAge`.
    case tooOld
    /// The token, or the nonce, was already exchanged once.
    case replayed

    var description: String {
        switch self {
        case .nonceNotIssued: "the nonce was not issued by this server to this application, or has expired"
        case .nonceMismatch: "the ID token's nonce is neither the server's nonce nor its SHA-256"
        case .tooOld: "the ID token has no iat or was issued more than \(Int(NativeSignInNonces.maxTokenAge)) s ago"
        case .replayed: "the ID token or its nonce was already used"
        }
    }
}

/// The server's nonces for native provider sign-in, and the rules every native upstream ID token must pass before it
/// signs anybody in (security review 3, R3-3).
///
/// A caller-chosen nonce proves nothing when the token carries it in the clear (Google Sign-In): whoever holds the
/// token holds its nonce. So the nonce is the server's: `POST /identity/v1/native-nonce` issues one per sign-in,
/// bound to the application and short-lived; the app hands it (or its SHA-256, as Sign in with Apple takes it) to the
/// provider's SDK and sends the raw value with the token. Each nonce and each accepted token is spent once
/// (`SingleUseStore`), and a token older than a few minutes is refused, so a token lifted from a log or a backend
/// cannot sign in, and one that is caught in flight signs in at most once.
///
/// The nonce is stateless until spent: `lkn1.<id>.<exp>.<mac>`, the MAC an HMAC-SHA256 (key derived from the
/// key-encryption key, `SecretSealer`) over the application, the id and the expiry, so every instance sharing the
/// key accepts another's, and issuing writes nothing. About 80 characters, within the authorization endpoint's
/// 255-character `nonce`.
struct NativeSignInNonces: Sendable {
    static let prefix = "lkn1"
    /// How long an issued nonce may be used: the provider's sheet is shown between issue and use.
    static let lifetime: TimeInterval = 600
    /// The oldest upstream token accepted (`iat`): a native token is exchanged as soon as the provider's SDK returns it.
    static let maxTokenAge: TimeInterval = 300
    /// Kept past the token's `exp` in the single-use record, as the expiry checks allow that much clock skew.
    static let skew: TimeInterval = 60

    let sealer: SecretSealer
    let store: any SingleUseStore
    let clock: ServerClock

    /// A new nonce for `clientId`'s native sign-in, and its lifetime in seconds.
    func issue(clientId: String) -> (nonce: String, expiresIn: Int) {
        let id = Secrets.identifier()
        let expiry = Int64(clock.now.timeIntervalSince1970 + Self.lifetime)
        let mac = Base64URL.encode(sealer.nativeSignInNonceMAC(Self.fields(clientId: clientId, id: id, expiry: expiry)))
        return ([Self.prefix, id, String(expiry), mac].joined(separator: "."), Int(Self.lifetime))
    }

    /// The id and expiry of `nonce` when this server issued it to `clientId` and it has not expired; nil otherwise.
    func verify(_ nonce: String, clientId: String) -> (id: String, expiresAt: Date)? {
        let parts = nonce.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == Self.prefix, !parts[1].isEmpty, parts[1].utf8.count <= 64, let expiry = Int64(parts[2]) else {
            return nil
        }
        let expected = Base64URL.encode(sealer.nativeSignInNonceMAC(Self.fields(clientId: clientId, id: parts[1], expiry: expiry)))
        guard Secrets.constantTimeEquals(expected, parts[3]) else { return nil }
        let expiresAt = Date(timeIntervalSince1970: TimeInterval(expiry))
        guard expiresAt > clock.now else { return nil }
        return (parts[1], expiresAt)
    }

    /// Every rule a verified upstream token (signature, issuer, audience and expiry already checked) must pass, in
    /// order: the request's `nonce` is the server's for this application; the token's `nonce` claim is that value
    /// or its base64url SHA-256; `iat` is recent; then the token (`upstream:<iss>:<jti or SHA-256 of the token>`) and
    /// the nonce are spent. Store failures are thrown as they are (a server fault, not a refused token).
    func accept(
        token: String, nonce: String?, nonceClaim: String?, issuer: String, jti: String?, issuedAt: TimeInterval?,
        expiresAt: TimeInterval, clientId: String
    ) async throws {
        guard let nonce, let issued = verify(nonce, clientId: clientId) else { throw NativeTokenRefusal.nonceNotIssued }
        // The nonce itself (Google), or its base64url SHA-256 (Apple): PKCE's S256, the nonce being a valid verifier.
        guard let nonceClaim, Secrets.constantTimeEquals(nonceClaim, nonce) || PKCE.verify(verifier: nonce, challenge: nonceClaim)
        else { throw NativeTokenRefusal.nonceMismatch }
        guard let issuedAt, clock.now.timeIntervalSince1970 - issuedAt <= Self.maxTokenAge else { throw NativeTokenRefusal.tooOld }
        // A provider's `jti` is bounded by its signature, not by us: a long one is kept as its digest; without one,
        // the token's own digest names it.
        let tokenId: String
        if let jti, !jti.isEmpty {
            tokenId = jti.utf8.count <= 128 ? jti : "sha256:" + Base64URL.encode(Secrets.digest(jti))
        } else {
            tokenId = "sha256:" + Base64URL.encode(Secrets.digest(token))
        }
        let upstreamKey = "upstream:" + issuer + ":" + tokenId
        guard try await store.consumeTokenId(upstreamKey, expiresAt: Date(timeIntervalSince1970: expiresAt + Self.skew)) else {
            throw NativeTokenRefusal.replayed
        }
        guard try await store.consumeTokenId("native-nonce:" + issued.id, expiresAt: issued.expiresAt) else {
            throw NativeTokenRefusal.replayed
        }
    }

    private static func fields(clientId: String, id: String, expiry: Int64) -> String {
        // The application is length-prefixed, so no client id can be made to collide with another's fields.
        "native-nonce|\(clientId.utf8.count):\(clientId)|\(id)|\(expiry)"
    }
}
