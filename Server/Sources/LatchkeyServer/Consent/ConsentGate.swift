import Foundation

/// Decides whether a sign-in must stop at the consent page before a code is issued, and sends the browser there.
///
/// Only third-party applications ask (`ApplicationTrust`): the first time, whenever the request asks for a scope not
/// consented to before, and at every `prompt=consent`. `ConsentGate.requireConsent` holds the same rule at the minting
/// of every code, so a front door that forgets this gate answers `consent_required` rather than a code.
struct ConsentGate: Sendable {
    let store: any ClientStore & ConsentStore & LoginRequestStore
    let clock: ServerClock
    let lifetimes: TokenLifetimes

    /// Whether the person must be asked before `request` is answered with a code for `userId`.
    func mustAsk(_ request: AuthorizationRequest, userId: String) async throws -> Bool {
        try await Self.consentOwed(
            clientId: request.clientId, userId: userId, scope: request.scope, askingAgain: request.prompt.contains("consent"), store: store)
    }

    /// Refuses (`consent_required`) tokens or a code for a third-party application unless the person consented to
    /// every scope asked for. Held where codes are minted and where flow assertions become tokens: the two places
    /// every sign-in ends.
    static func requireConsent(
        clientId: String, userId: String, scope: [String], store: any ClientStore & ConsentStore
    ) async throws {
        if try await consentOwed(clientId: clientId, userId: userId, scope: scope, askingAgain: false, store: store) {
            throw OAuthError(.consentRequired, "the person has not consented to this application's scopes; sign in through the hosted page")
        }
    }

    /// The one rule: a third-party application needs the person's consent to every scope of the request (or, when
    /// `askingAgain`, a fresh one); a first-party application never does.
    private static func consentOwed(
        clientId: String, userId: String, scope: [String], askingAgain: Bool, store: any ClientStore & ConsentStore
    ) async throws -> Bool {
        guard let record = try await store.client(id: clientId), ApplicationTrust(record).isThirdParty else { return false }
        if askingAgain { return true }
        return try await store.consent(userId: userId, clientId: clientId)?.covers(scope) != true
    }

    /// The consent page for a login request already stored (the hosted sign-in's).
    static func page(requestId: String) -> String { "/consent?request=" + FormEncoding.encode(requestId) }

    /// Stores `request` as a login request for the consent page to answer for `userId` (an SSO session of that account
    /// answered for it, so none exists yet) and returns the page's address.
    func pageForNewRequest(_ request: AuthorizationRequest, userId: String) async throws -> String {
        let id = Secrets.token()
        let now = clock.now
        var awaiting = request
        awaiting.consentFor = userId
        try await store.insertLoginRequest(
            LoginRequestRecord(id: id, request: awaiting, createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.loginRequest))))
        return Self.page(requestId: id)
    }

    /// Hands the hosted sign-in's login request to the consent page for `userId`, who just signed in: the same id and
    /// times (the page tells an interactive sign-in by them), now answerable there.
    func pageAfterSignIn(_ pending: LoginRequestRecord, userId: String) async throws -> String {
        var awaiting = pending
        awaiting.request.consentFor = userId
        try await store.deleteLoginRequest(id: pending.id)
        try await store.insertLoginRequest(awaiting)
        return Self.page(requestId: pending.id)
    }
}
