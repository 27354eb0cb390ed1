import Foundation
import Logging
import Hummingbird

/// reachFive password sign-in (`POST /identity/v1/password/login` → `{tkn}`; the step-up is in `StepUpRoutes`), the
/// SDK bootstrap (`GET /identity/v1/config`); `/identity/v1/userinfo` is `UserInfoController`'s.
struct ReachFivePasswordController: Sendable {
    let store: any ClientStore
    let clock: ServerClock
    let accounts: Accounts
    let ownTokens: OwnTokens
    let nativeSignIn: NativeSignInPolicy

    func addRoutes(to identity: RouterGroup<LatchkeyRequestContext>) {
        identity.post("password/login") { request, context in try await self.passwordLogin(request, context: context, logger: context.logger) }
        identity.get("config") { request, _ in try await self.identityConfig(request) }
    }

    private func passwordLogin(_ request: Request, context: LatchkeyRequestContext, logger: Logger) async throws -> Response {
        let body = try await ReachFiveBody.read(request)
        guard let client = try await store.client(id: try body.required("client_id"))?.configuration else {
            throw ReachFiveBody.invalid("unknown client_id")
        }
        if let grant = body.string("grant_type"), grant != "password" { throw ReachFiveBody.invalid("grant_type must be password") }
        try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: request.headers[.attestationToken])
        let identifier = (body.string("email") ?? body.string("phone_number") ?? body.string("username") ?? "")
            .trimmingCharacters(in: .whitespaces)
        let password = body.fields["password"]?.stringValue ?? ""
        guard !identifier.isEmpty, !password.isEmpty else {
            throw APIError.login(
                .badRequest, LocalizedMessage("login.missing_fields"),
                "an identifier (email, phone_number or username) and password are required")
        }
        // Unknown identifiers still go through the password check (decoy hash, same answer, same time).
        // An unknown or ambiguous identifier (a username that is another account's email, from before usernames and
        // emails shared a namespace) names no account: the check runs against the decoy.
        let username = try await accounts.account(identifier: identifier)?.username ?? ""
        let outcome = try await accounts.checkPassword(
            username: username, password: password, address: context.clientAddress, signIn: .password, client: client.clientId, logger: logger)
        guard case .accepted(let user) = outcome else {
            // The same key, arguments and wording as the hosted page and the flows (`PasswordCheck.userMessage`).
            let message = outcome.userMessage(now: clock.now) ?? LocalizedMessage("login.invalid_credentials")
            let status: HTTPResponse.Status = if case .throttled = outcome { .tooManyRequests } else { .unauthorized }
            throw APIError.login(status, message, "password sign-in refused: \(message.key)")
        }
        // The same decision as the hosted page and the flows (`SignInCompletion`): a factor counts when it can be
        // asked for (emailed codes need a verified address).
        let completion = try await accounts.completion(of: user, amr: ["pwd"], client: client, multiFactorEssential: false)
        return try Responses.json(
            try await ownTokens.ticketAnswer(completion, user: user, clientId: client.clientId, amr: ["pwd"]), noStore: true)
    }

    /// reachFive `initialize()` bootstrap: the scopes the application may ask for.
    private func identityConfig(_ request: Request) async throws -> Response {
        struct ConfigBody: Encodable { var scope: String; var sms: Bool }
        let params = try Parameters.query(of: request)
        guard let clientId = try params.single("client_id"), let client = try await store.client(id: clientId)?.configuration else {
            throw ReachFiveBody.invalid("unknown client_id")
        }
        return try Responses.json(ConfigBody(scope: client.scopes.joined(separator: " "), sms: false))
    }
}
