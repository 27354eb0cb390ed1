import Foundation
import Hummingbird
import Logging

/// The sign-in session a browser's cookie names: live only while it has not ended or expired and its user may still
/// sign in. Shared by every handler that asks "who is this browser signed in as".
struct BrowserSessions: Sendable {
    let store: any UserStore & SessionStore
    let cookies: CookiePolicy
    let clock: ServerClock

    /// The session behind the request's cookie, if it is live and its user may still sign in.
    func live(for request: Request) async throws -> (session: SessionRecord, user: UserRecord)? {
        guard let secret = request.cookieValue(cookies.sessionName), !secret.isEmpty,
            let session = try await store.session(secretHash: Secrets.digest(secret)),
            session.endedAt == nil, session.expiresAt > clock.now,
            let user = try await store.user(id: session.userId), !user.disabled
        else { return nil }
        return (session, user)
    }
}

/// Opens server-side sign-in sessions. Tokens issued from a session carry its `sid`, so ending it ends them.
///
/// Every completed sign-in opens one (hosted page, flows, reachFive tickets, federation, native tokens, step-up), so
/// this is where `signin.succeeded` is audited: after every factor, not after a password a second factor follows.
struct SignInSessions: Sendable {
    let store: any SessionStore
    let clock: ServerClock
    /// `lifetimes.session`, in seconds.
    let lifetime: Int
    let audit: AuditTrail
    /// A completed sign-in keeps an account whose owner had asked to delete it (`account_deletion_grace_days`).
    let deletions: AccountDeletions

    /// A sign-in session without a browser cookie (native sign-ins, flows, step-up).
    func open(userId: String, authTime: Date, amr: [String], origin: AuditOrigin) async throws -> SessionRecord {
        try await openForBrowser(userId: userId, authTime: authTime, amr: amr, origin: origin).session
    }

    /// A sign-in session and the secret its browser cookie carries (stored only as a digest).
    func openForBrowser(userId: String, authTime: Date, amr: [String], origin: AuditOrigin) async throws
        -> (session: SessionRecord, secret: String)
    {
        let now = clock.now
        let secret = Secrets.token()
        let session = SessionRecord(
            id: Secrets.identifier(), secretHash: Secrets.digest(secret), userId: userId, authTime: authTime,
            createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)), endedAt: nil,
            amr: AuthenticationMethods.normalized(amr))
        try await store.insertSession(session)
        var details = ["method": Self.method(of: amr), "amr": AuthenticationMethods.published(amr).joined(separator: " ")]
        if let provider = AuthenticationMethods.provider(amr) { details["provider"] = provider }
        await audit.record(.signInSucceeded, subject: userId, details: details, origin: origin)
        await deletions.restoreIfScheduled(userId: userId, origin: origin)
        return (session, secret)
    }

    /// The first factor a sign-in's methods name, as the audit trail reports it.
    static func method(of amr: [String]) -> String {
        if amr.contains("fed") || AuthenticationMethods.provider(amr) != nil { return "federated" }
        if amr.contains("hwk") || amr.contains("swk") { return "passkey" }
        if amr.contains("pwd") { return "password" }
        return amr.first ?? "unknown"
    }
}
