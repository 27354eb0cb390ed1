import Foundation
import Logging

/// One grant of the token endpoint (RFC 6749 §4.1.3, §4.4, §6; RFC 8628 §3.4; RFC 8693): from the authenticated client,
/// the request's parameters and the DPoP key it proved, the tokens, or an `OAuthError` the client acts on.
///
/// `TokenController` keeps what every grant shares (client authentication, the grant's admission, DPoP, the answer's
/// headers); each handler holds only the store slice and settings its grant reads, so a rule of one grant has one home
/// and a new grant is a new handler.
protocol GrantHandler: Sendable {
    func tokens(for request: GrantRequest) async throws -> TokenResponse
}

/// A token request once its client is authenticated and allowed the grant.
struct GrantRequest {
    let parameters: Parameters
    let client: ClientConfiguration
    /// The key the request's DPoP proof showed (RFC 9449), nil without a proof.
    let dpop: TokenIssuer.DPoPBinding?
    let origin: AuditOrigin

    var logger: Logger { origin.logger }
}
