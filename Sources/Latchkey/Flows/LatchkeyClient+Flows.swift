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
        try await AppNativeFlow(client: self, request: request, session: session(sessionId)).step(payload)
    }

    /// Submits one step of a registration flow (same loop as `signIn`); a COMPLETE registration signs the new user in.
    public func signUp(payload: EmbeddedSignInPayload? = nil, request: EmbeddedFlowRequestConfig? = nil) async throws -> EmbeddedFlowResponse {
        try await signUp(payload: payload, request: request, sessionId: nil)
    }

    /// As `signUp(payload:request:)`, storing the new session under `sessionId`.
    public func signUp(payload: EmbeddedSignInPayload?, request: EmbeddedFlowRequestConfig?, sessionId: String?) async throws -> EmbeddedFlowResponse
    {
        try await AppNativeFlow(client: self, request: request ?? EmbeddedFlowRequestConfig(flowType: .registration), session: session(sessionId))
            .step(payload ?? EmbeddedSignInPayload())
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
