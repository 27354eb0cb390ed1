import Foundation
import Logging
import LatchkeyJOSE

/// The JWT a COMPLETE flow returns (thunderID `assertion`): `typ JWT`, RS256 with the server's key, `aud` = the
/// application. Unlike the vendor's, it is marked `token_use: flow_assertion`, is single use (its `jti` is consumed
/// at the token endpoint) and is short-lived: the SDK exchanges it at once (RFC 8693) for a real session. It is not
/// an access token and no API accepts it as one.
struct FlowAssertionClaims: OwnTokenClaims, Codable, Sendable {
    static let tokenUse = "flow_assertion"
    static let jwtType = "flow-assertion+jwt"

    var iss: String
    var sub: String
    var aud: String
    var iat: Int
    var exp: Int
    var jti: String
    var tokenUse: String
    var authTime: Int
    var amr: [String]
    var sid: String
    var flowType: String
    var username: String?
    /// The identity provider of a federated sign-in.
    var idp: String? = nil

    /// The methods with the provider, as sessions and codes keep them (`AuthenticationMethods.providerMarker`).
    var internalAMR: [String] { amr + (idp.map { [AuthenticationMethods.providerMarker + $0] } ?? []) }

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, jti, amr, sid, username, idp
        case tokenUse = "token_use", authTime = "auth_time", flowType = "flow_type"
    }
}

extension OwnTokens {
    /// Opens the sign-in session and signs the assertion for it.
    func mintFlowAssertion(
        user: UserRecord, applicationId: String, flowType: FlowType, amr: [String], authTime: Date, origin: AuditOrigin
    ) async throws -> String {
        let now = clock.now
        let session = try await sessions.open(userId: user.id, authTime: authTime, amr: amr, origin: origin)  // openSession normalizes
        let iat = Int(now.timeIntervalSince1970)
        let claims = FlowAssertionClaims(
            iss: issuer, sub: user.id, aud: applicationId, iat: iat, exp: iat + lifetimes.flowAssertion,
            jti: Secrets.identifier(), tokenUse: FlowAssertionClaims.tokenUse,
            authTime: Int(authTime.timeIntervalSince1970), amr: AuthenticationMethods.published(amr), sid: session.id,
            flowType: flowType.rawValue, username: user.username, idp: AuthenticationMethods.provider(amr))
        return try await signOwnToken(claims)
    }

    /// Verifies a flow assertion presented at the token endpoint by `clientId` and consumes it (single use).
    func redeemFlowAssertion(_ token: String, clientId: String, logger: Logger) async throws -> FlowAssertionClaims {
        do {
            return try await verifyOwnToken(token, as: FlowAssertionClaims.self, audience: clientId, consume: true)
        } catch {
            if error == .used { logger.warning("flow assertion replayed", metadata: ["client": .string(clientId)]) }
            let why: String =
                switch error {
                case .notOurs: "subject_token is not a flow assertion of this server"
                case .otherAudience: "the flow assertion was issued to another application"
                case .expired: "the flow assertion has expired"
                case .used: "the flow assertion was already used"
                }
            throw OAuthError(.invalidGrant, why)
        }
    }
}
