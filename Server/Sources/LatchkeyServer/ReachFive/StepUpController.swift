import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// The step-up token of a password sign-in that owes a second factor: who, for which application, and the
/// authorization request (redirect URI, PKCE challenge, scope) the code will be issued for once the factor is proven.
/// An RS256 JWT (`token_use: mfa_step_up`), 10 minutes, consumed when the code is issued.
struct StepUpClaims: OwnTokenClaims, Codable, Sendable {
    static let tokenUse = "mfa_step_up"
    static let jwtType = "mfa-step-up+jwt"
    var iss: String
    var sub: String
    var aud: String
    var iat: Int
    var exp: Int
    var jti: String
    var tokenUse: String
    var amr: [String]
    var authTime: Int
    var redirectUri: String
    var codeChallenge: String?
    var scope: [String]

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, exp, jti, amr, scope
        case tokenUse = "token_use", authTime = "auth_time", redirectUri = "redirect_uri", codeChallenge = "code_challenge"
    }
}

/// reachFive MFA step-up (`reachfive-wire.md` §2.3): `POST /identity/v1/mfa/stepup` (`tkn` + the PKCE authorization
/// parameters → `{amr, token}`), `POST /identity/v1/passwordless/start` (`{step_up, auth_type: email|otp}` →
/// `{challenge_id}`; email sends a code) and `POST /identity/v1/passwordless/verify` (`{challenge_id,
/// verification_code}` → `{code}`, an authorization code redeemed at the token endpoint with the PKCE verifier).
struct StepUpController: Sendable {
    let lifetimes: TokenLifetimes
    let store: any UserStore & SecondFactorStore & PasskeyStore & ClientStore
    let clock: ServerClock
    let issuerInForce: @Sendable () -> String
    let accounts: Accounts
    let ownTokens: OwnTokens
    let admission: Admission
    let sessions: SignInSessions
    let responses: AuthorizationResponses
    let audit: AuditTrail

    private var issuer: String { issuerInForce() }

    static let stepUpMaxAttempts = SecondFactor.maxAttempts

    func addRoutes(to identity: RouterGroup<LatchkeyRequestContext>) {
        identity.post("mfa/stepup") { request, context in try await self.mfaStepUp(request, logger: context.logger) }
        identity.post("passwordless/start") { request, context in
            try await admission.admitChallenge(address: context.clientAddress)
            return try await self.stepUpStart(request, context: context)
        }
        identity.post("passwordless/verify") { request, context in
            try await self.stepUpVerify(request, address: context.clientAddress, logger: context.logger)
        }
    }

    private func mfaStepUp(_ request: Request, logger: Logger) async throws -> Response {
        struct Body: Encodable { var amr: [String]; var token: String }
        let body = try await ReachFiveBody.read(request)
        let clientId = try body.required("client_id")
        guard let client = try await store.client(id: clientId)?.configuration else { throw ReachFiveBody.invalid("unknown client_id") }
        // A `browser` application's tickets come from the hosted page, which asks for the second step itself.
        guard client.appType != .browser else { throw FlowFailure.directInitiationForbidden.apiError }
        let redirectUri = try body.required("redirect_uri")
        guard RedirectURIMatcher.isRegistered(redirectUri, in: client.redirectUris) else {
            throw ReachFiveBody.invalid("redirect_uri is not registered")
        }
        let challenge = body.string("code_challenge")
        if let challenge {
            guard body.string("code_challenge_method") == "S256", PKCE.isValidChallenge(challenge) else {
                throw ReachFiveBody.invalid("code_challenge must be a base64url SHA-256 value with code_challenge_method S256")
            }
        } else if client.isPublic || client.requirePKCE {
            throw ReachFiveBody.invalid("PKCE is required: send code_challenge with code_challenge_method=S256")
        }
        let scope = body.string("scope")?.split(separator: " ").map(String.init) ?? client.scopes
        guard scope.allSatisfy(client.scopes.contains) else { throw ReachFiveBody.invalid("scope not allowed for this client") }
        let ticket: LoginTicketClaims
        do {
            ticket = try await ownTokens.redeemLoginTicket(try body.required("tkn"), clientId: clientId, allowMFAPending: true, logger: logger)
        } catch let error
            as OAuthError
        {
            throw APIError.login(.unauthorized, LocalizedMessage("login.expired"), error.description)
        }
        guard let user = try await store.user(id: ticket.sub), !user.disabled else {
            throw APIError.login(.unauthorized, LocalizedMessage("login.expired"), "the account can no longer sign in")
        }
        // The step-up is how a native sign-in whose second factor is owed completes (`SignInCompletion`): an account
        // without one it could be asked for, for an application that requires one, has nothing to step up with.
        if case .refused = try await accounts.completion(of: user, amr: ticket.amr, client: client, multiFactorEssential: false) {
            throw APIError.login(
                .forbidden, LocalizedMessage("login.mfa_not_enrolled"), "the application requires MFA and the user has no second factor")
        }
        let factors = try await store.factors(userId: user.id)
        let amr = factors.map { $0.kind == .totp ? "otp" : "email" }
        let now = Int(clock.now.timeIntervalSince1970)
        let claims = StepUpClaims(
            iss: issuer, sub: user.id, aud: clientId, iat: now, exp: now + lifetimes.oneTimeCode,
            jti: Secrets.identifier(), tokenUse: StepUpClaims.tokenUse, amr: ticket.amr, authTime: ticket.authTime,
            redirectUri: redirectUri, codeChallenge: challenge, scope: scope)
        return try Responses.json(Body(amr: amr, token: try await ownTokens.signOwnToken(claims)), noStore: true)
    }

    /// Verifies a step-up token (signature, issuer, use, expiry); it is consumed only when the code is issued.
    private func stepUpClaims(_ token: String) async throws -> StepUpClaims {
        do { return try await ownTokens.verifyOwnToken(token, as: StepUpClaims.self, audience: nil, consume: false) } catch {
            throw APIError.login(.unauthorized, LocalizedMessage("login.expired"), "the step-up token is invalid or expired (\(error))")
        }
    }

    private func stepUpStart(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        struct Body: Encodable {
            var challengeId: String
            enum CodingKeys: String, CodingKey { case challengeId = "challenge_id" }
        }
        let body = try await ReachFiveBody.read(request)
        let stepUpToken = try body.required("step_up")
        let claims = try await stepUpClaims(stepUpToken)
        guard let user = try await store.user(id: claims.sub), !user.disabled else {
            throw ReachFiveBody.invalid("the account can no longer sign in")
        }
        // A locked account is not sent codes (nor given a challenge) it could not use.
        if let wait = try await accounts.codeLockout(CodeBudget.secondFactor(userId: user.id)) {
            throw APIError.login(.tooManyRequests, .codesLocked(seconds: wait), "too many wrong codes for this account; retry after \(wait) s")
        }
        let kinds = Set(try await store.factors(userId: user.id).map(\.kind))
        let kind = body.string("auth_type") ?? (kinds.contains(.totp) ? "otp" : "email")
        let now = clock.now
        var emailCode: String?
        switch kind {
        case "otp" where kinds.contains(.totp):
            break  // the authenticator app computes the code
        case "email" where kinds.contains(.emailOTP):  // never a weaker factor than the account enrolled
            guard Accounts.verifiedEmail(of: user) != nil else { throw ReachFiveBody.invalid("the account has no verified email address") }
            emailCode = SecondFactor.newCode()
        default:
            throw ReachFiveBody.invalid("auth_type must be one of the account's factors (\(kinds.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        // One challenge per step-up token, living as long as the token: starting again replaces it (a new email
        // code) but keeps the attempts spent, and an exhausted token cannot start over. Only the token's digest and
        // its verified claims are stored, never the bearer token itself. Stored before the email is sent, so an
        // exhausted token sends nothing.
        let id = Secrets.identifier()
        let attempts = try await store.insertStepUpChallenge(
            StepUpChallengeRecord(
                id: id, stepUpHash: Secrets.digest(stepUpToken), claims: try String(decoding: JSONEncoder().encode(claims), as: UTF8.self),
                kind: kind, codeDigest: emailCode.map(accounts.codeDigest) ?? Data(), attempts: 0,
                expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp))), now: now)
        if attempts >= Self.stepUpMaxAttempts {
            throw APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.otp_attempts"), "too many wrong codes; sign in again")
        }
        if let emailCode {
            let clientName = try await store.client(id: claims.aud)?.configuration.name ?? claims.aud
            _ = try await accounts.sendSignInCode(to: user, appName: clientName, locale: request.locale(), code: emailCode)
        }
        return try Responses.json(Body(challengeId: id), noStore: true)
    }

    private func stepUpVerify(_ request: Request, address: String, logger: Logger) async throws -> Response {
        struct Body: Encodable { var code: String }
        let body = try await ReachFiveBody.read(request)
        let id = try body.required("challenge_id")
        let invalid = APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.invalid_otp"), "the verification code is wrong")
        guard let challenge = try await store.stepUpChallenge(id: id), challenge.expiresAt > clock.now,
            let claims = try? JSONDecoder().decode(StepUpClaims.self, from: Data(challenge.claims.utf8)),
            TimeInterval(claims.exp) > clock.now.timeIntervalSince1970
        else {
            throw APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.otp_expired"), "the challenge is unknown, used or expired")
        }
        guard let user = try await store.user(id: claims.sub), !user.disabled else {
            throw ReachFiveBody.invalid("the account can no longer sign in")
        }
        // Both budgets are spent before the code is checked: the challenge's own five attempts, and the account's
        // second-factor budget shared with flows and every other challenge.
        guard let attempt = try await store.reserveStepUpAttempt(id: id, maxAttempts: Self.stepUpMaxAttempts) else {
            throw APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.otp_attempts"), "too many wrong codes; sign in again")
        }
        let budget = CodeBudget.secondFactor(userId: user.id)
        if let wait = try await accounts.reserveCodeAttempt(budget) {
            throw APIError.login(.tooManyRequests, .codesLocked(seconds: wait), "too many wrong codes for this account; retry after \(wait) s")
        }
        // The six-digit code of the challenge's kind, or one of the account's recovery codes.
        let proof = try await accounts.proveSecondFactor(
            user, kind: challenge.kind == "otp" ? .totp : .email, answer: body.string("verification_code") ?? "",
            emailCodeDigest: challenge.codeDigest)
        guard let proof else {
            await audit.record(
                .signInFailed, .failure, subject: user.id,
                details: ["method": challenge.kind == "otp" ? "totp" : "email", "reason": "invalid_code", "via": "step_up"],
                origin: AuditOrigin(client: claims.aud, address: address, logger: logger))
            if attempt < Self.stepUpMaxAttempts { throw invalid }
            throw APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.otp_attempts"), "too many wrong codes; sign in again")
        }
        try await accounts.codeAccepted(budget)
        // Single use twice over: the challenge row, and the step-up token's jti (a second challenge of the same
        // step-up cannot mint a second code).
        let completed = APIError.login(.badRequest, LocalizedMessage("flows.executor.errors.otp_expired"), "the step-up was already completed")
        // A recovery code is announced whether or not this request wins: it was spent all the same.
        let taken = try await store.takeStepUpChallenge(id: id)
        let consumed = taken ? ((try? await ownTokens.consumeOwnToken(claims)) != nil) : false
        await accounts.announce(
            proof, of: user, locale: request.locale(), origin: AuditOrigin(client: claims.aud, address: address, logger: logger), via: "step_up")
        guard taken, consumed else { throw completed }
        let session = try await sessions.open(
            userId: user.id, authTime: Date(timeIntervalSince1970: TimeInterval(claims.authTime)),
            amr: AuthenticationMethods.withSecondFactor(claims.amr),
            origin: AuditOrigin(client: claims.aud, address: address, logger: logger))
        let authRequest = AuthorizationRequest(
            clientId: claims.aud, redirectUri: claims.redirectUri, scope: claims.scope, state: nil, nonce: nil,
            codeChallenge: claims.codeChallenge, loginHint: nil, uiLocales: nil, maxAge: nil, prompt: [])
        return try Responses.json(Body(code: try await responses.mintAuthorizationCode(authRequest, user: user, session: session)), noStore: true)
    }
}
