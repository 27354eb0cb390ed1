import Foundation

/// Why a federated sign-in (or link) did not go through. Each has a catalog key for the person (`federation.*`, in
/// their language on the hosted page) and a description for the log; neither carries a token, a code or a secret.
enum FederationFailure: Error, Equatable, CustomStringConvertible {
    /// The provider is not configured, or not offered to this application.
    case unknownProvider(String)
    /// The `state` that came back is not one this server issued (forged, replayed or expired).
    case unknownState
    /// The callback came to another browser than the one that started the sign-in.
    case otherBrowser
    /// The provider answered with an error (the person declined, or the provider refused the request).
    case denied(String)
    /// The provider could not be reached, or answered what no provider should.
    case unavailable(String)
    /// The code could not be exchanged for tokens.
    case tokenExchange(String)
    /// The ID token (or the user API's answer) fails a check: the reason names which.
    case invalidIdentity(String)
    /// The `nonce` in the ID token is not the one sent.
    case nonceMismatch
    /// RFC 9207: the `iss` of the authorization response is another provider's.
    case issuerMismatch
    /// An account already uses the provider's email, and this provider may not link to it.
    case emailInUse
    /// No linked or linkable account, and the application does not let new accounts register.
    case registrationClosed
    case accountDisabled
    /// The provider's identity is linked to another account.
    case linkedElsewhere
    /// The account is already linked to another identity at this provider.
    case alreadyLinked
    /// The one-time code the app sent back is unknown, used, expired or another flow's.
    case unknownResult

    var description: String {
        switch self {
        case .unknownProvider(let id): "identity provider \(id) is not configured for this application"
        case .unknownState: "the state is unknown, used or expired"
        case .otherBrowser: "the callback reached another browser than the one that started the sign-in"
        case .denied(let error): "the provider answered \(error)"
        case .unavailable(let why): "the provider is unavailable: \(why)"
        case .tokenExchange(let why): "the code exchange failed: \(why)"
        case .invalidIdentity(let why): "the provider's identity is not acceptable: \(why)"
        case .nonceMismatch: "the ID token's nonce is not the one sent"
        case .issuerMismatch: "the authorization response's iss is not the provider's issuer"
        case .emailInUse: "an account already uses this email and the provider may not link to it"
        case .registrationClosed: "no account is linked and the application's registration is not open"
        case .accountDisabled: "the account is disabled"
        case .linkedElsewhere: "this identity is linked to another account"
        case .alreadyLinked: "the account is already linked to another identity at this provider"
        case .unknownResult: "the federation result code is unknown, used or expired"
        }
    }

    /// The catalog key of what the person is told.
    var messageKey: String {
        switch self {
        case .denied: "federation.denied"
        case .unavailable: "federation.unavailable"
        case .emailInUse: "federation.email_in_use"
        case .registrationClosed: "flows.errors.registration_disabled"
        case .accountDisabled: "login.disabled"
        case .linkedElsewhere: "federation.linked_elsewhere"
        case .alreadyLinked: "federation.already_linked"
        case .unknownState, .otherBrowser, .unknownResult: "federation.expired"
        default: "federation.failed"
        }
    }

    /// The OAuth error an app is sent (an error redirect, a flow's error).
    var oauthError: OAuthError {
        switch self {
        case .unknownProvider: OAuthError(.invalidRequest, description)
        case .unavailable: OAuthError(.temporarilyUnavailable, description)
        default: OAuthError(.accessDenied, description)
        }
    }
}
