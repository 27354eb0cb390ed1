import Foundation

/// The reuse interval of rotated refresh tokens (`refresh_token_reuse_seconds`).
///
/// Strict rotation turns two ordinary events into a sign-out: a refresh whose answer is lost (the server rotated, the
/// phone never heard) and two processes of one app (the app and its widget) presenting the same token at once. Each
/// looks like a replay, and a replay revokes the family. RFC 9700 §4.14.2 allows a server to tolerate such reuse; this
/// tolerates exactly that and no more:
/// - only the token's own application may reuse it (the token grant checks the client first), and a DPoP-bound
///   token only with a proof by its key (checked before the token is spent);
/// - only within `seconds` of its rotation: the retry gets **the family's live token** (kept sealed on its
///   predecessor's row): the successor it was given, or the newest token when the family has rotated on since (a
///   killed process's request, delayed in the network, arriving after the app's next process refreshed twice). Never a
///   second live token, so the family never forks. A thief who replays within the window holds the same token as the
///   app, and the window is counted from the rotation of the token presented, so it cannot be stretched;
/// - after the window, or when the family keeps no live token for reuse (rotated with the interval off, or expired),
///   reuse is a replay as before.
///
/// Peers offer the same tolerance: Amazon Cognito's `RetryGracePeriodSeconds` (0–60 s), Ory Hydra's grace period (at most
/// 5 minutes without a use count, hence the 300 s bound here), Curity's `grace-period`, Auth0's reuse interval. Most keep
/// the rotated token itself valid, so a retry forks the family; handing out the one successor does not. The default,
/// 60 s, outlasts the SDK's request timeout (30 s of silence) and its immediate retry, and an extension's race. FAPI 2.0 applications do not
/// rotate at all (the token grant returns before rotating).
struct RefreshTokenReuse: Sendable {
    /// 0: every reuse is a replay.
    let seconds: Int
    let sealer: SecretSealer

    /// What the rotation of `presented` to `successor` keeps for a retry, or nil when the interval is off.
    func keeping(successor: String, presented: Data, now: Date) throws -> RefreshReuse? {
        guard seconds > 0 else { return nil }
        return RefreshReuse(
            sealedSuccessor: try sealer.seal(successor, context: Self.context(presented)),
            rotatedSince: now.addingTimeInterval(-TimeInterval(seconds)))
    }

    /// The successor a `.reissued` rotation handed back.
    func successor(_ sealed: String, presented: Data) throws -> String {
        try sealer.open(sealed, context: Self.context(presented))
    }

    /// Binds the sealed successor to the row of the token it replaced: copied to another row, it does not open.
    private static func context(_ presented: Data) -> String {
        "refresh-token-successor:" + presented.base64EncodedString()
    }
}
