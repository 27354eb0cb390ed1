import Foundation
#if canImport(AuthenticationServices)
import AuthenticationServices
#elseif canImport(AppleFrameworkStandIns)
import AppleFrameworkStandIns
#endif

#if os(tvOS) || os(watchOS)
/// tvOS and watchOS have no `ASWebAuthenticationPresentationContextProviding`: there is no browser sheet to anchor.
/// The type exists so that `WebviewLoginRequest` has one shape everywhere; nothing conforms to it there.
public protocol PresentationContextProviding: AnyObject {}
#else
/// What `webviewLogin` presents its browser sheet from: `ASWebAuthenticationPresentationContextProviding` (on Linux,
/// the stand-in's protocol of that name). A view controller that implements
/// `presentationAnchor(for:) -> ASPresentationAnchor` passes `self`.
public typealias PresentationContextProviding = ASWebAuthenticationPresentationContextProviding
#endif

/// Carries the presentation context provider inside `Sendable` requests.
///
/// Providers are main-actor UI objects (view controllers). The box holds a **weak** reference (a sign-in must not keep
/// a dismissed screen alive) and hands it out only on the main actor, where the Apple user agent uses it; that
/// invariant is what the `@unchecked Sendable` states.
public final class PresentationContextProviderBox: @unchecked Sendable {
    private weak var object: (any PresentationContextProviding)?

    /// Boxes `provider` (weakly).
    public init(_ provider: any PresentationContextProviding) { object = provider }

    /// The provider, while it still exists. Main actor only.
    @MainActor public var provider: (any PresentationContextProviding)? { object }
}

/// ReachFive's `WebviewLoginRequest`: what `webviewLogin` asks for.
public struct WebviewLoginRequest: Sendable {
    /// The `state` to send; nil draws a random one. The callback must return it, or the sign-in fails.
    public var state: String?
    /// The `nonce` to send; nil draws a random one. The ID token must carry it.
    public var nonce: String?
    /// Scopes to request; nil uses the configuration's.
    public var scope: [String]?
    /// Where the browser sheet is presented from (ReachFive's `presentationContextProvider: self`).
    public var presentationContext: PresentationContextProviderBox?
    /// ReachFive's `origin`: a tag that says where the sign-in started (`"app-launch"`, `"checkout"`), sent as the
    /// authorization request's `origin` parameter for the server's records. Nil sends none.
    public var origin: String?
    /// ReachFive's `provider`: the identity provider to sign in with (`"google"`, `"corp"`, or ReachFive's
    /// `"name:variant"`), sent as the authorization request's `provider` parameter. The server then skips its own
    /// login page and sends the browser straight to that provider; the callback comes back as for any other sign-in.
    /// Nil (or empty) shows the server's page, with every provider the application offers.
    /// ``LatchkeyClient/getProviders()`` lists them.
    public var provider: String?
    /// The session the tokens are stored in (multi-session apps); nil is the default session. `webviewLogin` reads
    /// it; the core takes the session as the flow's instead (``AuthorizationCodeFlow/signIn(_:)`` of an
    /// ``AuthorizationCodeFlow`` made for a ``LatchkeySession``), and leaves this nil.
    public var sessionId: String?

    /// A request with ReachFive's labels, in ReachFive's order. `presentationContextProvider` is required by the Apple
    /// user agent (`WebAuthenticationSessionUserAgent`); other user agents ignore it.
    ///
    /// ```swift
    /// let token = try await client.webviewLogin(
    ///     WebviewLoginRequest(scope: ["openid", "email"], presentationContextProvider: self, provider: "google"))
    /// ```
    public init(
        state: String? = nil, nonce: String? = nil, scope: [String]? = nil,
        presentationContextProvider: (any PresentationContextProviding)? = nil, origin: String? = nil, provider: String? = nil,
        sessionId: String? = nil
    ) {
        self.state = state; self.nonce = nonce; self.scope = scope
        self.presentationContext = presentationContextProvider.map(PresentationContextProviderBox.init)
        self.origin = origin; self.provider = provider
        self.sessionId = sessionId
    }
}
