import Foundation

/// Shows an authorization URL to the user and returns the URL the provider redirected back to.
/// Apple platforms use `WebAuthenticationSessionUserAgent` (LatchkeyApple, `ASWebAuthenticationSession`); Linux and
/// command-line tools use `LoopbackUserAgent`.
public protocol AuthorizationUserAgent: Sendable {
    /// The redirect URI this agent can receive; nil means "use the configured `afterSignInUrl`".
    func prepareRedirectURI() async throws -> String?
    /// Presents `url` and waits for the callback. Throws `LatchkeyError(.canceled)` when the user gives up.
    func authorize(url: URL) async throws -> URL
    /// As `authorize(url:)`, with what the app gave for presenting it (`webviewLogin` calls this one). The default
    /// ignores `presentation`.
    func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL
    /// Gives back what `prepareRedirectURI()` reserved when the sign-in stops before `authorize(url:)`.
    func release(redirectURI: String)
    /// Whether pages this agent shows share their cookies with the next ones it shows: then the provider's session
    /// (its cookie) lives there, and a sign-out sends this agent to `end_session_endpoint` to end it. The default is
    /// false.
    var keepsProviderSession: Bool { get }
    /// The redirect URI this agent can receive the end of a sign-out at (`authorize(url:presentation:)` waits for it);
    /// nil means "use the configured `afterSignOutUrl`". The default is nil.
    func prepareSignOutRedirectURI() async throws -> String?
}

/// How an authorization page is to be presented and where it returns.
public struct AuthorizationPresentation: Sendable {
    /// The redirect URI of this sign-in: where the page returns (the user agent waits for it).
    public var redirectURI: String
    /// The app's presentation context (`WebviewLoginRequest.presentationContextProvider`), if it gave one.
    public var contextProvider: PresentationContextProviderBox?
    /// The request's `state`: the callback must carry it. Needed because a pushed request's URL (RFC 9126) carries
    /// neither `state` nor `redirect_uri`.
    public var state: String?

    /// A presentation.
    public init(redirectURI: String, contextProvider: PresentationContextProviderBox? = nil, state: String? = nil) {
        self.redirectURI = redirectURI; self.contextProvider = contextProvider; self.state = state
    }
}

extension AuthorizationUserAgent {
    public func release(redirectURI: String) {}
    public var keepsProviderSession: Bool { false }
    public func prepareSignOutRedirectURI() async throws -> String? { nil }
    public func authorize(url: URL, presentation: AuthorizationPresentation) async throws -> URL { try await authorize(url: url) }
}
