import Foundation

/// Another identity provider inside an app-native flow (thunderID's federated executors), `FederatedAuthExecutor`:
/// - `start` (property `idp`): the upstream leg begins; the next prompt is a `REDIRECTION` step whose `redirectURL` the
///   app opens in a browser. The provider comes back to the server, which sends the browser on to the app's redirect
///   URI (the request's `redirect_uri` input when it is registered, else the application's first) with a one-time
///   `code` and the `state`.
/// - `finish`: the app submits that `code` and `state`; the verified identity signs in to its account (linked, linked
///   by verified email, or created) and the flow goes on (the account's second factor, then the assertion).
struct FederationExecutors: Sendable {
    let federation: Federation
    let federatedAccounts: FederatedAccounts
    let clock: ServerClock

    func run(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        switch node.properties?["mode"] {
        case "start": try await start(node, &run)
        case "finish": try await finish(&run)
        default: .fail(.internalError)
        }
    }

    private func start(_ node: FlowNode, _ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let id = node.properties?["idp"], let provider = try? federation.provider(id, for: run.client) else {
            return .fail(.badRequest("the identity provider of node \(node.id) is not offered to this application"))
        }
        let redirectUri: String
        if let asked = run.requestInputs["redirect_uri"], !asked.isEmpty {
            guard RedirectURIMatcher.isRegistered(asked, in: run.client.redirectUris) else {
                return .fail(.badRequest("redirect_uri is not registered for the application"))
            }
            redirectUri = asked
        } else if let first = run.client.redirectUris.first(where: Self.isUsableAsIs) {
            redirectUri = first
        } else {
            return .fail(.badRequest("the application has no redirect URI to come back to"))
        }
        do {
            let (url, _) = try await federation.begin(
                provider, purpose: .flow, target: run.executionId, clientId: run.client.clientId, redirectUri: redirectUri)
            run.state.federation = .init(provider: provider.id, redirectURL: url.absoluteString)
            run.state.additionalData = ["idpName": provider.name, "idpId": provider.id]
            return .next
        } catch let failure as FederationFailure {
            run.logger.notice("federated flow step could not start", metadata: ["reason": .string(failure.description)])
            return .retry(Self.flowFailure(failure, provider: provider.name))
        }
    }

    private func finish(_ run: inout FlowRun) async throws -> ExecutorOutcome {
        guard let pending = run.state.federation, let provider = try? federation.provider(pending.provider, for: run.client) else {
            return .fail(.internalError)
        }
        run.state.federation = nil
        do {
            if let error = run.submitted["error"], !error.isEmpty { throw FederationFailure.denied(Federation.printable(error)) }
            let identity = try await federation.collect(
                code: run.submitted["code"] ?? "", state: run.submitted["state"] ?? "", purpose: .flow, target: run.executionId)
            guard identity.provider == provider.id else { throw FederationFailure.unknownResult }
            let user = try await federatedAccounts.signIn(identity, provider: provider, client: run.client, origin: run.auditOrigin)
            run.state.userId = user.id
            run.state.amr = identity.amr
            run.state.authTime = clock.now
            return .next
        } catch let failure as FederationFailure {
            run.logger.notice("federated flow step failed", metadata: ["reason": .string(failure.description)])
            return .retry(Self.flowFailure(failure, provider: provider.name))
        }
    }

    /// A registered redirect URI the browser can be sent to as it is: not a loopback one without a port (RFC 8252
    /// §7.3: it stands for whichever port the app listens on, which only the app knows).
    static func isUsableAsIs(_ uri: String) -> Bool {
        guard let url = URL(string: uri), url.scheme == "http", let host = url.host, LoopbackHost.isLoopback(host) else { return true }
        return url.port != nil
    }

    static func flowFailure(_ failure: FederationFailure, provider: String) -> FlowFailure {
        let code =
            switch failure {
            case .accountDisabled: "FET-1091"
            default: "FET-1020"
            }
        return FlowFailure(
            code: code, LocalizedMessage(key: failure.messageKey, arguments: ["provider": provider], english: failure.description),
            description: failure.description)
    }
}
