import Foundation
import Logging
import LatchkeyJOSE

/// The reachFive `tkn`: proof that a user just authenticated (password, passkey) for one application, carried by
/// the SDK to `/oauth/authorize`, which turns it into an authorization code. Ours is a short-lived (2 min) RS256 JWT
/// with `token_use: login_ticket`, bound to the application (`aud`), redeemable once (`jti` consumed).
/// A ticket issued while a second factor is still owed (`mfa_pending`) is refused by `/oauth/authorize`; it only
/// opens the step-up.
struct LoginTicketClaims: OwnTokenClaims, Codable, Sendable {
    static let tokenUse = "login_ticket"
    static let jwtType = "login-ticket+jwt"

    var iss: String
    var sub: String
    var aud: String
    var iat: Int
    var exp: Int
    var jti: String
    var tokenUse: String
    var authTime: Int
    var amr: [String]
    var mfaPending: Bool

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, jti, amr
        case tokenUse = "token_use", authTime = "auth_time", mfaPending = "mfa_pending"
    }
}

extension OwnTokens {
    func mintLoginTicket(user: UserRecord, clientId: String, amr: [String], mfaPending: Bool = false) async throws -> String {
        let now = clock.now
        let iat = Int(now.timeIntervalSince1970)
        let claims = LoginTicketClaims(
            iss: issuer, sub: user.id, aud: clientId, iat: iat, exp: iat + lifetimes.loginTicket,
            jti: Secrets.identifier(), tokenUse: LoginTicketClaims.tokenUse, authTime: iat, amr: amr,
            mfaPending: mfaPending)
        return try await signOwnToken(claims)
    }

    /// Verifies and consumes a ticket presented by `clientId`. Errors are `access_denied` (the user must sign in again).
    /// A ticket that still owes a second factor is refused unless `allowMFAPending`; it is checked before the ticket is
    /// consumed, so a refused one is not spent.
    func redeemLoginTicket(_ ticket: String, clientId: String, allowMFAPending: Bool = false, logger: Logger) async throws -> LoginTicketClaims {
        do {
            let claims = try await verifyOwnToken(ticket, as: LoginTicketClaims.self, audience: clientId, consume: false)
            guard allowMFAPending || !claims.mfaPending else { throw OAuthError(.accessDenied, "the login ticket still needs a second factor") }
            try await consumeOwnToken(claims)
            return claims
        } catch let failure as OwnTokenFailure {
            if failure == .used { logger.warning("login ticket replayed", metadata: ["client": .string(clientId)]) }
            let why: String =
                switch failure {
                case .notOurs: "tkn is not a login ticket of this server"
                case .otherAudience: "the login ticket was issued to another application"
                case .expired: "the login ticket has expired"
                case .used: "the login ticket was already used"
                }
            throw OAuthError(.accessDenied, why)
        }
    }
}

extension OwnTokens {
    /// The reachFive answer to a proven first factor, as `SignInCompletion` decided it: a ticket `/oauth/authorize`
    /// redeems when the sign-in is complete; an `mfa_pending` ticket with `mfa_required` when the account's second
    /// factor is owed (only the step-up endpoints take it); a 403 when the application or request needs a second
    /// factor the account does not have.
    func ticketAnswer(_ completion: SignInCompletion, user: UserRecord, clientId: String, amr: [String]) async throws -> TicketBody {
        switch completion {
        case .complete:
            return TicketBody(tkn: try await mintLoginTicket(user: user, clientId: clientId, amr: amr))
        case .secondFactorOwed:
            return TicketBody(tkn: try await mintLoginTicket(user: user, clientId: clientId, amr: amr, mfaPending: true), mfaRequired: true)
        case .refused:
            throw APIError.login(
                .forbidden, LocalizedMessage("login.mfa_not_enrolled"), "the application requires MFA and the user has no second factor")
        }
    }
}
