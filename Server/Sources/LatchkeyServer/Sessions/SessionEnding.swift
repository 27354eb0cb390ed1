import Foundation

/// Ending a person's sessions and grants, audited: the one way the account API (`/users/me/sessions`), the
/// administration API, the console and the account page do it.
///
/// Ending a session ends it and revokes every grant of it (`SessionStore.endSession`); revoking a grant revokes its
/// refresh tokens and its access tokens at once (`TokenValidator` refuses an access token of a revoked family).
struct SessionEnding: Sendable {
    let store: any SessionStore & TokenStore
    let clock: ServerClock
    let audit: AuditTrail

    /// Who ends them: the person (`actor` is the account) or an administrator, and through what (`via`, audited when
    /// given).
    struct Actor: Sendable {
        var id: String
        var administrator: Bool
        var via: String? = nil
    }

    /// Ends one session of `userId`; false when the account has no such session (another account's, an unknown id and
    /// a pruned one alike, so that an id reveals nothing). Ending an ended session again is done already: true.
    func endSession(_ id: String, of userId: String, by actor: Actor, origin: AuditOrigin) async throws -> Bool {
        guard let session = try await store.session(id: id), session.userId == userId else { return false }
        try await store.endSession(id: session.id, now: clock.now)
        origin.logger.info(
            "session ended",
            metadata: ["user": .string(userId), "session": .string(session.id), "by": .string(actor.administrator ? actor.id : "user")])
        await audit.record(
            .sessionEnded, subject: userId, actor: actor.id,
            details: details(actor, ["sessions": "one", "session": session.id, "administrator": String(actor.administrator)]), origin: origin)
        return true
    }

    /// Ends every session and grant of `userId`, but the session and the grant to keep (the caller's own, when it
    /// signs out everywhere else: `keepingCurrent`, as audited).
    func endAll(
        of userId: String, keepingCurrent keepsCurrent: Bool = false, session keepingSession: String? = nil, family keepingFamily: String? = nil,
        by actor: Actor, origin: AuditOrigin
    ) async throws {
        let reason = actor.administrator ? "ended by an administrator" : "signed out everywhere by the user"
        try await store.revokeUserSessions(
            userId: userId, keepingSession: keepingSession, keepingFamily: keepingFamily, reason: reason, now: clock.now)
        var fields = ["sessions": "all"]
        if actor.administrator {
            fields["administrator"] = "true"
            origin.logger.info(
                "every session of a user ended by an administrator", metadata: ["user": .string(userId), "administrator": .string(actor.id)])
        } else {
            fields["kept_current"] = String(keepsCurrent)
            origin.logger.info("user signed out everywhere", metadata: ["user": .string(userId), "kept_current": .string("\(keepsCurrent)")])
        }
        await audit.record(.sessionEnded, subject: userId, actor: actor.id, details: details(actor, fields), origin: origin)
    }

    /// Revokes one grant of `userId` (its refresh tokens and its access tokens stop working at once); false when the
    /// account has no such grant.
    func revokeGrant(_ id: String, of userId: String, by actor: Actor, origin: AuditOrigin) async throws -> Bool {
        guard let family = try await store.family(id: id), family.userId == userId else { return false }
        try await store.revokeFamily(
            id: family.id, reason: actor.administrator ? "revoked by an administrator" : "revoked by the user", now: clock.now)
        origin.logger.info(
            "grant revoked",
            metadata: ["user": .string(userId), "client": .string(family.clientId), "by": .string(actor.administrator ? actor.id : "user")])
        var applicationOrigin = origin
        applicationOrigin.client = family.clientId  // the application whose grant ended, not the caller's
        await audit.record(
            .tokenRevoked, subject: userId, actor: actor.id,
            details: details(actor, ["via": "grants", "grant": family.id, "administrator": String(actor.administrator)]), origin: applicationOrigin)
        return true
    }

    /// The audit details, with the channel of the change when the actor names one (it replaces the API's own `via`).
    private func details(_ actor: Actor, _ fields: [String: String]) -> [String: String] {
        var fields = fields
        if let via = actor.via { fields["via"] = via }
        return fields
    }
}
