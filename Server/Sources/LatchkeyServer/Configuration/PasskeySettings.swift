import Foundation

/// The WebAuthn relying party the server acts as.
public struct WebAuthnSettings: Sendable, Equatable {
    /// The RP ID: a registrable domain suffix of the origins (`example.com`). Nil uses the issuer's host, which is
    /// `localhost` on the development instance.
    public var rpId: String?
    /// Shown by authenticators next to the account name.
    public var rpName: String = "Latchkey"
    /// `required`, `preferred` or `discouraged` (WebAuthn §5.8.6). With `required`, responses without the UV flag
    /// are refused.
    public var userVerification: String = "preferred"
    /// DER certificates a `packed` x5c attestation chain must lead to. Empty: attestation certificates are accepted
    /// without a chain check (the default for consumer passkeys, which mostly send `none`).
    public var trustAnchorsDER: [Data] = []
    /// Registration needs an attestation that chains to `trustAnchorsDER`: `none` and self attestation (which prove
    /// nothing about the authenticator model) and untrusted chains are refused. Requires at least one anchor.
    public var attestationRequired: Bool = false
    /// After a password sign-in on the hosted pages, an account without a passkey is offered one before the browser
    /// goes back to the application (`PasskeyOfferGate`). Applications that do not accept passkeys from this server's
    /// own origin are never offered one.
    public var offerAfterPassword: Bool = true
    public init() {}

    func resolvedRpId(issuer: URL) -> String { rpId ?? issuer.host ?? "localhost" }
    var requiresUserVerification: Bool { userVerification == "required" }
}

/// Sign in with Apple: the identity tokens' issuer and the key set that signs them.
public struct AppleSettings: Sendable, Equatable {
    public var issuer: String = "https://appleid.apple.com"
    public var jwksURL: URL = URL(string: "https://appleid.apple.com/auth/keys") ?? URL(fileURLWithPath: "/")
    /// How long fetched keys are trusted before they are fetched again (an unknown `kid` refetches sooner).
    public var keyCacheSeconds: Int = 3600
    public init() {}
}
