import Foundation
import Hummingbird
import Logging

/// The signed-in user's links to other identity providers (`/users/me/identities`): list them, link one (the app opens
/// the provider in a browser and sends back the one-time code that comes to its redirect URI), unlink one. Linking
/// and unlinking change how the account can be entered, so they need a recent sign-in, as changing the email does.
///
/// The link is completed by the app, with the caller's token, not by the browser: a link started for one account and
/// finished in another person's browser (someone sent them the provider's page) can never attach that person's
/// identity to the first account, because the code comes back to the other person's app, with their token.
///
/// The rules, mails and audit events are `IdentityLinkChanges`', shared with the account page.
struct LinkedIdentitiesController: Sendable {
    let store: any ClientStore
    let accounts: Accounts
    let changes: IdentityLinkChanges
    var federation: Federation { changes.federation }

    func addRoutes(to group: RouterGroup<ResourceRequestContext>) {
        group.get("identities") { _, context in
            try await self.list(try context.caller.me(), caller: context.caller)
        }
        group.post("identities/:provider") { request, context in
            try await self.start(
                try context.parameters.require("provider"), request, try context.caller.me(), caller: context.caller)
        }
        group.post("identities/:provider/complete") { request, context in
            try await self.complete(
                try context.parameters.require("provider"), request, try context.caller.me(), caller: context.caller,
                locale: request.locale(), origin: context.auditOrigin)
        }
        group.delete("identities/:provider") { request, context in
            try await self.unlink(
                try context.parameters.require("provider"), try context.caller.me(), caller: context.caller,
                locale: request.locale(), origin: context.auditOrigin)
        }
    }

    private struct IdentitiesBody: Encodable {
        struct Linked: Encodable {
            var provider: String
            var name: String
            var linkedAt: String
            enum CodingKeys: String, CodingKey { case provider, name, linkedAt = "linked_at" }
        }
        struct Available: Encodable {
            var provider: String
            var name: String
        }
        var identities: [Linked]
        var available: [Available]
    }

    private func list(_ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        let links = try await changes.links(of: user.id)
        let formatter = ISO8601DateFormatter()
        return try Responses.json(
            IdentitiesBody(
                identities: links.map { .init(provider: $0.provider, name: $0.name, linkedAt: formatter.string(from: $0.linkedAt)) },
                available: changes.available(for: try await client(of: caller), besides: links).map { .init(provider: $0.id, name: $0.name) }),
            noStore: true)
    }

    private struct StartBody: Decodable {
        var redirectUri: String
        enum CodingKeys: String, CodingKey { case redirectUri = "redirect_uri" }
    }

    private struct Started: Encodable {
        var authorizationURL: String
        var state: String
        enum CodingKeys: String, CodingKey { case authorizationURL = "authorization_url", state }
    }

    /// Starts a link: where the app sends the browser, and the `state` that will come back with the code.
    private func start(_ providerId: String, _ request: Request, _ user: UserRecord, caller: ResourceCaller) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        let body = try await SelfServiceHTTP.body(StartBody.self, request)
        guard let client = try await client(of: caller) else { throw SelfServiceErrors.invalidRequest("the token's application is unknown") }
        guard RedirectURIMatcher.isRegistered(body.redirectUri, in: client.redirectUris) else {
            throw SelfServiceErrors.invalidRequest("redirect_uri is not registered for the application")
        }
        let provider: IdentityProviderConfiguration
        do { provider = try federation.provider(providerId, for: client) } catch { throw failure(error, providerId) }
        do {
            let (url, state) = try await federation.begin(
                provider, purpose: .link, target: user.id, clientId: client.clientId, redirectUri: body.redirectUri)
            return try Responses.json(Started(authorizationURL: url.absoluteString, state: state), noStore: true)
        } catch let failure as FederationFailure {
            throw self.failure(failure, providerId)
        }
    }

    private struct CompleteBody: Decodable {
        var code: String
        var state: String
    }

    private struct LinkedBody: Encodable {
        var provider: String
        var name: String
    }

    /// Links the identity the provider vouched for, collected with the code that came to the app's redirect URI.
    private func complete(
        _ providerId: String, _ request: Request, _ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin
    ) async throws -> Response {
        try accounts.requireRecentAuthentication(caller.claims)
        let body = try await SelfServiceHTTP.body(CompleteBody.self, request)
        do {
            let name = try await changes.complete(
                providerId: providerId, code: body.code, state: body.state, user: user, clientId: caller.claims.clientId, locale: locale,
                origin: origin)
            return try Responses.json(LinkedBody(provider: providerId, name: name), noStore: true)
        } catch let failure as FederationFailure {
            throw self.failure(failure, providerId)
        }
    }

    private func unlink(_ providerId: String, _ user: UserRecord, caller: ResourceCaller, locale: SupportedLocale, origin: AuditOrigin) async throws
        -> Response
    {
        try accounts.requireRecentAuthentication(caller.claims)
        switch try await changes.unlink(providerId: providerId, user: user, locale: locale, origin: origin) {
        case .unlinked:
            return Responses.empty(status: .noContent)
        case .notLinked:
            throw APIError(
                status: .notFound, code: "FED-1004", error: "not_found", messageKey: "error.not_found", userMessage: "Not linked",
                technical: "The account has no link to \(providerId)")
        case .lastCredential:
            throw APIError(
                status: .conflict, code: "FED-1005", error: "invalid_request", messageKey: "federation.last_credential",
                userMessage: "This is the only way to sign in to the account",
                technical: "Unlinking \(providerId) would leave the account without a password, a passkey or another provider")
        }
    }

    private func client(of caller: ResourceCaller) async throws -> ClientConfiguration? {
        try await store.client(id: caller.claims.clientId)?.configuration
    }

    /// A federation failure as the thunderID dialect answers it, the provider's name in its message.
    private func failure(_ error: any Error, _ providerId: String) -> any Error {
        guard let failure = error as? FederationFailure else { return error }
        let arguments = ["provider": changes.name(of: providerId)]
        switch failure {
        case .unknownProvider:
            return SelfServiceErrors.invalidRequest(failure.description)
        case .linkedElsewhere, .alreadyLinked:
            return APIError(
                status: .conflict, code: "FED-1003", error: "invalid_request", messageKey: failure.messageKey,
                userMessage: "This identity is linked to another account", technical: failure.description, arguments: arguments)
        case .unavailable:
            return APIError(
                status: .serviceUnavailable, code: "FED-1002", error: "temporarily_unavailable", messageKey: failure.messageKey,
                userMessage: "The identity provider cannot be reached", technical: failure.description, arguments: arguments)
        default:
            return APIError(
                status: .badRequest, code: "FED-1001", error: "invalid_grant", messageKey: failure.messageKey,
                userMessage: "The link could not be completed", technical: failure.description, arguments: arguments)
        }
    }
}
