import Foundation

/// The WebAuthn ceremony seam: whatever creates passkeys and signs challenges.
///
/// - `SoftwareAuthenticator` implements it in plain Swift (Linux, the CLI, tests).
/// - The Apple implementation (LatchkeyApple, to come) will map `createCredential` to
///   `ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: options.rp.id)
///   .createCredentialRegistrationRequest(challenge:name:userID:)` and `getAssertion` to
///   `createCredentialAssertionRequest(challenge:)` with `allowedCredentials`, run through one
///   `ASAuthorizationController` presented on `anchor` (`performRequests(options: .preferImmediatelyAvailableCredentials)`
///   for `.IfImmediatelyAvailableCredentials`). There the system builds `clientDataJSON` itself from the app's
///   associated domain, so `origin` is ignored; `ASAuthorizationError.canceled` becomes `.passkeyCanceled`.
///
/// Every method throws `LatchkeyError`: `.passkeyCanceled` when the user backs out, `.passkeyNoCredential` when no
/// credential matches, `.passkeyNotSupported` when the options ask for something the authenticator cannot do,
/// `.passkeyFailed` otherwise.
public protocol PasskeyAuthenticator: Sendable {
    /// Creates a credential (`navigator.credentials.create`).
    /// - Parameters:
    ///   - options: the relying party's creation options (RP ID, user, challenge, algorithms, exclusions).
    ///   - origin: the WebAuthn origin written into `clientDataJSON` (`scheme://host[:port]`).
    ///   - anchor: where system UI attaches; nil when there is none.
    func createCredential(
        for options: PublicKeyCredentialCreationOptions, origin: String,
        anchor: PresentationAnchorBox?
    ) async throws -> RegistrationCredential

    /// Signs the challenge with a matching credential (`navigator.credentials.get`). An empty allow list asks for any
    /// discoverable credential of the RP ID.
    /// - Parameters:
    ///   - options: the relying party's request options (RP ID, challenge, allowed credentials, user verification).
    ///   - origin: the WebAuthn origin written into `clientDataJSON` (`scheme://host[:port]`).
    ///   - mode: `.IfImmediatelyAvailableCredentials` must fail without UI when nothing matches.
    ///   - anchor: where system UI attaches; nil when there is none.
    func getAssertion(
        for options: PublicKeyCredentialRequestOptions, origin: String, mode: Mode,
        anchor: PresentationAnchorBox?
    ) async throws -> AssertionCredential

    /// Whether `getAssertion` would find a credential right now without further UI. Authenticators that cannot tell
    /// (platform authenticators hide this on purpose) answer true and let `getAssertion` decide.
    func hasCredential(rpId: String, allowCredentials: [PublicKeyCredentialDescriptor]) async -> Bool
}

/// What a native sign-in asks the credential provider for.
public struct CredentialRequest: Sendable {
    /// Credential types acceptable, in the caller's order (the order a sheet shows them).
    public var types: [ModalAuthorization]
    /// What to do when nothing is immediately available.
    public var mode: Mode
    /// The server's passkey request options, when `.Passkey` is among `types`.
    public var passkeyOptions: PublicKeyCredentialRequestOptions?
    /// The WebAuthn origin for `clientDataJSON` (software authenticators; the system ignores it).
    public var origin: String
    /// For `.SignInWithApple`: the value to put in `ASAuthorizationAppleIDRequest.nonce` (the S256 challenge of a
    /// verifier the SDK keeps; Apple's ID token then carries it and the server checks the verifier against it).
    public var appleNonce: String?
    /// For `.SignInWithApple`: the scopes to request.
    public var appleScopes: [AppleIDScope]
    /// Where the system sheet attaches (Apple platforms).
    public var anchor: PresentationAnchorBox?

    /// A request; `appleNonce` is required for `.SignInWithApple` to be offered.
    public init(
        types: [ModalAuthorization], mode: Mode, passkeyOptions: PublicKeyCredentialRequestOptions?, origin: String,
        appleNonce: String? = nil, appleScopes: [AppleIDScope] = [], anchor: PresentationAnchorBox? = nil
    ) {
        self.types = types; self.mode = mode; self.passkeyOptions = passkeyOptions; self.origin = origin; self.appleNonce = appleNonce
        self.appleScopes = appleScopes; self.anchor = anchor
    }
}

/// The one credential the user chose.
public enum ProvidedCredential: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    case passkey(AssertionCredential)
    case password(username: String, password: String)
    /// Apple's `identityToken` (a JWT) and, on first authorisation only, the name.
    case appleID(identityToken: String, givenName: String?, familyName: String?)

    /// Never shows the password or the identity token.
    public var description: String {
        switch self {
        case .passkey(let a): "passkey(\(a.id))"
        case .password: "password(…)"
        case .appleID: "appleID(…)"
        }
    }
    /// Same as `description`: never shows secrets.
    public var debugDescription: String { description }
}

/// The native sign-in seam (seed 002): one call that lets the user pick a passkey, a saved password or Sign in with
/// Apple, and returns that credential. The SDK then runs the matching server exchange.
///
/// The Apple implementation (LatchkeyApple, to come) will build one `ASAuthorizationController` with, in the order of
/// `request.types`, an `ASAuthorizationPasswordProvider` request, an `ASAuthorizationAppleIDProvider` request
/// (`nonce = request.appleNonce`, `requestedScopes` from `appleScopes`) and a platform passkey assertion request
/// (`request.passkeyOptions`), present it on `request.anchor` on the main actor, and map the delegate's answer:
/// `ASPasswordCredential` → `.password`, `ASAuthorizationAppleIDCredential` → `.appleID`,
/// `ASAuthorizationPlatformPublicKeyCredentialAssertion` → `.passkey`; `ASAuthorizationError.canceled` (also
/// "nothing available" with `.preferImmediatelyAvailableCredentials`) → `LatchkeyError(.canceled)`.
///
/// Contract for every implementation:
/// - `.IfImmediatelyAvailableCredentials` with nothing available: throw `LatchkeyError(.canceled)`, show nothing.
/// - `.Always` with nothing available: throw `.passkeyNoCredential` when a passkey was among the types, else `.canceled`.
/// - Never swallow task cancellation: let `CancellationError` through (the SDK reports it as a technical error, not as
///   `canceled`, so apps do not mistake it for "no credential" and restart auto-fill).
public protocol CredentialProvider: Sendable {
    func credential(for request: CredentialRequest) async throws -> ProvidedCredential
}
