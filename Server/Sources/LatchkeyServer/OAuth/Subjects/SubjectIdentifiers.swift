import Foundation

/// The `sub` an application is given for an account: the account id for a `public` application, the account's pairwise
/// identifier in the application's sector for a `pairwise` one (`SecretSealer.pairwiseSubject`). Every place that
/// tells an application who signed in asks here — the ID token, the access token, userinfo, introspection,
/// `/users/me`, back-channel logout tokens — so the application reads one value wherever it looks. The server itself
/// keeps working with account ids: an access token's row holds the account id, and `TokenValidator` puts it back in
/// `AccessTokenClaims.sub` (the token's own `sub` stays in `publishedSubject`).
struct SubjectIdentifiers: Sendable {
    let sealer: SecretSealer

    func subject(of accountId: String, for client: ClientConfiguration) -> String {
        guard client.subjectType == .pairwise else { return accountId }
        // `subjectProblem` keeps an application without one sector from starting or registering; were one to slip
        // through, its own id is a sector no other application shares (never the account id).
        let sector = client.sectorIdentifier ?? "client:" + client.clientId
        return sealer.pairwiseSubject(sector: sector, accountId: accountId)
    }
}
