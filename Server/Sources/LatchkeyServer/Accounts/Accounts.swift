import Foundation
import Logging

/// Accounts and their credentials: the user directory (profiles, uniqueness, passwords), password checks with their
/// throttle and lockout, second factors, one-time code budgets and the mails that go with account changes. One value
/// shared by the controllers and flow steps that sign people in or change accounts, so every path applies the same
/// rules.
struct Accounts: Sendable {
    let configuration: ServerConfiguration
    let store: any UserStore & SecondFactorStore & RecoveryCodeStore & AccountEventStore & ClientStore & SessionStore & AddressEventStore
    let clock: ServerClock
    let hasher: PasswordHasher
    /// Failed password attempts per address.
    let throttle: any AddressLimiter
    /// Logs the shared recovery-code budget's tripping once per window (`reserveRecoveryCodeAttempt`).
    let recoveryAlarm: OncePerInterval
    /// Keys one-time code digests.
    let sealer: SecretSealer
    let outbox: any Outbox
    let metrics: ServerMetrics
    /// Sign-in failures and lockouts of password checks, email changes (`AuditTrail`).
    let audit: AuditTrail

    var userSchema: UserSchema { configuration.userSchema }

    /// Creates a user with a bcrypt password hash.
    @discardableResult
    func createUser(username: String, password: String, claims: [String: String] = [:], disabled: Bool = false) async throws -> String {
        let id = UUID().uuidString.lowercased()
        try await store.insertUser(
            UserRecord(
                id: id, username: username, passwordHash: try await hasher.hash(password), claims: claims,
                disabled: disabled, failedLogins: 0, lockedUntil: nil, createdAt: clock.now))
        return id
    }

    /// The account an identifier names: its username, else the one account whose `email` (or `phone_number`) claim
    /// it is.
    ///
    /// An identifier that is one account's username and another's email or number (possible only in data older than
    /// the rule that keeps them apart, see `uniquenessConflict`) names no account: picking either would hand one
    /// person's sign-in to the other.
    func account(identifier: String) async throws -> UserRecord? {
        let claim = identifier.contains("@") ? "email" : "phone_number"
        let matches = try await store.users(claim: claim, equals: identifier)
        if let user = try await store.user(username: identifier) {
            return matches.contains(where: { $0.id != user.id }) ? nil : user
        }
        return matches.count == 1 ? matches.first : nil
    }
}
