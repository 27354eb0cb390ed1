import Foundation
import Hummingbird
import Logging

/// Where identity providers send the browser back (`/federation/{id}/callback`, the redirect URI an operator registers
/// upstream), and the list of an application's providers for SDKs (reachFive's `/api/v1/providers`).
struct FederationController: Sendable {
    let federation: Federation
    /// The hosted sign-in's continuation once a provider answered (`HostedLoginController`).
    let hostedSignIn: any HostedFederatedSignIn
    let store: any ClientStore
    let audit: AuditTrail

    func addRoutes(to group: RouterGroup<LatchkeyRequestContext>) {
        group.get(":provider/callback") { request, context in
            try await self.callback(
                providerId: try context.parameters.require("provider"), params: try Parameters.query(of: request), request: request,
                address: context.clientAddress, logger: context.logger)
        }
        // Sign in with Apple answers with a cross-site form POST, which carries no `SameSite=Lax` cookie: the browser is
        // sent on to the GET callback (a top-level navigation, which does carry it) with the same fields.
        group.post(":provider/callback") { request, context in
            let provider = try context.parameters.require("provider")
            // Only a provider id (a-z 0-9 - _) goes into the Location as it is; anything else is no provider of ours.
            guard !provider.isEmpty, provider == Federation.printable(provider), !provider.contains(".") else {
                return Responses.html(
                    Pages.message(titleKey: "page.expired.title", bodyKey: "federation.expired", locale: request.locale()), status: .badRequest)
            }
            let params = try await Parameters.body(of: request)
            var query: [String] = []
            for (name, values) in params.values.sorted(by: { $0.key < $1.key }) {
                for value in values { query.append(FormEncoding.encode(name) + "=" + FormEncoding.encode(value)) }
            }
            return Responses.redirect(
                to: "/federation/\(provider)/callback" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")), afterPost: true)
        }
    }

    /// `GET /identity/v1/providers?client_id=` (and reachFive's `/api/v1/providers`): the providers the application
    /// offers, for an SDK to show its own buttons.
    func addProviderList(to groups: [RouterGroup<LatchkeyRequestContext>]) {
        for group in groups {
            group.get("providers") { request, _ in try await self.providerList(request) }
        }
    }

    private struct ProviderList: Encodable {
        struct Item: Encodable {
            var provider: String
            var name: String
            var type: String
        }
        var items: [Item]
        var status = "success"
    }

    private func providerList(_ request: Request) async throws -> Response {
        let params = try Parameters.query(of: request)
        guard let clientId = try params.single("client_id"), let client = try await store.client(id: clientId)?.configuration else {
            throw OAuthError(.invalidRequest, "client_id is missing or unknown")
        }
        let items = federation.providers(for: client).map { ProviderList.Item(provider: $0.id, name: $0.name, type: $0.kind.rawValue) }
        return try Responses.json(ProviderList(items: items))
    }

    private func callback(providerId: String, params: Parameters, request: Request, address: String, logger: Logger) async throws -> Response {
        var single: [String: String] = [:]
        for (name, values) in params.values {
            // A parameter sent twice is a request nobody's provider makes: nothing in it is trusted.
            guard values.count == 1 else { return expired(request) }
            single[name] = values[0]
        }
        let pending: Federation.Pending, identity: UpstreamIdentity
        do {
            (pending, identity) = try await federation.complete(
                providerId: providerId, params: single, browserBinding: request.cookieValue(hostedSignIn.federationCookieName), logger: logger)
        } catch let failure as Federation.PendingFailure {
            logger.notice(
                "federated sign-in failed",
                metadata: ["provider": .string(Federation.printable(providerId)), "reason": .string(failure.failure.description)])
            // A link's target is the signed-in account; a sign-in has no account yet.
            await audit.record(
                failure.pending.purpose == .link ? .federatedIdentityLinked : .signInFailed, .failure,
                subject: failure.pending.purpose == .link ? failure.pending.target : nil,
                details: [
                    "method": "federated", "provider": providerId,
                    "reason": failure.failure.auditReason
                ], origin: AuditOrigin(client: failure.pending.clientId, address: address, logger: logger))
            switch failure.pending.purpose {
            case .hostedLogin:
                return try await hostedSignIn.federationFailed(
                    requestId: failure.pending.target, providerId: providerId, failure: failure.failure, request: request, logger: logger)
            case .flow, .link:
                // The app shows `error_user_msg` (reachFive's member), in the browser's language; the description is
                // for its logs.
                let name = federation.providers.first { $0.id == providerId }?.name ?? providerId
                let key = failure.failure.messageKey
                return appRedirect(
                    failure.pending,
                    [
                        ("error", failure.failure.oauthError.code.rawValue), ("error_description", failure.failure.description),
                        ("error_message_key", key), ("error_user_msg", Pages.t(key, request.locale(), ["provider": name]))
                    ], state: single["state"])
            }
        } catch let failure as FederationFailure {
            logger.notice(
                "federation callback refused",
                metadata: ["provider": .string(Federation.printable(providerId)), "reason": .string(failure.description)])
            return expired(request)
        }
        switch pending.purpose {
        case .hostedLogin:
            return try await hostedSignIn.continueFederated(
                requestId: pending.target, identity: identity, request: request, address: address, logger: logger)
        case .flow, .link:
            let state = single["state"] ?? ""
            let code = try await federation.handOff(identity, pending: pending, state: state)
            return appRedirect(pending, [("code", code)], state: state)
        }
    }

    /// Back to the app that started a flow or a link, at the redirect URI it registered, with `state`.
    private func appRedirect(_ pending: Federation.Pending, _ items: [(String, String?)], state: String?) -> Response {
        guard let redirectUri = pending.redirectUri else {
            return Responses.html(Pages.message(titleKey: "page.expired.title", bodyKey: "federation.expired", locale: .en), status: .badRequest)
        }
        return Responses.redirect(to: RedirectURL.appending(items + [("state", state)], to: redirectUri))
    }

    private func expired(_ request: Request) -> Response {
        Responses.html(
            Pages.message(titleKey: "page.expired.title", bodyKey: "federation.expired", locale: request.locale()), status: .badRequest)
    }
}
