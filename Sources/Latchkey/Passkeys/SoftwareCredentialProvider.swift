import Foundation

/// A `CredentialProvider` without system UI, for Linux, the CLI and tests: passkeys from a `PasskeyAuthenticator`
/// (usually a `SoftwareAuthenticator`), optionally saved passwords, and optionally an Apple ID token from a closure.
///
/// It answers with the first requested type (in the caller's order) that has a credential — what a user picking the
/// first entry of the system sheet would get.
public struct SoftwareCredentialProvider: CredentialProvider {
    /// A saved password (a keychain entry's stand-in).
    public struct SavedPassword: Sendable, Equatable, CustomStringConvertible {
        /// The account identifier (email, phone number or username).
        public var username: String
        /// The password (never printed).
        public var password: String
        /// A saved password.
        public init(username: String, password: String) { self.username = username; self.password = password }
        /// Never shows the password.
        public var description: String { "SavedPassword(\(username))" }
    }

    /// Sign in with Apple's stand-in: given the nonce and scopes, an identity token (and the name on first use).
    public typealias AppleIDTokenSource =
        @Sendable (_ nonce: String, _ scopes: [AppleIDScope]) async throws
        -> (identityToken: String, givenName: String?, familyName: String?)

    /// Passkeys; nil offers none.
    public let authenticator: (any PasskeyAuthenticator)?
    /// Saved passwords; the first one is offered.
    public let passwords: [SavedPassword]
    /// Sign in with Apple stand-in; nil offers none.
    public let appleIDToken: AppleIDTokenSource?

    /// A provider offering what it is given.
    public init(authenticator: (any PasskeyAuthenticator)? = nil, passwords: [SavedPassword] = [], appleIDToken: AppleIDTokenSource? = nil) {
        self.authenticator = authenticator; self.passwords = passwords; self.appleIDToken = appleIDToken
    }

    /// The first requested type with a credential, following the `CredentialProvider` contract.
    ///
    /// `.autoFill` has no keyboard to wait in here: it is an immediate, discoverable passkey assertion (the allow list
    /// dropped, as AutoFill offers any passkey of the relying party), and `.canceled` at once when the authenticator
    /// holds none — so a terminal or a Linux test never waits for a suggestion nobody can tap.
    public func credential(for request: CredentialRequest) async throws -> ProvidedCredential {
        if request.presentation == .autoFill { return try await autoFill(request) }
        for type in request.types {
            try Task.checkCancellation()
            switch type {
            case .Passkey:
                guard let authenticator, let options = request.passkeyOptions else { continue }
                let rpId = options.rpId ?? URLComponents(string: request.origin)?.host ?? ""
                guard await authenticator.hasCredential(rpId: rpId, allowCredentials: options.allowCredentials) else { continue }
                return .passkey(
                    try await authenticator.getAssertion(for: options, origin: request.origin, mode: request.mode, anchor: request.anchor))
            case .Password:
                guard let saved = passwords.first else { continue }
                return .password(username: saved.username, password: saved.password)
            case .SignInWithApple:
                guard let appleIDToken, let nonce = request.appleNonce else { continue }
                let token = try await appleIDToken(nonce, request.appleScopes)
                return .appleID(identityToken: token.identityToken, givenName: token.givenName, familyName: token.familyName)
            }
        }
        switch request.mode {
        case .IfImmediatelyAvailableCredentials:
            throw LatchkeyError(.canceled, "no credential is immediately available")
        case .Always:
            if request.types.contains(.Passkey) { throw LatchkeyError(.passkeyNoCredential, "no passkey, password or Apple ID is available") }
            throw LatchkeyError(.canceled, "no credential is available")
        }
    }

    private func autoFill(_ request: CredentialRequest) async throws -> ProvidedCredential {
        try Task.checkCancellation()
        guard let authenticator, var options = request.passkeyOptions else {
            throw LatchkeyError(.canceled, "no passkey is immediately available for AutoFill")
        }
        options.allowCredentials = []
        let rpId = options.rpId ?? URLComponents(string: request.origin)?.host ?? ""
        guard await authenticator.hasCredential(rpId: rpId, allowCredentials: []) else {
            throw LatchkeyError(.canceled, "no passkey is immediately available for AutoFill")
        }
        return .passkey(
            try await authenticator.getAssertion(
                for: options, origin: request.origin, mode: .IfImmediatelyAvailableCredentials, anchor: request.anchor))
    }
}
