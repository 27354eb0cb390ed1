import Foundation

/// What a sign-out did, step by step: the local session is always forgotten, and each step at the provider either
/// happened or says why not. Returned by `LatchkeyClient.signOutReporting(options:sessionId:)`.
///
/// A sign-out that reports success while the provider still honours the tokens is worse than one that fails loudly:
/// the app (and the person) would believe the tokens dead. So nothing here is assumed: a step is `.done` only when
/// the provider confirmed it.
public struct SignOutReport: Sendable, Equatable, CustomStringConvertible {
    /// One step of a sign-out at the provider.
    public enum Step: Sendable, Equatable {
        /// The provider confirmed it.
        case done
        /// There was nothing to do (no such token in the session, or no session at the provider to end).
        case notNeeded(String)
        /// It could not be asked: the provider publishes no endpoint for it. The reason says what stays valid.
        case unsupported(String)
        /// It was asked and did not happen: the provider refused, or could not be reached.
        case failed(String)
        /// It was asked and the answer does not say whether it happened (a page meant for a browser).
        case unconfirmed(String)

        /// Whether the step leaves nothing behind at the provider (done, or nothing to do).
        public var isSettled: Bool {
            switch self {
            case .done, .notNeeded: true
            case .unsupported, .failed, .unconfirmed: false
            }
        }

        /// The step in plain words, for a person.
        public var explanation: String {
            switch self {
            case .done: "done"
            case .notNeeded(let why), .unsupported(let why), .failed(let why), .unconfirmed(let why): why
            }
        }
    }

    /// The refresh token revoked at the provider (RFC 7009).
    public var refreshToken: Step
    /// The access token revoked at the provider (RFC 7009). Providers whose access tokens are self-contained JWTs may
    /// accept the request and still honour the token until it expires; that is theirs to say.
    public var accessToken: Step
    /// The provider's own session (its cookie in the browser) ended through `end_session_endpoint`.
    public var providerSession: Step
    /// Where the app goes next (`afterSignOutUrl`, the return value of ThunderID's `signOut`).
    public var afterSignOutUrl: String

    /// Every step settled: nothing of the session stays valid at the provider, except a provider session the app asked
    /// to keep (`SignOutOptions.ProviderSession.keep`).
    public var isComplete: Bool { refreshToken.isSettled && accessToken.isSettled && providerSession.isSettled }

    public var description: String {
        "refresh token: \(refreshToken.explanation); access token: \(accessToken.explanation); provider session: \(providerSession.explanation)"
    }
}
