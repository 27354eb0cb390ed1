import Foundation

/// Withdrawing a person's consent to an application, for the account API, the account page and the console alike.
enum ConsentWithdrawal {
    /// Forgets the consent and revokes the application's grants for the person (access given on that consent ends
    /// with it); the number of grants revoked, nil when there was no consent. The API and the console both withdraw
    /// through here.
    static func withdraw(
        _ clientId: String, of userId: String, store: any ConsentStore & SessionStore & TokenStore, now: Date, byAdministrator: Bool
    ) async throws -> Int? {
        guard try await store.withdrawConsent(userId: userId, clientId: clientId) else { return nil }
        let grants = try await store.userSessions(userId: userId, now: now).grants.filter { $0.family.clientId == clientId }
        let reason = byAdministrator ? "consent withdrawn by an administrator" : "consent withdrawn"
        for grant in grants { try await store.revokeFamily(id: grant.family.id, reason: reason, now: now) }
        return grants.count
    }
}
