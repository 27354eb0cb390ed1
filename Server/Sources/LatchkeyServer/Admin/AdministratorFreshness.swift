import Foundation

/// An administrative change made with a person's token needs a recent sign-in (`recent_auth_seconds`), like a person's
/// own identifier changes: an administrator's access token can leak (a log, a browser extension, a stolen laptop), and
/// it must not be enough to create accounts, delete them, register applications or lift lockouts hours later. Answered
/// `401 insufficient_user_authentication` with `max_age` (RFC 9470), so the console or script signs in again.
///
/// A client acting for itself (client credentials) has no sign-in to be recent: its token is short-lived and its
/// secret is the operator's. Reading (lists, the audit trail) and ending sessions need no fresh sign-in: reading
/// changes nothing, and ending a stolen session must work at once (see `SessionsController`).
struct AdministratorFreshness: Sendable {
    let window: Int
    let clock: ServerClock

    func check(_ caller: ResourceCaller) throws(RecentAuthenticationRequired) {
        guard case .user = caller.subject else { return }
        try RecentAuthenticationRequired.check(caller.claims, window: window, now: clock.now)
    }
}
