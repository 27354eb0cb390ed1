/// Why a sign-in through another party (an identity provider, Sign in with Apple) was refused, in the three forms the
/// places that report it need: the OAuth error an application is sent, the catalog key of what the person reads, and
/// the audit trail's reason. The reason is a closed set of snake_case names with no value in it (a case's associated
/// text may be a provider's or a client's choosing), one per case, so two refusals never read the same in the trail.
protocol SignInRefusal: Error, CustomStringConvertible {
    var oauthError: OAuthError { get }
    var messageKey: String { get }
    var auditReason: String { get }
}

extension FederationFailure: SignInRefusal {
    var auditReason: String {
        switch self {
        case .unknownProvider: "unknown_provider"
        case .unknownState: "unknown_state"
        case .otherBrowser: "other_browser"
        case .denied: "denied"
        case .unavailable: "unavailable"
        case .tokenExchange: "token_exchange"
        case .invalidIdentity: "invalid_identity"
        case .nonceMismatch: "nonce_mismatch"
        case .issuerMismatch: "issuer_mismatch"
        case .emailInUse: "email_in_use"
        case .registrationClosed: "registration_closed"
        case .accountDisabled: "account_disabled"
        case .linkedElsewhere: "linked_elsewhere"
        case .alreadyLinked: "already_linked"
        case .unknownResult: "unknown_result"
        }
    }
}

extension AppleSignInFailure: SignInRefusal {
    var auditReason: String {
        switch self {
        case .notConfigured: "not_configured"
        case .malformed: "malformed"
        case .keysUnavailable: "keys_unavailable"
        case .badSignature: "bad_signature"
        case .wrongIssuer: "wrong_issuer"
        case .wrongAudience: "wrong_audience"
        case .expired: "expired"
        case .nonceMismatch: "nonce_mismatch"
        case .replayed: "replayed"
        }
    }
}
