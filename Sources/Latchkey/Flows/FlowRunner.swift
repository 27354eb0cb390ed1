import Foundation

/// Where a `FlowRunner` stands.
public enum FlowRunnerState: Sendable, Equatable {
    case idle
    /// Waiting for the user: render the step (its `error` and `fieldErrors` belong next to the inputs).
    case step(EmbeddedFlowResponse)
    /// Done; after sign-in or sign-up the session is established.
    case completed(EmbeddedFlowResponse)
    /// The flow cannot continue; `restart()` begins a new one.
    case failed(FlowRunnerFailure)
}

/// Why a flow stopped.
public struct FlowRunnerFailure: Sendable, Equatable {
    public var code: LatchkeyError.Code
    public var message: String
    public var serverCode: String?
}

/// A UI-independent driver of the flow loop, for terminal prompts (the CLI) and SwiftUI views alike: it keeps the
/// current step, refuses a second submission while one is in flight (the vendor's double tap turns into ICS-1002 and
/// a frozen form), checks inputs against the step's own rules before sending, keeps the step when the server
/// rejects a stale challenge, and turns every failure into a state instead of a thrown error.
public actor FlowRunner {
    public private(set) var state: FlowRunnerState = .idle
    public private(set) var isSubmitting = false
    private let client: LatchkeyClient
    private let request: EmbeddedFlowRequestConfig
    private let sessionId: String?

    public init(client: LatchkeyClient, request: EmbeddedFlowRequestConfig, sessionId: String? = nil) {
        self.client = client
        self.request = request
        self.sessionId = sessionId
    }

    /// Starts the flow (or starts over).
    @discardableResult
    public func start() async -> FlowRunnerState {
        guard !isSubmitting else { return state }
        return await send(EmbeddedSignInPayload())
    }

    @discardableResult
    public func restart() async -> FlowRunnerState { await start() }

    /// Submits the current step. Inputs failing the step's declared rules are reported as field errors without a
    /// round trip; a submission while another is in flight is ignored.
    @discardableResult
    public func submit(actionId: String?, inputs: [String: String]) async -> FlowRunnerState {
        guard !isSubmitting, case .step(var step) = state else { return state }
        let action = actionId.flatMap { id in step.actions.first { $0.ref == id } }
        if action?.type == nil || action?.type == "SUBMIT" {
            let problems = Self.check(inputs, against: step)
            if !problems.isEmpty {
                step.fieldErrors = problems
                step.error = nil
                state = .step(step)
                return state
            }
        }
        return await send(EmbeddedSignInPayload(flowId: step.flowId, actionId: actionId, inputs: inputs))
    }

    /// The client-side checks the server will repeat: required, SELECT options, and the `validation` rules.
    public static func check(_ inputs: [String: String], against step: EmbeddedFlowResponse) -> [FlowFieldError] {
        var problems: [FlowFieldError] = []
        for input in step.inputs {
            let value = inputs[input.identifier] ?? ""
            if value.isEmpty {
                if input.required { problems.append(.init(identifier: input.identifier, message: "This field is required")) }
                continue
            }
            if !input.options.isEmpty, !input.options.contains(value) {
                problems.append(.init(identifier: input.identifier, message: "Choose one of the options"))
                continue
            }
            if let rule = input.validation.first(where: { !$0.accepts(value) }) {
                problems.append(.init(identifier: input.identifier, message: rule.message ?? "The value is not valid"))
            }
        }
        return problems
    }

    private func send(_ payload: EmbeddedSignInPayload) async -> FlowRunnerState {
        isSubmitting = true
        defer { isSubmitting = false }
        let previous = state
        do {
            let response: EmbeddedFlowResponse = request.flowType == .registration
                ? try await client.signUp(payload: payload, request: request, sessionId: sessionId)
                : try await client.signIn(payload: payload, request: request, sessionId: sessionId)
            switch response.flowStatus {
            case .promptOnly: state = .step(response)
            case .complete: state = .completed(response)
            case .error:
                if response.error?.serverCode == "ICS-1002", case .step(var step) = previous {
                    step.error = response.error  // the step is still open on the server: show it again
                    state = .step(step)
                } else {
                    state = .failed(FlowRunnerFailure(code: response.error?.code ?? .unknownError,
                                                      message: response.error?.message ?? "The flow ended with an error.",
                                                      serverCode: response.error?.serverCode))
                }
            }
        } catch let error as LatchkeyError {
            state = .failed(FlowRunnerFailure(code: error.code, message: error.errorUserMsg ?? error.message, serverCode: error.serverCode))
        } catch {
            state = .failed(FlowRunnerFailure(code: .unknownError, message: String(describing: error), serverCode: nil))
        }
        return state
    }
}
