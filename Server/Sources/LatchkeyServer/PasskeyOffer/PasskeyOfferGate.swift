import Foundation
import Hummingbird
import LatchkeyJOSE

/// Decides whether a hosted sign-in ends on the passkey offer ("Sign in faster next time") instead of going straight
/// back to the application, and hands the login request to the offer page.
///
/// Offered only when all of these hold, so nobody is asked twice for what they have or cannot use:
/// - the deployment has it on (`webauthn.offer_after_password`, on by default);
/// - the first factor was the password (`amr` has `pwd`); a passkey, a provider's sign-in or an SSO session never
///   lead here;
/// - the application accepts passkeys made for this server's own origin (the page's passkey button's rule);
/// - the account has no passkey yet (the server cannot know which devices hold one, so one is enough);
/// - this browser did not answer "Not now" for this account in the last 30 days.
struct PasskeyOfferGate: Sendable {
    let enabled: Bool
    let store: any PasskeyStore & LoginRequestStore
    let cookies: CookiePolicy
    let passkeys: Passkeys

    /// How long "Not now" keeps the offer away in one browser.
    static let declineSeconds = 30 * 24 * 3600
    static let path = "/passkey-offer"

    func shouldOffer(userId: String, amr: [String], client: ClientConfiguration?, request: Request) async throws -> Bool {
        guard enabled, amr.contains("pwd"), let client, passkeys.passkeyOrigins(of: client).contains(passkeys.ownOrigin) else {
            return false
        }
        if let declined = request.cookieValue(cookies.passkeyLaterName), Secrets.constantTimeEquals(declined, Self.declined(userId)) {
            return false
        }
        return try await store.passkeys(userId: userId).isEmpty
    }

    /// The `lk_passkey_later` value for an account: a digest, so the cookie names no account, and another account
    /// signing in on the same browser is still offered a passkey.
    static func declined(_ userId: String) -> String {
        Base64URL.encode(Secrets.digest("lk-passkey-later|" + userId).prefix(16))
    }

    /// Hands the hosted sign-in's login request to the offer page for `userId`, who just signed in with a password:
    /// the same id and times (the page tells an interactive sign-in by them).
    func pageAfterSignIn(_ pending: LoginRequestRecord, userId: String) async throws -> String {
        var awaiting = pending
        awaiting.request.passkeyOfferFor = userId
        try await store.deleteLoginRequest(id: pending.id)
        try await store.insertLoginRequest(awaiting)
        return Self.path + "?request=" + FormEncoding.encode(pending.id)
    }
}
