import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// An app-native flow over the Flow Execution API (`POST /flow/execute`): sign-in, registration, recovery or
/// sign-out, step by step, in the app's own screens.
///
/// Each ``step(_:)`` sends one step and returns the next: start with an empty payload, then send the inputs and the
/// chosen action of each step until `flowStatus` is `.complete` or `.error`. A COMPLETE sign-in or registration's
/// assertion is exchanged (RFC 8693) for a real session (access, refresh and verified ID token) stored in
/// ``session``; a COMPLETE sign-out flow forgets it. The SDK keeps each flow's single-use challenge token between
/// steps, by execution id, so one value can run any number of flows.
///
/// ```swift
/// let flow = AppNativeFlow(client: client, request: EmbeddedFlowRequestConfig(applicationId: "ios-app"))
/// var step = try await flow.step(EmbeddedSignInPayload())
/// step = try await flow.step(EmbeddedSignInPayload(flowId: step.flowId, actionId: "submit",
///                                                  inputs: ["username": "ada", "password": "…"]))
/// ```
///
/// ``FlowRunner`` drives one of these for a UI (a double tap sends one request, inputs are checked before sending,
/// failures become states); the ThunderID-style `signIn(payload:request:sessionId:)` and
/// `signUp(payload:request:sessionId:)` of ``LatchkeyClient`` send one step of one.
public struct AppNativeFlow: Sendable {
    /// The client whose server, configuration and user agent the flow uses.
    let client: LatchkeyClient
    /// The flow's type, application and verbosity.
    public let request: EmbeddedFlowRequestConfig
    /// Where a completed sign-in or registration stores its tokens, and which session a sign-out flow ends.
    public let session: LatchkeySession

    /// A flow of `request.flowType` for `session` (nil: the client's default session); nothing is sent before
    /// ``step(_:)``.
    public init(client: LatchkeyClient, request: EmbeddedFlowRequestConfig, session: LatchkeySession? = nil) {
        self.client = client
        self.request = request
        self.session = session ?? client.session()
    }

    /// Submits one step: an empty payload (no `flowId`) starts a new flow, a payload with the `flowId` of a step
    /// answers that step with its inputs and chosen action.
    ///
    /// A SIGNOUT flow ends the session's server side (the session's access token is sent as proof) and then clears
    /// it locally.
    /// - Returns: the next step (`.promptOnly`), the end (`.complete`, with the signed-in `user` after sign-in or
    ///   registration) or the flow's failure (`.error`, with the mapped error).
    /// - Throws: `.invalidInput` for a `flowId` this client is not running (finished, failed or never started);
    ///   the server's refusals mapped (`FlowErrorMapping`); `.networkError`; `.sdkNotInitialized`.
    public func step(_ payload: EmbeddedSignInPayload) async throws -> EmbeddedFlowResponse {
        try await client.loading { try await runStep(payload) }
    }
}

// MARK: Redirection steps

extension AppNativeFlow {
    /// A redirect URI for a federated action: where the browser comes back from the identity provider.
    public struct RedirectURI: Sendable, Equatable {
        /// The URI.
        public var uri: String
        /// The client's user agent reserved it (the loopback user agent's listener): give it back with
        /// ``AppNativeFlow/release(_:)`` when it will not be used.
        public var isReserved: Bool

        /// A redirect URI; `isReserved` when the user agent holds something for it.
        public init(uri: String, isReserved: Bool) {
            self.uri = uri
            self.isReserved = isReserved
        }
    }

    /// The redirect URI to send with a `FEDERATED` action (the input `redirect_uri`): the one the client's user agent
    /// prepared (the loopback listener's), else the configured `afterSignInUrl`.
    /// - Throws: `.invalidConfiguration` when there is neither; the user agent's errors; `.sdkNotInitialized`.
    public func redirectURI() async throws -> RedirectURI {
        let prepared = try await client.appRedirectURI()
        return RedirectURI(uri: prepared.uri, isReserved: prepared.prepared)
    }

    /// Gives back a redirect URI the user agent reserved and nobody will use (nothing happens for one it did not).
    public func release(_ redirectURI: RedirectURI) {
        if redirectURI.isReserved { client.userAgent.release(redirectURI: redirectURI.uri) }
    }

    /// The configured redirect URI (`afterSignInUrl`); nil when there is none, or before `initialize`.
    public var configuredRedirectURI: String? { (try? client.context())?.config.afterSignInUrl }

    /// Shows a redirection step's page (`EmbeddedFlowResponse.redirectURL`) through the client's user agent and
    /// returns the URL the browser came back to at `redirectURI`. The callback's `state` is the flow's business: the
    /// server checks it with the code, in the step that follows.
    /// - Parameters:
    ///   - page: the identity provider's page.
    ///   - redirectURI: where the browser comes back (sent with the federated action).
    ///   - presentationContext: what the page is presented from (required by the Apple user agent).
    /// - Throws: `.canceled` when the page was closed; the user agent's own errors as they are; a technical error
    ///   (never `.canceled`) when the calling task is cancelled.
    public func showRedirection(_ page: URL, redirectURI: String, presentationContext: PresentationContextProviderBox? = nil) async throws
        -> URL
    {
        try await client.showThroughUserAgent(
            page, AuthorizationPresentation(redirectURI: redirectURI, contextProvider: presentationContext), what: "sign-in")
    }
}

// MARK: The loop

extension AppNativeFlow {
    private func runStep(_ payload: EmbeddedSignInPayload) async throws -> EmbeddedFlowResponse {
        let context = try client.context()
        let sessionId = session.name
        var body: [String: JSONValue] = ["verbose": .bool(request.verbose)]
        // Our server's extension: the language of the flow's messages and labels (ahead of Accept-Language).
        if let language = context.config.languageTags.first { body["locale"] = .string(language) }
        var headers = ["Content-Type": "application/json", "Accept": "application/json"]
        let progress: FlowProgress
        var signOutTokens: TokenSet?
        if let flowId = payload.flowId {
            guard let known = client.flowProgress.withLock({ $0[flowId] }) else {
                throw LatchkeyError(
                    .invalidInput, "flow \(flowId) is not in progress in this client (finished, failed or never started); start a new one")
            }
            progress = known
            body["executionId"] = .string(flowId)
            body["challengeToken"] = .string(known.challengeToken)
        } else {
            let applicationId = request.applicationId ?? context.config.applicationId ?? context.config.clientId
            progress = FlowProgress(
                challengeToken: "", flowType: request.flowType, applicationId: applicationId, sessionId: sessionId,
                verbose: request.verbose, updatedAt: context.clock.deviceNow)
            body["applicationId"] = .string(applicationId)
            body["flowType"] = .string(request.flowType.rawValue)
            if request.flowType == .signOut, let stored = try await context.tokens.tokens(sessionId) {
                // Proof of the session to end: a usable token if it can be had, else the stored one (the server treats
                // a dead token as nothing to end).
                signOutTokens = (try? await context.tokens.usableTokens(sessionId)) ?? stored
            }
            if let provider = context.config.attestationTokenProvider, request.flowType != .registration, request.flowType != .recovery {
                headers["Attestation-Token"] = try await provider()
            }
        }
        if let action = payload.actionId { body["action"] = .string(action) }
        if !payload.inputs.isEmpty { body["inputs"] = .object(payload.inputs.mapValues(JSONValue.string)) }
        let url = context.endpoint("/flow/execute")
        let flowRequest = HTTPRequest(method: "POST", url: url, headers: headers, body: try JSONEncoder().encode(body))
        // Bearer, or DPoP with a proof (and its nonce retry) for a bound session.
        let response: HTTPResponse
        if let signOutTokens {
            response = try await context.sendAuthorized(flowRequest, tokens: signOutTokens)
        } else {
            response = try await context.http.send(flowRequest)
        }
        guard response.status == 200 else {
            if let flowId = payload.flowId, response.status == 400 { _ = client.flowProgress.withLock { $0.removeValue(forKey: flowId) } }
            throw FlowErrorMapping.error(from: response, flowType: progress.flowType)
        }
        guard let wire = try? JSONDecoder().decode(FlowWireResponse.self, from: response.body), let executionId = wire.executionId,
            let status = wire.flowStatus.flatMap(EmbeddedFlowStatus.init(rawValue:))
        else {
            throw LatchkeyError(.serverError, "the flow answer is not a flow response", statusCode: 200)
        }
        var result = await makeResponse(wire, executionId: executionId, status: status, progress: progress)
        switch status {
        case .promptOnly:
            guard let token = wire.challengeToken else { throw LatchkeyError(.serverError, "the flow step has no challenge token") }
            var next = progress
            next.challengeToken = token
            let now = context.clock.deviceNow
            next.updatedAt = now
            client.flowProgress.withLock { flows in
                flows = flows.filter { now.timeIntervalSince($0.value.updatedAt) < 3600 }
                flows[executionId] = next
            }
        case .error:
            // A stale challenge (ICS-1002) leaves the flow alive on the server with the token we still hold.
            if result.error?.serverCode != "ICS-1002" { _ = client.flowProgress.withLock { $0.removeValue(forKey: executionId) } }
        case .complete:
            _ = client.flowProgress.withLock { $0.removeValue(forKey: executionId) }
            if let assertion = wire.assertion {
                result.user = try await establishSession(assertion: assertion, context: context, sessionId: progress.sessionId)
            } else if progress.flowType == .signOut {
                try await context.tokens.clear(progress.sessionId)
            }
        }
        return result
    }

    /// RFC 8693: the assertion (a `jwt` subject token) for access, refresh and ID token; the ID token is verified.
    private func establishSession(assertion: String, context: OAuthClient, sessionId: String?) async throws -> User {
        let response = try await context.tokenRequest(
            .tokenExchange(.init(subjectToken: assertion, subjectTokenType: TokenGrant.jwtTokenType, scope: context.config.scopes)))
        let tokens = try await context.signInTokens(response, nonce: nil, maxAge: nil, expectsIDToken: context.config.scopes.contains("openid"))
        try await context.tokens.replace(tokens, sessionId: sessionId)
        return try await context.user(from: tokens)
    }

    private func makeResponse(_ wire: FlowWireResponse, executionId: String, status: EmbeddedFlowStatus, progress: FlowProgress) async
        -> EmbeddedFlowResponse
    {
        var meta: FlowMeta? = progress.verbose && wire.data?.meta != nil ? await cachedFlowMeta(progress.applicationId) : nil
        // Texts the step carries itself (in the execution's language) win over the cached meta's.
        if let texts = wire.data?.meta?.translations, !texts.isEmpty {
            var merged =
                meta
                ?? FlowMeta(
                    isRegistrationFlowEnabled: false, isRecoveryFlowEnabled: false, application: nil, languages: [],
                    language: wire.data?.meta?.language ?? "", translations: [:])
            for (namespace, entries) in texts { merged.translations[namespace, default: [:]].merge(entries) { $1 } }
            if let language = wire.data?.meta?.language { merged.language = language }
            meta = merged
        }
        let components = (wire.data?.meta?.components ?? []).compactMap { FlowComponentParser.parse($0, meta: meta) }
        let labels = FlowComponentParser.labels(components)
        let inputs = (wire.data?.inputs ?? []).map { i in
            FlowInput(
                ref: i.ref ?? i.identifier, identifier: i.identifier, type: i.type ?? "TEXT_INPUT", required: i.required ?? false,
                options: i.options ?? [], validation: (i.validation ?? []).map { .init(type: $0.type, value: $0.value, message: $0.message) },
                oneTimeUse: i.oneTimeUse ?? false, label: labels[i.ref ?? ""] ?? labels[i.identifier])
        }
        let actions = (wire.data?.actions ?? []).map { FlowAction(ref: $0.ref, type: $0.type, nextNode: $0.nextNode, label: labels[$0.ref]) }
        let error = wire.error.map { e in
            FlowError(
                code: FlowErrorMapping.code(e.code ?? "", flowType: progress.flowType), serverCode: e.code ?? "",
                messageKey: e.message?.key ?? "", message: e.message?.defaultValue ?? e.description?.defaultValue ?? "",
                description: e.description?.defaultValue)
        }
        return EmbeddedFlowResponse(
            flowId: executionId, flowStatus: status, type: wire.type.flatMap(EmbeddedFlowStepType.init(rawValue:)), flowType: progress.flowType,
            inputs: inputs, actions: actions, components: components,
            fieldErrors: (wire.data?.fieldErrors ?? []).map { FlowFieldError(identifier: $0.identifier, message: $0.message) },
            error: error, additionalData: wire.data?.additionalData ?? [:], redirectURL: wire.data?.redirectURL, user: nil)
    }

    /// Meta for label resolution, fetched once per application; a failure only means labels stay unresolved.
    private func cachedFlowMeta(_ applicationId: String) async -> FlowMeta? {
        if let cached = client.flowMetaCache.withLock({ $0[applicationId] }) { return cached }
        return try? await client.getFlowMeta(applicationId: applicationId)
    }
}
