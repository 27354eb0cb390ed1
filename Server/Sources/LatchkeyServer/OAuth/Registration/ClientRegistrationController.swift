import Foundation
import Hummingbird

/// OAuth 2.0 Dynamic Client Registration (RFC 7591) and its management protocol (RFC 7592), at `/oauth2/register`:
///
/// - `POST /oauth2/register`: with an initial access token (an access token with the `registration` scope, of a
///   client acting for itself or of a user with the `admin` role), or without one when the operator opened
///   registration (`client_registration.open`, throttled per address). 201 with the client information, the secret
///   (confidential applications) and the registration access token, shown only here.
/// - `GET`, `PUT`, `DELETE /oauth2/register/{client_id}`: with that application's registration access token, or an
///   initial access token: an administrator's (a user with the `admin` role, or a client token with `scim.admin`)
///   manages every registered application, an automation's (client credentials) only those it registered
///   (`ClientRecord.registeredBy`), so a `registration` token is not worth the applications an administrator made in
///   the console (review 3, R3-6). An unknown application, or one the token may not manage, is 401, like a wrong
///   token (RFC 7592 §2.1).
/// - `POST /oauth2/register/{client_id}/secret` (Latchkey's): a new secret, the current one valid for
///   `grace_period_seconds` more.
///
/// Applications from the configuration file can be read here but not changed: the file is their source, seeded at
/// every start, so a change here would be undone by the next one.
struct ClientRegistrationController: Sendable {
    let registrations: ClientRegistrations
    let resources: ResourceAuthenticator
    let store: any ClientStore
    let admission: Admission
    let freshness: AdministratorFreshness
    let issuerInForce: @Sendable () -> String

    func addRoutes(to mount: OAuthMount) {
        // The standard mount only: reachFive's `/oauth` has no registration endpoint.
        guard !mount.isReachFive else { return }
        let routes = mount.routes
        routes.post("register") { request, context in try await self.register(request, context) }
        mount.refuseMethodsOtherThanPost(at: "register")
        routes.get("register/:client_id") { request, context in try await self.read(request, context) }
        routes.put("register/:client_id") { request, context in try await self.update(request, context) }
        routes.delete("register/:client_id") { request, context in try await self.delete(request, context) }
        routes.post("register/:client_id/secret") { request, context in try await self.rotate(request, context) }
    }

    private func register(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let actor = try await initialAccess(request, context)
        let metadata = try ClientMetadata(json: try await Self.jsonBody(request))
        let outcome = try await registrations.register(metadata, actor: actor, origin: origin(context))
        return try Responses.json(information(outcome), status: .created, noStore: true)
    }

    private func read(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let (record, _) = try await managed(request, context)
        return try Responses.json(ClientInformation(record, registrationClientURI: uri(record)), noStore: true)
    }

    private func update(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let (record, actor) = try await managed(request, context, changing: true)
        let metadata = try ClientMetadata(json: try await Self.jsonBody(request))
        let outcome = try await registrations.update(record, with: metadata, actor: actor, origin: origin(context))
        return try Responses.json(information(outcome), noStore: true)
    }

    private func delete(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let (record, actor) = try await managed(request, context, changing: true)
        try await registrations.delete(record, actor: actor, origin: origin(context))
        return Response(status: .noContent, headers: [.cacheControl: "no-store"])
    }

    private func rotate(_ request: Request, _ context: LatchkeyRequestContext) async throws -> Response {
        let (record, actor) = try await managed(request, context, changing: true)
        let grace = try Self.gracePeriod(try await Self.jsonBody(request))
        let rotated = try await registrations.rotateSecret(record, graceSeconds: grace, actor: actor, origin: origin(context))
        return try Responses.json(rotated, noStore: true)
    }

    // MARK: Authorization

    /// Who may register: an initial access token's holder, or anyone (by address) when registration is open and no
    /// token is sent. Returns the actor for the audit trail.
    private func initialAccess(_ request: Request, _ context: LatchkeyRequestContext) async throws -> String {
        if request.headers[.authorization] == nil, registrations.policy.open {
            try await admission.admitRegistration(address: context.clientAddress)
            return AuditEvent.anonymous
        }
        return try await registrar(request).auditActor
    }

    /// The caller of an access token that may register applications (`ResourceCaller.mayRegisterApplications`).
    /// `changing`: an administrator's personal token needs a recent sign-in to change applications
    /// (`AdministratorFreshness`); reading does not.
    private func registrar(_ request: Request, changing: Bool = true) async throws -> ResourceCaller {
        let caller = try await resources.resourceCaller(request)
        guard caller.mayRegisterApplications else {
            throw OAuthError(
                .insufficientScope,
                "managing applications needs an access token with the registration scope, of a client acting for itself or of an administrator",
                challenge: .bearer)
        }
        if changing { try freshness.check(caller) }
        return caller
    }

    /// The application a management request is about, and who acts: its registration access token's holder (the
    /// application itself) or a registrar. `changing`: applications from the configuration file are refused.
    private func managed(_ request: Request, _ context: LatchkeyRequestContext, changing: Bool = false) async throws -> (ClientRecord, String) {
        guard let clientId = context.parameters.get("client_id"), !clientId.isEmpty, clientId.count <= 256 else {
            throw RegistrationRefusal.unknownClient
        }
        let header = request.headers[.authorization] ?? ""
        let record: ClientRecord?
        do { record = try await store.client(id: clientId) } catch StoreError.invalidInput { record = nil }
        let resolved: (ClientRecord, String)
        if header.lowercased().hasPrefix("bearer "), let record, let expected = record.registrationTokenHash,
            case let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces),
            Secrets.constantTimeEquals(Secrets.digest(token), expected)
        {
            resolved = (record, AuditEvent.clientActor(clientId))
        } else if Self.looksLikeAccessToken(header) {
            let caller = try await registrar(request, changing: changing)
            guard let record, Self.may(caller, manage: record) else { throw RegistrationRefusal.unknownClient }
            resolved = (record, caller.auditActor)
        } else {
            if header.isEmpty { throw OAuthError(.invalidToken, "a registration access token is required", challenge: .bearer) }
            throw RegistrationRefusal.unknownClient
        }
        if changing, resolved.0.origin == .configuration {
            throw OAuthError(
                .invalidRequest,
                "application \(ClientMetadata.printable(clientId)) is configured in the configuration file: change it there (a change here would be undone at the next start)"
            )
        }
        return resolved
    }

    /// Whether a registrar's access token manages `record`: an administrator manages every application; an automation
    /// acting for itself, only the registered applications it registered. Configured applications stay readable by
    /// every registrar, as before (`managed` refuses changing them to everyone).
    private static func may(_ caller: ResourceCaller, manage record: ClientRecord) -> Bool {
        if record.origin == .configuration { return true }
        // A user holding a registrar's token has the admin role (`mayRegisterApplications`); a client needs `scim.admin`.
        if caller.isAdmin || caller.user != nil { return true }
        guard let registrant = record.registeredBy else { return false }
        return registrant == caller.auditActor
    }

    /// A JWT (three dot-separated parts) sent as Bearer or DPoP: an access token; a registration access token is not one.
    private static func looksLikeAccessToken(_ header: String) -> Bool {
        let lowered = header.lowercased()
        guard lowered.hasPrefix("bearer ") || lowered.hasPrefix("dpop ") else { return false }
        return header.split(separator: " ", maxSplits: 1).last?.split(separator: ".", omittingEmptySubsequences: false).count == 3
    }

    // MARK: Bodies and answers

    /// The body of a JSON request (at most `RequestSizeLimits.maxBodyBytes`); 415 for a body not declared JSON, which
    /// a cross-site form could send.
    private static func jsonBody(_ request: Request) async throws -> Data {
        let buffer = try await request.boundedBody()
        guard JSONMediaType.accepts(request, body: buffer) else {
            throw APIError(
                status: .unsupportedMediaType, code: "REG-415", error: "invalid_request", messageKey: "error.userservice.invalid_request_format",
                userMessage: "Invalid request format", technical: "the body must be sent as application/json")
        }
        return Data(buffer: buffer)
    }

    /// `{"grace_period_seconds": N}`, or an empty body (0).
    private static func gracePeriod(_ data: Data) throws -> Int {
        guard !data.isEmpty else { return 0 }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw OAuthError(.invalidRequest, "the body must be a JSON object")
        }
        guard let value = object["grace_period_seconds"] else { return 0 }
        guard let number = value as? NSNumber, type(of: number) != type(of: NSNumber(value: true)),
            let seconds = Int(exactly: number.doubleValue)
        else {
            throw OAuthError(.invalidRequest, "grace_period_seconds must be a whole number of seconds")
        }
        return seconds
    }

    private func information(_ outcome: ClientRegistrations.Outcome) -> ClientInformation {
        var information = ClientInformation(outcome.record, registrationClientURI: uri(outcome.record))
        information.clientSecret = outcome.secret
        information.registrationAccessToken = outcome.registrationToken
        information.trimmed = outcome.trimmed.isEmpty ? nil : outcome.trimmed
        return information
    }

    private func uri(_ record: ClientRecord) -> String {
        let id = record.configuration.clientId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"]))
        return issuerInForce() + "/oauth2/register/" + (id ?? record.configuration.clientId)
    }

    private func origin(_ context: LatchkeyRequestContext) -> AuditOrigin {
        AuditOrigin(address: context.clientAddress, logger: context.logger)
    }
}
