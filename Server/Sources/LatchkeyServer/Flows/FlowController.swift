import Foundation
import HTTPTypes
import Hummingbird
import Logging
import LatchkeyJOSE

/// The Flow Execution API (`thunderid-wire.md` §2.2): `POST /flow/execute`, `GET /flow/meta`, and in development
/// mode `GET /dev/outbox`.
struct FlowController: Sendable {
    /// Development mode serves `/dev/outbox`.
    let development: Bool
    let lifetimes: TokenLifetimes
    let store: any FlowExecutionStore & OutboxStore & ClientStore
    /// The steps' executors, each group with what it uses.
    let executors: FlowExecutors
    let userSchema: UserSchema
    let clock: ServerClock
    let admission: Admission
    /// The providers a default graph offers.
    let federation: Federation
    /// Validates the bearer access token a flow may carry (a sign-out's), with the issuer in force, read when used.
    let kit: TokenKit
    let resources: ResourceAuthenticator
    let nativeSignIn: NativeSignInPolicy
    let metrics: ServerMetrics

    /// `/flow/execute` and `/flow/meta` on the `/flow` group; in development, `/dev/outbox` on `development`.
    func addRoutes(to flow: RouterGroup<LatchkeyRequestContext>, development: RouterGroup<LatchkeyRequestContext>) {
        flow.post("execute") { request, context in try await self.executeFlow(request, context: context) }
        flow.get("meta") { request, _ in try await self.flowMeta(request) }
        // Registered only in development: the outbox holds every one-time code (recovery, sign-in, step-up).
        if self.development {
            development.get("outbox") { request, _ in try await self.devOutbox(request) }
        }
    }

    private func executeFlow(_ request: Request, context: LatchkeyRequestContext) async throws -> Response {
        let body = try await request.boundedBody()
        guard JSONMediaType.accepts(request, body: body) else {
            var failure = FlowFailure.badRequest("the body must be sent as application/json")
            failure.httpStatus = 415
            throw failure.apiError
        }
        let flowRequest: FlowRequest
        do { flowRequest = try JSONDecoder().decode(FlowRequest.self, from: Data(buffer: body)) } catch {
            throw FlowFailure.badRequest("the body must be a JSON flow request with string inputs").apiError
        }
        let bearer = try await flowAccessToken(request)
        let verbose = flowRequest.verbose ?? false
        // Errors answered over HTTP speak the request's language: its explicit `locale`, else Accept-Language.
        let requestLocale = request.locale(explicit: flowRequest.locale)
        do {
            if let executionId = flowRequest.executionId {
                return try await continueFlow(
                    executionId, flowRequest, verbose: verbose, address: context.clientAddress, bearer: bearer,
                    acceptLanguage: request.headers[.acceptLanguage], logger: context.logger)
            }
            // Each start may store an execution; a registration may hash a password and create an account.
            try await admission.admitStart(address: context.clientAddress)
            if flowRequest.flowType == FlowType.registration.rawValue { try await admission.admitRegistration(address: context.clientAddress) }
            return try await startFlow(
                flowRequest, attestation: request.headers[.attestationToken], verbose: verbose,
                address: context.clientAddress, bearer: bearer, locale: requestLocale, logger: context.logger)
        } catch var error as APIError {
            if error.locale == nil { error.locale = requestLocale }
            throw error
        }
    }

    // MARK: Initiation

    private func startFlow(
        _ body: FlowRequest, attestation: String?, verbose: Bool, address: String, bearer: String?,
        locale: SupportedLocale, logger: Logger
    ) async throws -> Response {
        guard let applicationId = body.applicationId, !applicationId.isEmpty else {
            throw FlowFailure.badRequest("applicationId and flowType are required to start a flow (executionId to continue one)").apiError
        }
        guard let client = try await store.client(id: applicationId)?.configuration else { throw FlowFailure.invalidApplication.apiError }
        guard let type = body.flowType.flatMap(FlowType.init(rawValue:)) else { throw FlowFailure.invalidFlowType.apiError }
        try checkInitiationAllowed(client: client, type: type, attestation: attestation)
        let graph = client.flows[type] ?? DefaultFlows.graph(type, offering: federation.providers(for: client))
        guard let start = graph.start else { throw FlowFailure.internalError.apiError }
        let now = clock.now
        var state = FlowState(applicationId: applicationId, flowType: type, current: start.id)
        state.locale = locale.tag
        let executionId = Self.executionIdentifier()
        var run = FlowRun(
            state: state, submitted: body.inputs ?? [:], executionId: executionId, requestInputs: body.inputs ?? [:], client: client,
            clientAddress: address, bearerToken: bearer, locale: locale, logger: logger)
        let engine = FlowEngine(executors: executors, graph: graph)
        var stop = try await engine.run(from: start.id, &run)
        // Inputs sent with the initiation may satisfy the first prompt: then the flow runs on in this call.
        if case .prompt = stop, !(body.inputs ?? [:]).isEmpty {
            run.submitted = body.inputs ?? [:]
            stop = try await engine.submit(action: body.action, &run)
        }
        let challenge = Secrets.token()
        if case .prompt = stop {
            try await store.insertFlowExecution(
                FlowExecutionRecord(
                    id: executionId, applicationId: applicationId, flowType: type.rawValue, challengeHash: Secrets.digest(challenge),
                    state: try JSONEncoder().encode(run.state), createdAt: now,
                    expiresAt: now.addingTimeInterval(TimeInterval(lifetimes.flowExecution))))
        }
        return try respond(stop, run: run, executionId: executionId, challenge: challenge, verbose: verbose)
    }

    /// thunderID's initiation guards (§2.2), for AUTHENTICATION and SIGNOUT only: browser apps must redirect, and
    /// mobile apps must prove they are the genuine app (platform attestation) unless the server is in development.
    private func checkInitiationAllowed(client: ClientConfiguration, type: FlowType, attestation: String?) throws {
        switch type {
        case .registration:
            if client.registration == .disabled { throw FlowFailure.registrationDisabled.apiError }
        case .recovery:
            if !client.recoveryEnabled { throw FlowFailure.recoveryDisabled.apiError }
        case .authentication, .signOut:
            try nativeSignIn.requireNativeSignInAllowed(client: client, attestation: attestation)
        }
    }

    // MARK: Continuation

    private func continueFlow(
        _ executionId: String, _ body: FlowRequest, verbose: Bool, address: String, bearer: String?,
        acceptLanguage: String?, logger: Logger
    ) async throws -> Response {
        guard let execution = try await store.flowExecution(id: executionId, now: clock.now) else { throw FlowFailure.invalidExecution.apiError }
        // The challenge token is single use: it is swapped for the next one atomically, so a replayed or concurrent
        // submission of the same step loses and gets ICS-1002 while the execution stays as it was.
        let next = Secrets.token()
        guard let presented = body.challengeToken, !presented.isEmpty,
            try await store.swapFlowChallenge(id: executionId, presented: Secrets.digest(presented), next: Secrets.digest(next))
        else {
            // The execution's state is not read for a refused step, so its language is the request's.
            let locale = LocaleNegotiator.negotiate(explicit: body.locale, acceptLanguage: acceptLanguage)
            return try Responses.json(
                FlowResponse(
                    executionId: executionId, flowStatus: "ERROR", data: .init(),
                    error: FlowFailure.invalidChallenge.body(locale)), noStore: true)
        }
        guard let client = try await store.client(id: execution.applicationId)?.configuration,
            let type = FlowType(rawValue: execution.flowType),
            let state = try? JSONDecoder().decode(FlowState.self, from: execution.state)
        else {
            try await store.deleteFlowExecution(id: executionId)
            throw FlowFailure.invalidExecution.apiError
        }
        let graph = client.flows[type] ?? DefaultFlows.graph(type, offering: federation.providers(for: client))
        // An explicit locale in this request switches the execution's language; otherwise it keeps the one it began in.
        let locale = LocaleNegotiator.negotiate(explicit: body.locale ?? state.locale, acceptLanguage: acceptLanguage)
        var run = FlowRun(
            state: state, submitted: body.inputs ?? [:], executionId: executionId, requestInputs: body.inputs ?? [:], client: client,
            clientAddress: address, bearerToken: bearer, locale: locale, logger: logger)
        run.state.locale = locale.tag
        let stop: FlowStop
        do {
            stop = try await FlowEngine(executors: executors, graph: graph).submit(action: body.action, &run)
        } catch {
            try? await store.deleteFlowExecution(id: executionId)  // engine failures end the execution
            throw error
        }
        switch stop {
        case .prompt:
            try await store.updateFlowExecution(
                id: executionId, state: try JSONEncoder().encode(run.state),
                expiresAt: clock.now.addingTimeInterval(TimeInterval(lifetimes.flowExecution)))
        case .complete:
            try await store.deleteFlowExecution(id: executionId)
            // A completion that hands out an assertion signed someone in (a recovery without one did not).
            if run.assertion != nil { metrics.signIn(.flow, .success) }
        case .failed:
            try await store.deleteFlowExecution(id: executionId)
        }
        return try respond(stop, run: run, executionId: executionId, challenge: next, verbose: verbose)
    }

    // MARK: Responses

    private func respond(_ stop: FlowStop, run: FlowRun, executionId: String, challenge: String, verbose: Bool) throws -> Response {
        switch stop {
        case .complete:
            var data = FlowResponse.FlowData()
            if !run.state.additionalData.isEmpty { data.additionalData = run.state.additionalData }
            return try Responses.json(
                FlowResponse(executionId: executionId, flowStatus: "COMPLETE", data: data, assertion: run.assertion),
                noStore: true)
        case .failed(let failure):
            if failure.httpStatus != 200 { throw failure.apiError(run.locale) }
            return try Responses.json(
                FlowResponse(executionId: executionId, flowStatus: "ERROR", data: .init(), error: failure.body(run.locale)),
                noStore: true)
        case .prompt(let node):
            let dynamic = run.state.dynamicInputs ?? []
            let inputs = (node.inputs ?? []) + dynamic
            var data = FlowResponse.FlowData(
                inputs: inputs.map { FlowResponse.FlowInputSpecWire($0, locale: run.locale) },
                actions: (node.actions ?? []).map(FlowResponse.FlowActionWire.init))
            if verbose {
                let components = Self.components(of: node, dynamic: dynamic)
                data.meta = .init(
                    components: components, language: run.locale.tag,
                    translations: flowTranslations(usedBy: components, locale: run.locale))
            }
            if !run.state.additionalData.isEmpty { data.additionalData = run.state.additionalData }
            if !run.fieldErrors.isEmpty { data.fieldErrors = run.fieldErrors }
            // A redirection prompt (a federated step) sends the app to the provider's page.
            let redirection = node.properties?["type"] == "REDIRECTION"
            if redirection { data.redirectURL = run.state.federation?.redirectURL }
            return try Responses.json(
                FlowResponse(
                    executionId: executionId, flowStatus: "INCOMPLETE", type: redirection ? "REDIRECTION" : "VIEW", challengeToken: challenge,
                    data: data, error: run.error?.body(run.locale)), noStore: true)
        }
    }

    /// The prompt's component tree with the placeholder replaced by components for the dynamic inputs.
    static func components(of node: FlowNode, dynamic: [FlowInputSpec]) -> [JSONValue] {
        func expand(_ component: JSONValue) -> [JSONValue] {
            guard case .object(var object) = component else { return [component] }
            if object["type"]?.stringValue == "DYNAMIC_INPUT_PLACEHOLDER" {
                return dynamic.map { input in
                    DefaultFlows.component(
                        input.ref, type: input.type,
                        extra: [
                            "ref": .string(input.identifier), "required": .bool(input.required),
                            "label": .string(DefaultFlows.template("user:attributes.\(input.identifier).label"))
                        ])
                }
            }
            if case .array(let children)? = object["components"] {
                object["components"] = .array(children.flatMap(expand))
            }
            return [.object(object)]
        }
        return (node.components ?? []).flatMap(expand)
    }

    /// Time-ordered (UUIDv7-like: 48-bit milliseconds, then random) so executions sort by creation.
    static func executionIdentifier() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        let millis = UInt64(Date().timeIntervalSince1970 * 1000)
        for i in 0..<6 { bytes[i] = UInt8((millis >> (8 * (5 - UInt64(i)))) & 0xff) }
        var generator = SystemRandomNumberGenerator()
        for i in 6..<16 { bytes[i] = UInt8.random(in: .min ... .max, using: &generator) }
        bytes[6] = (bytes[6] & 0x0f) | 0x70
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }

    // MARK: Meta and development outbox

    private func flowMeta(_ request: Request) async throws -> Response {
        let params = try Parameters.query(of: request)
        let type = try params.single("type") ?? "APP"
        guard type == "APP" else { throw FlowFailure.badRequest("only type=APP is supported").apiError }
        guard let id = try params.single("id"), let client = try await store.client(id: id)?.configuration else {
            throw FlowFailure.invalidApplication.apiError
        }
        // `language` (explicit) wins over Accept-Language; the answer says which table it resolved to.
        let locale = request.locale(explicit: try params.single("language"))
        var translations = FlowTexts.translations(locale, schema: userSchema)
        if let namespace = try params.single("namespace") { translations = translations.filter { $0.key == namespace } }
        let total = translations.values.reduce(0) { $0 + $1.count }
        let meta: [String: JSONValue] = [
            "isRegistrationFlowEnabled": .bool(client.registration != .disabled),
            "isRecoveryFlowEnabled": .bool(client.recoveryEnabled),
            "application": .object(["id": .string(client.clientId), "name": .string(client.name)]),
            "design": .object(["theme": .object([:]), "layout": .object([:])]),
            "i18n": .object([
                "languages": .array(SupportedLocale.allCases.map { .string($0.tag) }), "language": .string(locale.tag),
                "totalResults": .number(Double(total)),
                "translations": .object(translations.mapValues { .object($0.mapValues(JSONValue.string)) })
            ])
        ]
        return try Responses.json(meta, headers: [.contentLanguage: locale.tag])
    }

    /// The `{{ t(ns:key) }}` texts a component tree uses, in `locale`, by namespace.
    func flowTranslations(usedBy components: [JSONValue], locale: SupportedLocale) -> [String: [String: String]] {
        let all = FlowTexts.translations(locale, schema: userSchema)
        var used: [String: [String: String]] = [:]
        func walk(_ value: JSONValue) {
            switch value {
            case .string(let s):
                for reference in FlowTexts.references(in: s) {
                    if let text = all[reference.namespace]?[reference.key] { used[reference.namespace, default: [:]][reference.key] = text }
                }
            case .array(let items): items.forEach(walk)
            case .object(let members): members.values.forEach(walk)
            default: break
            }
        }
        components.forEach(walk)
        return used
    }

    /// Development only: the messages recorded for an address (newest first), so tests and the CLI can read a code.
    private func devOutbox(_ request: Request) async throws -> Response {
        guard let recipient = try Parameters.query(of: request).single("recipient") else {
            throw FlowFailure.badRequest("recipient is required").apiError
        }
        let messages = try await store.outboxMessages(recipient: recipient, limit: 20)
        return try Responses.json(
            [
                "messages": messages.map { m -> [String: JSONValue] in
                    [
                        "id": .string(m.id), "channel": .string(m.channel.rawValue), "recipient": .string(m.recipient), "subject": .string(m.subject),
                        "body": .string(m.body), "code": m.code.map(JSONValue.string) ?? .null,
                        "createdAt": .string(ISO8601DateFormatter().string(from: m.createdAt))
                    ]
                }
            ], noStore: true)
    }
}

extension HTTPField.Name {
    static let attestationToken = Self("Attestation-Token")!
}

/// Verifies a platform attestation (Apple App Attest, Play Integrity) for a mobile application. None ships with the
/// server: deployments that register `mobile` apps provide one (`ServerConfiguration.attestationVerifier`).
public protocol AttestationVerifier: Sendable {
    func verify(_ token: String, applicationId: String) -> Bool
}

extension FlowController {
    /// The access token a flow request presents (the SIGNOUT flow's proof of the session): `Bearer`, or `DPoP` with
    /// a proof by the key the token is bound to (RFC 9449), checked here; a bound token presented as Bearer is refused.
    func flowAccessToken(_ request: Request) async throws -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let lowered = header.lowercased()
        if lowered.hasPrefix("dpop ") {
            let presented = try resources.presentedAccessToken(request, body: nil)
            // An expired or revoked token is "nothing to end", as for Bearer (the flow decides); a live one must come
            // with a proof by its key.
            guard let claims = try? await kit.validator.accessToken(presented.token) else { return nil }
            try await resources.enforceBinding(presented, claims: claims, request: request)
            return presented.token
        }
        guard lowered.hasPrefix("bearer ") else { return nil }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        // Only refusing is decided on the unverified claims; the flow verifies the token itself.
        if (try? CompactJWS(parsing: token).claims(as: AccessTokenClaims.self))?.cnf != nil {
            throw OAuthError(.invalidToken, "the access token is bound to a DPoP key: send it as Authorization: DPoP with a proof", challenge: .dpop)
        }
        return token
    }
}
