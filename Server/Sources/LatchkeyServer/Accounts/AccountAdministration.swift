import Foundation
import HummingbirdOTP

/// Operator actions on accounts (used by tests, fixtures and administration tooling).
extension IdentityServer {
    /// Enrolls a TOTP authenticator for the user; returns the `otpauth://` URL to put in an authenticator app
    /// and the shared secret (HMAC key as text, as HummingbirdOTP uses it).
    @discardableResult
    public func enrollTOTP(userId: String) async throws -> (secret: String, url: String) {
        guard let user = try await store.user(id: userId) else { throw ConfigurationError.invalid("no user \(userId)") }
        let secret = Secrets.token(bytes: 20)
        try await store.upsertFactor(UserFactorRecord(userId: userId, kind: .totp, secret: secret, createdAt: clock.now))
        await audit.record(
            .mfaEnrolled, subject: userId, actor: AuditEvent.operatorActor, details: ["factor": "totp"],
            origin: AuditOrigin(address: nil, logger: logger))
        let url = TOTP(secret: secret).createAuthenticatorURL(label: user.username, issuer: "Latchkey")
        return (secret, url)
    }

    /// Turns on emailed one-time codes as the user's second factor.
    public func enrollEmailOTP(userId: String) async throws {
        try await store.upsertFactor(UserFactorRecord(userId: userId, kind: .emailOTP, secret: "", createdAt: clock.now))
        await audit.record(
            .mfaEnrolled, subject: userId, actor: AuditEvent.operatorActor, details: ["factor": "email"],
            origin: AuditOrigin(address: nil, logger: logger))
    }

    /// Creates an invitation to register with `applicationId`; returns the code to hand to the invitee.
    public func createInvitation(applicationId: String, email: String? = nil, validFor seconds: Int = 7 * 24 * 3600) async throws -> String {
        let code = Secrets.token(bytes: 12)
        let now = clock.now
        try await store.insertInvitation(
            InvitationRecord(
                codeHash: Secrets.digest(code), applicationId: applicationId, email: email,
                createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(seconds)), usedAt: nil))
        return code
    }

    /// Messages recorded by the development outbox for `recipient`, newest first.
    public func outboxMessages(recipient: String) async throws -> [OutboxMessage] {
        try await store.outboxMessages(recipient: recipient, limit: 20)
    }

    /// The account with this username, if any.
    public func user(username: String) async throws -> UserRecord? { try await store.user(username: username) }
}
