import Hummingbird
import Logging

/// What the hosted sign-in does once an identity provider has answered a browser it sent there: all that
/// `FederationController` needs of the hosted sign-in (`HostedLoginController` conforms), so that no controller holds
/// another one.
protocol HostedFederatedSignIn: Sendable {
    /// The cookie that binds a provider's answer to the browser that went to the provider.
    var federationCookieName: String { get }
    /// The provider vouched for `identity`: the sign-in request `requestId` goes on with that account.
    func continueFederated(requestId: String, identity: UpstreamIdentity, request: Request, address: String, logger: Logger) async throws
        -> Response
    /// The provider's answer was refused (`failure`): the sign-in page of `requestId` says why, in the person's words.
    func federationFailed(requestId: String, providerId: String, failure: FederationFailure, request: Request, logger: Logger) async throws
        -> Response
}
