import Foundation
import Hummingbird
import Logging
import LatchkeyJOSE

/// The reachFive passkey endpoints (`reachfive-wire.md` §2.3, §2.4, §2.5). Public ones name the application with
/// `client_id`; the ones that change an account take its bearer access token.
struct ReachFivePasskeyController: Sendable {
    let store: any PasskeyStore & ClientStore
    let clock: ServerClock
    let accounts: Accounts
    let passkeys: Passkeys
    let ownTokens: OwnTokens
    let admission: Admission
    let nativeSignIn: NativeSignInPolicy

    /// Sign-up and sign-in on `webauthn`, a public group of `/identity/v1/webauthn`; the signed-in account's passkeys on
    /// `signedIn`, the same path behind a `ResourceAuthenticationMiddleware`.
    func addRoutes(to webauthn: RouterGroup<LatchkeyRequestContext>, signedIn: RouterGroup<ResourceRequestContext>) {
        webauthn.post("signup-options") { request, context in
            try await admission.admitChallenge(address: context.clientAddress)
            try await admission.admitRegistration(address: context.clientAddress)
            return try await self.passkeySignupOptions(request)
        }
        webauthn.post("signup") { request, context in try await self.passkeySignup(request, logger: context.logger) }
        webauthn.post("authentication-options") { request, context in
            try await admission.admitChallenge(address: context.clientAddress)
            return try await self.passkeyAuthenticationOptions(request)
        }
        webauthn.post("authentication") { request, context in
            try await self.passkeyAuthentication(request, address: context.clientAddress, logger: context.logger)
        }
        signedIn.post("registration-options") { request, context in try await self.passkeyRegistrationOptions(request, context.caller) }
        signedIn.post("registration") { request, context in
            try await self.passkeyRegistration(request, context.caller, address: context.clientAddress, logger: context.logger)
        }
        signedIn.get("registration") { _, context in try await self.listPasskeys(context.caller) }
        signedIn.patch("registration/:id") { request, context in try await self.renamePasskey(request, context: context) }
        signedIn.delete("registration/:id") { request, context in
            try await self.deletePasskey(request, context: context, logger: context.logger)
        }
    }

    /// `{friendly_name, options:{public_key:{…}}}` (reachFive `RegistrationOptions`).
    private struct RegistrationOptionsBody: Encodable {
        struct Options: Encodable { var publicKey: PasskeyCreationOptions }
        var friendlyName: String
        var options: Options
    }

    private struct AuthenticationOptionsBody: Encodable { var publicKey: PasskeyRequestOptions }

    private struct DeviceCredentialBody: Encodable {
        var id: String
        var friendlyName: String
        var createdAt: String
        var lastUsedAt: String?
        init(_ p: PasskeyRecord) {
            id = p.id; friendlyName = p.friendlyName
            createdAt = ISO8601DateFormatter().string(from: p.createdAt)
            lastUsedAt = p.lastUsedAt.map { ISO8601DateFormatter().string(from: $0) }
        }
    }

    private func snakeJSON(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: try PasskeyJSON.snakeCase(value))))
    }

    /// The application of `client_id`, when it may start a passkey sign-in or sign-up here (its type and attestation
    /// policy); the ceremony's second step is bound to the challenge this step issues, so checking here covers both.
    /// `hostedOrigin`: the ceremony's origin, when the server's own sign-in page may be asking for a browser
    /// application. That page's passkey button uses these endpoints too, and a `browser` application (refused any
    /// sign-in it starts itself) is served when the origin is the server's own: WebAuthn binds the assertion to that
    /// origin, so only a page at the server's origin can complete it, and its ticket goes back into the page's sign-in.
    private func publicClient(_ body: ReachFiveBody, _ request: Request, hostedOrigin: String? = nil) async throws -> ClientConfiguration {
        let clientId = try body.required("client_id")
        guard let client = try await store.client(id: clientId)?.configuration else {
            throw APIError(
                status: .badRequest, code: "SSE-400", error: "invalid_client", messageKey: "oauth.invalid_client",
                userMessage: "This application is not allowed to sign you in.", technical: "unknown client_id")
        }
        if client.appType == .browser, let hostedOrigin, hostedOrigin == passkeys.ownOrigin { return client }
        try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: request.headers[.attestationToken])
        return client
    }

    /// Runs a ceremony step, answering its failure as a reachFive `ApiError`.
    private func passkeyStep<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let failure as PasskeyFailure { throw failure.apiError }
    }

    // MARK: Sign-up

    private func passkeySignupOptions(_ request: Request) async throws -> Response {
        let body = try await ReachFiveBody.read(request)
        let client = try await publicClient(body, request)
        let origin = try body.required("origin")
        let friendlyName = body.string("friendly_name")
        var profile: [String: String] = [:]
        let accepted = Set(accounts.userSchema.claimNames + ["username"])
        for (name, value) in body.object("profile") ?? [:] where accepted.contains(name) {
            if let text = value.stringValue { profile[name] = text }
        }
        let options = try await passkeyStep {
            try await passkeys.beginPasskeySignup(client: client, origin: origin, friendlyName: friendlyName, profile: profile)
        }
        return try snakeJSON(RegistrationOptionsBody(friendlyName: friendlyName ?? options.user.name, options: .init(publicKey: options)))
    }

    private func passkeySignup(_ request: Request, logger: Logger) async throws -> Response {
        let body = try await ReachFiveBody.read(request)
        let webauthnId = try body.required("webauthn_id")
        guard let credential = body.object("public_key_credential") else { throw ReachFiveBody.invalid("public_key_credential is required") }
        let response = try ReachFiveCredential(credential).registration
        let (user, clientId) = try await passkeyStep {
            try await passkeys.finishPasskeySignup(webauthnId: webauthnId, response: response, logger: logger)
        }
        // A new account's first passkey: one factor, whatever the authenticator did (the account has nothing else).
        let backupEligible = try await store.passkeys(userId: user.id).first?.backupEligible ?? true
        let amr = AuthenticationMethods.passkey(userVerified: false, backupEligible: backupEligible)
        return try Responses.json(TicketBody(tkn: try await ownTokens.mintLoginTicket(user: user, clientId: clientId, amr: amr)), noStore: true)
    }

    // MARK: Sign-in

    private func passkeyAuthenticationOptions(_ request: Request) async throws -> Response {
        let body = try await ReachFiveBody.read(request)
        let origin = try body.required("origin")
        let client = try await publicClient(body, request, hostedOrigin: origin)
        var user: UserRecord?
        if let identifier = body.string("email") ?? body.string("phone_number") ?? body.string("username") {
            user = try await accounts.account(identifier: identifier)
            // Username-first: the ceremony is bound to that account, but the options are the same as for an unknown
            // name (no credential ids; `beginPasskeyAuthentication`), so they tell nothing about who has an account.
        }
        let options = try await passkeyStep { try await passkeys.beginPasskeyAuthentication(client: client, origin: origin, user: user) }
        return try snakeJSON(AuthenticationOptionsBody(publicKey: options))
    }

    private func passkeyAuthentication(_ request: Request, address: String, logger: Logger) async throws -> Response {
        let body = try await ReachFiveBody.read(request)
        let assertion = try ReachFiveCredential(body.fields).assertion
        let result = try await passkeyStep {
            try await passkeys.finishPasskeyAuthentication(
                assertion, origin: AuditOrigin(client: body.string("client_id").map { String($0.prefix(128)) }, address: address, logger: logger))
        }
        // A passkey without user verification is one factor: the account's second factor is owed after it, as after a
        // password (`SignInCompletion`).
        let client = try await store.client(id: result.clientId)?.configuration
        let completion = try await accounts.completion(of: result.user, amr: result.amr, client: client, multiFactorEssential: false)
        return try Responses.json(
            try await ownTokens.ticketAnswer(completion, user: result.user, clientId: result.clientId, amr: result.amr), noStore: true)
    }

    // MARK: The signed-in account's passkeys

    /// The token's user and application. `recently`: adding or removing a passkey changes how the account signs in,
    /// so the token's sign-in must be recent (a leaked token alone must not plant a passkey).
    private func signedInUser(_ caller: ResourceCaller, recently: Bool = false) async throws -> (UserRecord, ClientConfiguration?) {
        guard let user = caller.user else { throw OAuthError(.invalidToken, "the access token does not belong to a user") }
        if recently { try accounts.requireRecentAuthentication(caller.claims) }
        return (user, try await store.client(id: caller.claims.clientId)?.configuration)
    }

    private func passkeyRegistrationOptions(_ request: Request, _ caller: ResourceCaller) async throws -> Response {
        let (user, client) = try await signedInUser(caller, recently: true)
        guard let client else { throw OAuthError(.invalidToken, "the access token's application no longer exists") }
        let body = try await ReachFiveBody.read(request)
        let friendlyName = body.string("friendly_name")
        let options = try await passkeyStep {
            try await passkeys.beginPasskeyRegistration(user: user, client: client, origin: try body.required("origin"), friendlyName: friendlyName)
        }
        return try snakeJSON(RegistrationOptionsBody(friendlyName: friendlyName ?? user.username, options: .init(publicKey: options)))
    }

    private func passkeyRegistration(_ request: Request, _ caller: ResourceCaller, address: String, logger: Logger) async throws -> Response {
        let (user, _) = try await signedInUser(caller, recently: true)
        let body = try await ReachFiveBody.read(request)
        let credential = body.object("public_key_credential") ?? body.fields
        let response = try ReachFiveCredential(credential).registration
        // `how: upgrade`: the app offered the passkey right after a password sign-in (the SDK's `upgradeToPasskey`).
        let how = try body.string("how").map { value in
            guard let how = PasskeyAddition(rawValue: value) else {
                throw ReachFiveBody.invalid("how must be request or upgrade, got \(value)")
            }
            return how
        }
        let added = try await passkeyStep {
            try await passkeys.finishPasskeyRegistration(
                user: user, response: response, friendlyName: body.string("friendly_name"), how: how ?? .request,
                origin: AuditOrigin(client: caller.claims.clientId, address: address, logger: logger))
        }
        // Added: a mail that cannot be sent now is logged, not turned into a failure of what was done.
        await accounts.notifyAccountChange(user, "passkey_added", arguments: ["name": added.friendlyName], locale: request.locale(), logger: logger)
        return Responses.empty(status: .noContent)
    }

    private func listPasskeys(_ caller: ResourceCaller) async throws -> Response {
        let (user, _) = try await signedInUser(caller)
        return try snakeJSON(try await store.passkeys(userId: user.id).map(DeviceCredentialBody.init))
    }

    private func renamePasskey(_ request: Request, context: ResourceRequestContext) async throws -> Response {
        let (user, _) = try await signedInUser(context.caller)
        let id = try context.parameters.require("id")
        let name = try await ReachFiveBody.read(request).required("friendly_name")
        let updated = try await passkeyStep { try await passkeys.renamePasskey(id: id, of: user, to: name) }
        return try snakeJSON(DeviceCredentialBody(updated))
    }

    private func deletePasskey(_ request: Request, context: ResourceRequestContext, logger: Logger) async throws -> Response {
        let (user, _) = try await signedInUser(context.caller, recently: true)
        let id = try context.parameters.require("id")
        let removed = try await passkeyStep {
            try await passkeys.deletePasskey(
                id: id, of: user, origin: AuditOrigin(client: context.caller.claims.clientId, address: context.clientAddress, logger: logger))
        }
        // Removed: a mail that cannot be sent now is logged, not turned into a failure of what was done.
        await accounts.notifyAccountChange(
            user, "passkey_removed", arguments: ["name": removed.friendlyName], locale: request.locale(), logger: logger)
        return Responses.empty(status: .noContent)
    }
}
