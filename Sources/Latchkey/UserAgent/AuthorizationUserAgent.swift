import Foundation

/// Shows an authorization URL to the user and returns the URL the provider redirected back to.
/// Apple platforms use `ASWebAuthenticationSession`; Linux and command-line tools use `LoopbackUserAgent`.
public protocol AuthorizationUserAgent: Sendable {
    /// The redirect URI this agent can receive; nil means "use the configured `afterSignInUrl`".
    func prepareRedirectURI() async throws -> String?
    /// Presents `url` and waits for the callback. Throws `LatchkeyError(.canceled)` when the user gives up.
    func authorize(url: URL) async throws -> URL
    /// Gives back what `prepareRedirectURI()` reserved when the sign-in stops before `authorize(url:)`.
    func release(redirectURI: String)
}

extension AuthorizationUserAgent {
    public func release(redirectURI: String) {}
}
