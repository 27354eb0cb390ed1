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

    /// Whether `createCredentialConditionally` can ask at all here: the platform's credential manager can add a
    /// passkey to an account it holds a password for without showing anything (iOS 18, macOS 15 and visionOS 2
    /// `requestStyle = .conditional`). Read before any server call, so an OS without it costs no challenge.
    var supportsConditionalRegistration: Bool { get }

    /// Offers the platform's credential manager a passkey for an account the person just signed in to with a password
    /// (conditional registration): it registers one without UI when it holds a matching saved password and agrees,
    /// and declines without UI otherwise. Never shows anything; a decline is `.notOffered`, not an error.
    /// - Parameters:
    ///   - options: the relying party's creation options; `user.name` must be the account name the password is saved
    ///     under (the credential manager matches on it).
    ///   - origin: the WebAuthn origin written into `clientDataJSON` (`scheme://host[:port]`).
    /// - Throws: `LatchkeyError` for what a developer must fix (`.passkeyDomainNotAssociated`); a cancelled task.
    func createCredentialConditionally(for options: PublicKeyCredentialCreationOptions, origin: String) async throws
        -> ConditionalRegistrationResult
}

extension PasskeyAuthenticator {
    /// False: an authenticator that does not say otherwise has no conditional registration (the software one, an
    /// app's own); `LatchkeyClient.upgradeToPasskey` then reports `.notOffered(.unsupportedOS)` without a server call.
    public var supportsConditionalRegistration: Bool { false }

    /// `.notOffered(.unsupportedOS)`, without UI (see `supportsConditionalRegistration`).
    public func createCredentialConditionally(for options: PublicKeyCredentialCreationOptions, origin: String) async throws
        -> ConditionalRegistrationResult
    {
        .notOffered(.unsupportedOS)
    }
}

/// What a conditional registration (`PasskeyAuthenticator.createCredentialConditionally`) came to.
public enum ConditionalRegistrationResult: Sendable {
    /// The credential manager made a passkey; the relying party must still verify and store it.
    case created(RegistrationCredential)
    /// Nothing was made, and nothing was shown.
    case notOffered(PasskeyUpgradeOutcome.Reason)
}

/// What `LatchkeyClient.upgradeToPasskey(authToken:friendlyName:throwsIfUnsupported:)` came to. Both outcomes are
/// silent: nothing was shown to the person either way.
public enum PasskeyUpgradeOutcome: Sendable, Hashable {
    /// Why no passkey was added.
    public enum Reason: Sendable, Hashable {
        /// The OS has no conditional registration (below iOS 18, macOS 15, visionOS 2; tvOS; an app built with an
        /// older SDK; a software authenticator): nothing was asked, not even the server.
        case unsupportedOS
        /// The credential manager declined, as it may without saying why: no saved password for this account name,
        /// the password not used recently, passkeys turned off, another credential manager in charge. It may agree
        /// after a later password sign-in.
        case declined
        /// This device already holds a passkey for the account (one of the account's passkeys the server excluded).
        case alreadyRegistered
        /// Another credential request of this app started (a sign-in sheet, AutoFill) and ended this one.
        case superseded
    }

    /// A passkey was made without UI, the server verified and stored it (audited as `passkey.added`, `how: upgrade`);
    /// the account can sign in with it from now on.
    case registered
    /// No passkey was added.
    case notOffered(Reason)
}

/// How a credential request is put to the person.
public enum CredentialPresentation: Sendable, Hashable {
    /// A sheet the app opens (`ASAuthorizationController.performRequests`): the person picks a credential or closes it.
    case modal
    /// No sheet: the platform offers the relying party's passkeys in the keyboard's suggestions (QuickType bar) of a
    /// text field whose content type is `.username`, for as long as the request runs
    /// (`performAutoFillAssistedRequests`). Passkey assertion only; it waits until the person picks one, or until it is
    /// cancelled or superseded.
    case autoFill
}

/// A credential request that ended because the app started another one: the platform runs one credential request at a
/// time, so a new sign-in sheet, registration or AutoFill request ends the one before it (ReachFive does the same).
/// Found as the `underlying` error of a `LatchkeyError(.canceled)`; `LatchkeyError.isSuperseded` says so.
public struct CredentialRequestSuperseded: Error, Sendable, Equatable, CustomStringConvertible {
    /// A value.
    public init() {}
    /// What happened, for logs.
    public var description: String { "a newer credential request of this app took over" }
}

extension LatchkeyError {
    /// True for the `.canceled` that ends a credential request when the app starts another one (a modal sign-in while
    /// AutoFill waits, for instance): neither the person's doing nor a failure, so nothing to show; the newer request
    /// goes on.
    public var isSuperseded: Bool { code == .canceled && underlying is CredentialRequestSuperseded }
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
    /// A sheet (`.modal`, the default) or the keyboard's suggestions (`.autoFill`: passkeys only, `mode` unused).
    public var presentation: CredentialPresentation

    /// A request; `appleNonce` is required for `.SignInWithApple` to be offered.
    public init(
        types: [ModalAuthorization], mode: Mode, passkeyOptions: PublicKeyCredentialRequestOptions?, origin: String,
        appleNonce: String? = nil, appleScopes: [AppleIDScope] = [], anchor: PresentationAnchorBox? = nil,
        presentation: CredentialPresentation = .modal
    ) {
        self.types = types; self.mode = mode; self.passkeyOptions = passkeyOptions; self.origin = origin; self.appleNonce = appleNonce
        self.appleScopes = appleScopes; self.anchor = anchor; self.presentation = presentation
    }
}

/// The one credential the user chose.
public enum ProvidedCredential: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    case passkey(AssertionCredential)
    case password(username: String, password: String)
    /// Apple's `identityToken` (a JWT), on first authorisation only the name, and the credential's `authorizationCode`:
    /// the server exchanges that code at Apple for the token it revokes when the person deletes their account (it
    /// needs an `apple` provider with the team's key; without one the code is ignored).
    case appleID(identityToken: String, givenName: String?, familyName: String?, authorizationCode: String? = nil)

    /// Never shows the password, the identity token or the authorization code.
    public var description: String {
        switch self {
        case .passkey(let a): "passkey(\(a.id))"
        case .password: "password(…)"
        case .appleID: "appleID(…)"
        }
    }
    /// Same as `description`: never shows secrets.
    public var debugDescription: String { description }
    /// `dump` shows the description alone: no password, identity token or authorization code.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}

/// The native sign-in seam (ReachFive-style): one call that lets the user pick a passkey, a saved password or Sign in
/// with Apple, and returns that credential. The SDK then runs the matching server exchange.
///
/// The Apple implementation (`AuthorizationControllerCredentialProvider`, in LatchkeyApple) builds one
/// `ASAuthorizationController` with, in the order of `request.types`, an `ASAuthorizationPasswordProvider` request, an
/// `ASAuthorizationAppleIDProvider` request (`nonce = request.appleNonce`, `requestedScopes` from `appleScopes`) and a
/// platform passkey assertion request (`request.passkeyOptions`), presents it on `request.anchor` on the main actor,
/// and maps the delegate's answer:
/// `ASPasswordCredential` → `.password`, `ASAuthorizationAppleIDCredential` → `.appleID`,
/// `ASAuthorizationPlatformPublicKeyCredentialAssertion` → `.passkey`; `ASAuthorizationError.canceled` (also
/// "nothing available" with `.preferImmediatelyAvailableCredentials`) → `LatchkeyError(.canceled)`.
///
/// Contract for every implementation:
/// - `presentation == .autoFill`: a passkey assertion only, offered without a sheet (an implementation without
///   AutoFill answers at once from what is immediately available, else throws `.canceled`, as
///   `SoftwareCredentialProvider` does; one on a platform without AutoFill throws `.passkeyNotSupported`).
/// - `.IfImmediatelyAvailableCredentials` with nothing available: throw `LatchkeyError(.canceled)`, show nothing.
/// - `.Always` with nothing available: throw `.passkeyNoCredential` when a passkey was among the types, else `.canceled`.
/// - Never swallow task cancellation: let `CancellationError` through (the SDK reports it as a technical error, not as
///   `canceled`, so apps do not mistake it for "no credential" and restart auto-fill).
public protocol CredentialProvider: Sendable {
    func credential(for request: CredentialRequest) async throws -> ProvidedCredential
}
