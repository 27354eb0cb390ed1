import Foundation
@_spi(LatchkeyInternal) import LatchkeyJOSE

/// A flow in progress, as the SDK tracks it between steps.
struct FlowProgress: Sendable {
    var challengeToken: String
    var flowType: EmbeddedFlowType
    var applicationId: String
    var sessionId: String?
    var verbose: Bool
    var updatedAt: Date
}

/// App-native sign-in and sign-up over the Flow Execution API (ThunderID-style). Unlike ThunderID's SDK, a COMPLETE
/// flow's assertion is exchanged (RFC 8693) for a real session — access, refresh and verified ID token — so
/// `getAccessToken`, `getUser`, `isSignedIn` and `signOut` work exactly as after a redirect sign-in.
extension LatchkeyClient {
    /// Submits one step of a sign-in flow. Call it first with an empty payload, then with the inputs and the chosen
    /// action of each step, until `flowStatus` is `.complete` (signed in) or `.error`.
    ///
    /// `request.flowType` may also name RECOVERY or SIGNOUT; a SIGNOUT flow ends the session's server side (the
    /// session's access token is sent as proof) and then clears it locally.
    public func signIn(payload: EmbeddedSignInPayload, request: EmbeddedFlowRequestConfig, sessionId: String? = nil) async throws
        -> EmbeddedFlowResponse
    {
        try await loading { try await runFlowStep(payload, request: request, sessionId: sessionId) }
    }

    /// Submits one step of a registration flow (same loop as `signIn`); a COMPLETE registration signs the new user in.
    public func signUp(payload: EmbeddedSignInPayload? = nil, request: EmbeddedFlowRequestConfig? = nil) async throws -> EmbeddedFlowResponse {
        try await signUp(payload: payload, request: request, sessionId: nil)
    }

    /// As `signUp(payload:request:)`, storing the new session under `sessionId`.
    public func signUp(payload: EmbeddedSignInPayload?, request: EmbeddedFlowRequestConfig?, sessionId: String?) async throws -> EmbeddedFlowResponse
    {
        try await loading {
            try await runFlowStep(
                payload ?? EmbeddedSignInPayload(), request: request ?? EmbeddedFlowRequestConfig(flowType: .registration),
                sessionId: sessionId)
        }
    }

    /// The application's flow metadata (`GET /flow/meta`): which flows are enabled and the texts for labels.
    public func getFlowMeta(applicationId: String? = nil, language: String? = nil) async throws -> FlowMeta {
        let context = try context()
        let id = applicationId ?? context.config.applicationId ?? context.config.clientId
        guard var components = URLComponents(url: context.endpoint("/flow/meta"), resolvingAgainstBaseURL: false) else {
            throw LatchkeyError(.invalidConfiguration, "baseUrl is not a URL")
        }
        components.queryItems =
            [URLQueryItem(name: "type", value: "APP"), URLQueryItem(name: "id", value: id)]
            + (language.map { [URLQueryItem(name: "language", value: $0)] } ?? [])
        guard let url = components.url else { throw LatchkeyError(.invalidConfiguration, "cannot build the flow meta URL") }
        let response = try await context.http.send(HTTPRequest(url: url, headers: ["Accept": "application/json"]))
        guard response.status == 200 else { throw FlowErrorMapping.error(from: response, flowType: nil) }
        guard let wire = try? JSONDecoder().decode(FlowMetaWire.self, from: response.body) else {
            throw LatchkeyError(.serverError, "the flow meta answer is not the expected JSON", statusCode: 200)
        }
        let meta = wire.model
        flowMetaCache.withLock { $0[id] = meta }
        return meta
    }

    // MARK: The loop

    private func runFlowStep(_ payload: EmbeddedSignInPayload, request: EmbeddedFlowRequestConfig, sessionId: String?) async throws
        -> EmbeddedFlowResponse
    {
        let context = try context()
        var body: [String: JSONValue] = ["verbose": .bool(request.verbose)]
        // Our server's extension: the language of the flow's messages and labels (ahead of Accept-Language).
        if let language = context.config.languageTags.first { body["locale"] = .string(language) }
        var headers = ["Content-Type": "application/json", "Accept": "application/json"]
        let progress: FlowProgress
        var signOutTokens: TokenSet?
        if let flowId = payload.flowId {
            guard let known = flowProgress.withLock({ $0[flowId] }) else {
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
            if let flowId = payload.flowId, response.status == 400 { _ = flowProgress.withLock { $0.removeValue(forKey: flowId) } }
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
            flowProgress.withLock { flows in
                flows = flows.filter { now.timeIntervalSince($0.value.updatedAt) < 3600 }
                flows[executionId] = next
            }
        case .error:
            // A stale challenge (ICS-1002) leaves the flow alive on the server with the token we still hold.
            if result.error?.serverCode != "ICS-1002" { _ = flowProgress.withLock { $0.removeValue(forKey: executionId) } }
        case .complete:
            _ = flowProgress.withLock { $0.removeValue(forKey: executionId) }
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
        if let cached = flowMetaCache.withLock({ $0[applicationId] }) { return cached }
        return try? await getFlowMeta(applicationId: applicationId)
    }
}

/// Turns the component JSON into typed components, resolving label templates.
enum FlowComponentParser {
    static func parse(_ value: JSONValue, meta: FlowMeta?) -> FlowComponent? {
        guard case .object(let o) = value, let id = o["id"]?.stringValue, let type = o["type"]?.stringValue else { return nil }
        var children: [FlowComponent] = []
        if case .array(let list)? = o["components"] { children = list.compactMap { parse($0, meta: meta) } }
        let label = o["label"]?.stringValue.map { meta?.resolve($0) ?? $0 }
        return FlowComponent(
            id: id, type: type, category: o["category"]?.stringValue, variant: o["variant"]?.stringValue,
            ref: o["ref"]?.stringValue, label: label, components: children, raw: o)
    }

    /// Labels by component id and by bound identifier, over the whole tree.
    static func labels(_ components: [FlowComponent]) -> [String: String] {
        var out: [String: String] = [:]
        func walk(_ c: FlowComponent) {
            if let label = c.label {
                out[c.id] = label
                if let ref = c.ref { out[ref] = label }
            }
            c.components.forEach(walk)
        }
        components.forEach(walk)
        return out
    }
}
